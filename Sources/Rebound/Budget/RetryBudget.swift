import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A token bucket per host that limits retries, never first attempts, so that a failing upstream is not hammered by
/// every client retrying at once: the retry storm.
///
/// Each host starts with ``Configuration/initialTokens`` (500). A retry costs ``Configuration/retryCost`` (5), or
/// ``Configuration/timeoutRetryCost`` (10) after a timeout. A success gives back what its last retry cost, or
/// ``Configuration/successReward`` (1) if it needed no retry, up to ``Configuration/maximumTokens`` (500). When a
/// host's bucket cannot pay for a retry, the retry does not happen and the caller gets the original failure, marked
/// with ``RetryBudgetExhausted`` (as ``ReboundError/Reason/retryAborted(error:original:)``). These are the numbers of
/// the AWS SDKs' standard retry mode.
///
/// Put it in a chain's adapters, anywhere among them: on every attempt it registers through the context as the
/// request's ``RetryGate`` (it has the last word after the retriers chose to retry) and ``AttemptObserver`` (it learns
/// of the request's end by itself), so it keeps working inside any wrapper that forwards `adapt`. It is a class whose
/// buckets are behind a lock; share one instance between sessions to share the budget.
///
/// ```swift
/// let budget = RetryBudget()
/// let session = Session(adapters: [budget], retriers: [RetryPolicy()])
/// ```
public final class RetryBudget: RequestAdapter, RetryGate, AttemptObserver {
    /// The bucket's numbers.
    public struct Configuration: Sendable, Equatable {
        /// The AWS SDKs' standard mode: 500 tokens, 5 per retry, 10 per retry after a timeout, 1 back per success.
        public static let `default` = Configuration(
            checkedInitialTokens: 500, maximumTokens: 500, retryCost: 5, timeoutRetryCost: 10, successReward: 1)

        /// The tokens a host starts with; `500` by default.
        public let initialTokens: Int
        /// The most tokens a host can hold; `500` by default.
        public let maximumTokens: Int
        /// What a retry costs; `5` by default.
        public let retryCost: Int
        /// What a retry after a timeout costs; `10` by default.
        public let timeoutRetryCost: Int
        /// What a success that needed no retry gives back; `1` by default.
        public let successReward: Int

        /// Creates a configuration from numbers written in code; an invalid one traps.
        ///
        /// An invalid number is a programming error; the trap's message names it, for example
        /// `RetryBudget.Configuration.retryCost must be at least 1, got 0`. For numbers that arrive at run time, use
        /// ``validated(initialTokens:maximumTokens:retryCost:timeoutRetryCost:successReward:)``, which throws instead.
        ///
        /// - Parameters:
        ///   - initialTokens: The tokens a host starts with, between 0 and `maximumTokens`; 500 by default.
        ///   - maximumTokens: The most tokens a host can hold, at least 1; 500 by default.
        ///   - retryCost: What a retry costs, at least 1; 5 by default.
        ///   - timeoutRetryCost: What a retry after a timeout costs, at least 1; 10 by default.
        ///   - successReward: What a success without retries gives back, 0 or more; 1 by default.
        public init(
            initialTokens: Int = 500, maximumTokens: Int = 500, retryCost: Int = 5, timeoutRetryCost: Int = 10,
            successReward: Int = 1
        ) {
            ConfigurationError.trapIfInvalid { () throws(ConfigurationError) in
                try Self.check(
                    initialTokens: initialTokens, maximumTokens: maximumTokens, retryCost: retryCost,
                    timeoutRetryCost: timeoutRetryCost, successReward: successReward)
            }
            self.init(
                checkedInitialTokens: initialTokens, maximumTokens: maximumTokens, retryCost: retryCost,
                timeoutRetryCost: timeoutRetryCost, successReward: successReward)
        }

        /// Creates a configuration from numbers that arrive at run time, throwing when one is invalid.
        ///
        /// The parameters, their defaults and what is valid are those of
        /// ``init(initialTokens:maximumTokens:retryCost:timeoutRetryCost:successReward:)``.
        ///
        /// - Throws: ``ConfigurationError`` naming the first invalid number.
        public static func validated(
            initialTokens: Int = 500, maximumTokens: Int = 500, retryCost: Int = 5, timeoutRetryCost: Int = 10,
            successReward: Int = 1
        ) throws(ConfigurationError) -> Configuration {
            try check(
                initialTokens: initialTokens, maximumTokens: maximumTokens, retryCost: retryCost,
                timeoutRetryCost: timeoutRetryCost, successReward: successReward)
            return Configuration(
                checkedInitialTokens: initialTokens, maximumTokens: maximumTokens, retryCost: retryCost,
                timeoutRetryCost: timeoutRetryCost, successReward: successReward)
        }

