import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension RetryBudget {
    /// The bucket's numbers.
    public struct Configuration: Sendable, Equatable {
        /// The AWS SDKs' standard mode: 500 tokens, 5 per retry, 10 per retry after a timeout, 1 back per success.
        public static let `default` = Configuration(
            checkedInitialTokens: 500, maximumTokens: 500, retryCost: 5, timeoutRetryCost: 10, throttlingRetryCost: 5,
            successReward: 1)

        /// The AWS SDKs' retry behavior 2.1 ("new retries 2026", their default since November 2026): 500 tokens, 14
        /// per retry (after a timeout too), 5 per retry after a 429, 1 back per success; pair it with
        /// ``RetryPolicy/awsRetries2026(using:)``.
        ///
        /// A throttled host is retried cheaply and slowly (the policy's delays after a 429 are drawn under 1 s, 2 s,
        /// … rather than 50 ms, 100 ms, …), other failures dearly: 35 retries after 5xx or network errors empty a
        /// host's bucket, against 100 in the standard mode.
        public static let awsRetries2026 = Configuration(
            checkedInitialTokens: 500, maximumTokens: 500, retryCost: 14, timeoutRetryCost: 14, throttlingRetryCost: 5,
            successReward: 1)

        /// The tokens a host starts with; `500` by default.
        public let initialTokens: Int
        /// The most tokens a host can hold; `500` by default.
        public let maximumTokens: Int
        /// What a retry costs; `5` by default.
        public let retryCost: Int
        /// What a retry after a timeout costs; `10` by default.
        public let timeoutRetryCost: Int
        /// What a retry after a 429 Too Many Requests costs; ``retryCost`` by default.
        public let throttlingRetryCost: Int
        /// What a success that needed no retry gives back; `1` by default.
        public let successReward: Int

        /// Creates a configuration from numbers written in code; an invalid one traps.
        ///
        /// An invalid number is a programming error; the trap's message names it, for example
        /// `RetryBudget.Configuration.retryCost must be at least 1, got 0`. For numbers that arrive at run time, use
        /// ``validated(initialTokens:maximumTokens:retryCost:timeoutRetryCost:successReward:throttlingRetryCost:)``,
        /// which throws instead.
        ///
        /// - Parameters:
        ///   - initialTokens: The tokens a host starts with, between 0 and `maximumTokens`; 500 by default.
        ///   - maximumTokens: The most tokens a host can hold, at least 1; 500 by default.
        ///   - retryCost: What a retry costs, at least 1; 5 by default.
        ///   - timeoutRetryCost: What a retry after a timeout costs, at least 1; 10 by default.
        ///   - successReward: What a success without retries gives back, 0 or more; 1 by default.
        ///   - throttlingRetryCost: What a retry after a 429 costs, at least 1; `nil` (the default) for `retryCost`.
        public init(
            initialTokens: Int = 500, maximumTokens: Int = 500, retryCost: Int = 5, timeoutRetryCost: Int = 10,
            successReward: Int = 1, throttlingRetryCost: Int? = nil
        ) {
            ConfigurationError.trapIfInvalid { () throws(ConfigurationError) in
                try Self.check(
                    initialTokens: initialTokens, maximumTokens: maximumTokens, retryCost: retryCost,
                    timeoutRetryCost: timeoutRetryCost, throttlingRetryCost: throttlingRetryCost ?? retryCost,
                    successReward: successReward)
            }
            self.init(
                checkedInitialTokens: initialTokens, maximumTokens: maximumTokens, retryCost: retryCost,
                timeoutRetryCost: timeoutRetryCost, throttlingRetryCost: throttlingRetryCost ?? retryCost,
                successReward: successReward)
        }

        /// Creates a configuration from numbers that arrive at run time, throwing when one is invalid.
        ///
        /// The parameters, their defaults and what is valid are those of
        /// ``init(initialTokens:maximumTokens:retryCost:timeoutRetryCost:successReward:throttlingRetryCost:)``.
        ///
        /// - Throws: ``ConfigurationError`` naming the first invalid number.
        public static func validated(
            initialTokens: Int = 500, maximumTokens: Int = 500, retryCost: Int = 5, timeoutRetryCost: Int = 10,
            successReward: Int = 1, throttlingRetryCost: Int? = nil
        ) throws(ConfigurationError) -> Configuration {
            try check(
                initialTokens: initialTokens, maximumTokens: maximumTokens, retryCost: retryCost,
                timeoutRetryCost: timeoutRetryCost, throttlingRetryCost: throttlingRetryCost ?? retryCost,
                successReward: successReward)
            return Configuration(
                checkedInitialTokens: initialTokens, maximumTokens: maximumTokens, retryCost: retryCost,
                timeoutRetryCost: timeoutRetryCost, throttlingRetryCost: throttlingRetryCost ?? retryCost,
                successReward: successReward)
        }

        /// Throws a ``ConfigurationError`` for the first invalid number.
        private static func check(
            initialTokens: Int, maximumTokens: Int, retryCost: Int, timeoutRetryCost: Int, throttlingRetryCost: Int,
            successReward: Int
        ) throws(ConfigurationError) {
            guard maximumTokens >= 1 else {
                throw ConfigurationError(
                    field: "RetryBudget.Configuration.maximumTokens",
                    problem: "must be at least 1, got \(maximumTokens)")
            }
            guard (0...maximumTokens).contains(initialTokens) else {
                throw ConfigurationError(
                    field: "RetryBudget.Configuration.initialTokens",
                    problem: "must be between 0 and maximumTokens (\(maximumTokens)), got \(initialTokens)")
            }
            guard retryCost >= 1 else {
                throw ConfigurationError(
                    field: "RetryBudget.Configuration.retryCost", problem: "must be at least 1, got \(retryCost)")
            }
            guard timeoutRetryCost >= 1 else {
                throw ConfigurationError(
                    field: "RetryBudget.Configuration.timeoutRetryCost",
                    problem: "must be at least 1, got \(timeoutRetryCost)")
            }
            guard throttlingRetryCost >= 1 else {
                throw ConfigurationError(
                    field: "RetryBudget.Configuration.throttlingRetryCost",
                    problem: "must be at least 1, got \(throttlingRetryCost)")
            }
            guard successReward >= 0 else {
                throw ConfigurationError(
                    field: "RetryBudget.Configuration.successReward", problem: "must be 0 or more, got \(successReward)"
                )
            }
        }

        private init(
            checkedInitialTokens: Int, maximumTokens: Int, retryCost: Int, timeoutRetryCost: Int,
            throttlingRetryCost: Int, successReward: Int
        ) {
            self.initialTokens = checkedInitialTokens
            self.maximumTokens = maximumTokens
            self.retryCost = retryCost
            self.timeoutRetryCost = timeoutRetryCost
            self.throttlingRetryCost = throttlingRetryCost
            self.successReward = successReward
        }

        /// What a retry after `error` costs: a timeout's cost, a throttling response's, or the plain one.
        func cost(ofRetryAfter error: ReboundError, response: ResponseHead?) -> Int {
            if error.reason.original.urlError?.code == .timedOut { return timeoutRetryCost }
            if response?.isThrottling == true { return throttlingRetryCost }
            return retryCost
        }
    }
}