        /// Throws a ``ConfigurationError`` for the first invalid number.
        private static func check(
            initialTokens: Int, maximumTokens: Int, retryCost: Int, timeoutRetryCost: Int, successReward: Int
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
            guard successReward >= 0 else {
                throw ConfigurationError(
                    field: "RetryBudget.Configuration.successReward", problem: "must be 0 or more, got \(successReward)"
                )
            }
        }

        private init(
            checkedInitialTokens: Int, maximumTokens: Int, retryCost: Int, timeoutRetryCost: Int, successReward: Int
        ) {
            self.initialTokens = checkedInitialTokens
            self.maximumTokens = maximumTokens
            self.retryCost = retryCost
            self.timeoutRetryCost = timeoutRetryCost
            self.successReward = successReward
        }
    }

    private struct State: Sendable {
        var tokens: [String: Int] = [:]
        /// The key and cost of each request's last granted retry, until the request ends.
        var granted: [UUID: (key: String, cost: Int)] = [:]
    }

    /// The budget's numbers.
    public let configuration: Configuration

    private let keyFunction: CircuitBreakerRegistry.KeyFunction
    private let state = Locked(State())

    /// Creates a budget.
    ///
    /// - Parameters:
    ///   - configuration: The bucket's numbers; ``Configuration/default`` (the AWS SDKs' standard mode) by default.
    ///   - key: Picks a request's bucket, or `nil` for a request whose retries are not limited;
    ///     ``CircuitBreakerRegistry/hostKey(for:)`` (the host, and the port when the URL names one) by default.
    public init(
        configuration: Configuration = .default,
        key: @escaping CircuitBreakerRegistry.KeyFunction = CircuitBreakerRegistry.hostKey
    ) {
        self.configuration = configuration
        self.keyFunction = key
    }

    /// The tokens `key`'s bucket holds now.
    public func tokens(for key: String) -> Int {
        state.withLock { $0.tokens[key] ?? configuration.initialTokens }
    }

    /// Registers the budget, through the context, as the request's gate and observer, and returns `request` unchanged:
    /// wrapped in anything that forwards `adapt`, the budget still has the last word on every retry.
    public func adapt(_ request: consuming URLRequest, context: RequestContext) async throws -> URLRequest {
        context.admitRetries(through: self)
        context.observe(self)
        return request
    }

    /// How many requests hold a granted retry and have not ended; for tests that check nothing is kept.
    package var requestsWithGrants: Int { state.withLock { $0.granted.count } }

    /// Takes the retry's cost from the request's bucket, or denies the retry with ``RetryBudgetExhausted``.
    public func admitRetry(_ request: RetryRequest, dueTo error: ReboundError, after delay: Duration) -> (any Error)? {
        guard let key = keyFunction(request.request) else { return nil }
        let cost =
            error.reason.original.urlError?.code == .timedOut ? configuration.timeoutRetryCost : configuration.retryCost
        return state.withLock { state -> RetryBudgetExhausted? in
            let available = state.tokens[key] ?? configuration.initialTokens
            guard available >= cost else {
                state.granted[request.requestID] = nil
                return RetryBudgetExhausted(key: key, availableTokens: available, retryCost: cost)
            }
            state.tokens[key] = available - cost
            state.granted[request.requestID] = (key, cost)
            return nil
        }
    }

    /// Gives tokens back for a request that succeeded; forgets one that ended otherwise, on every path.
    public func requestDidFinish(_ outcome: RequestOutcome) async {
        switch outcome.decision {
        case .retry, .failed, .cancelled:
            state.withLock { _ = $0.granted.removeValue(forKey: outcome.requestID) }
        case .succeeded:
            let sent = outcome.attempts.last?.request ?? outcome.originalRequest
            let fallbackKey = keyFunction(sent)
            state.withLock { state in
                let refund: (key: String, amount: Int)
                if let grant = state.granted.removeValue(forKey: outcome.requestID) {
                    refund = (grant.key, grant.cost)
                } else if let fallbackKey {
                    refund = (fallbackKey, configuration.successReward)
                } else {
                    return
                }
                let tokens = state.tokens[refund.key] ?? configuration.initialTokens
                state.tokens[refund.key] = min(tokens + refund.amount, configuration.maximumTokens)
            }
        }
    }
}

/// Why a retry did not happen: the host's ``RetryBudget`` could not pay for it.
public struct RetryBudgetExhausted: Error, Sendable, Equatable, CustomStringConvertible {
    /// The bucket's key, usually the host.
    public let key: String
    /// The tokens the bucket held.
    public let availableTokens: Int
    /// What the retry would have cost.
    public let retryCost: Int

    /// Creates the error; budgets create these, and test code may too.
    public init(key: String, availableTokens: Int, retryCost: Int) {
        self.key = key
        self.availableTokens = availableTokens
        self.retryCost = retryCost
    }

    /// For example `retry budget for api.example.com exhausted: 3 tokens left, a retry costs 5`.
    public var description: String {
        "retry budget for \(key) exhausted: \(availableTokens) tokens left, a retry costs \(retryCost)"
    }
}
