import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension CircuitBreaker {
    /// When a closed breaker opens.
    public enum TripCondition: Sendable, Equatable {
        /// After this many failures in a row; a success starts the count again.
        case consecutiveFailures(Int)
        /// When the share of failures among the calls in `window` reaches `rate` (between 0 and 1), once the window
        /// holds at least `minimumCalls` calls.
        case failureRate(Double, window: Window, minimumCalls: Int)
    }

    /// The calls a failure rate is measured over.
    public enum Window: Sendable, Equatable {
        /// The last `n` calls.
        case count(Int)
        /// The calls that ended in the last `duration`, measured in tenths of it: a call leaves the window between
        /// `0.9 × duration` and `duration` after it ended.
        case time(Duration)
    }

    /// How an attempt counts for the breaker.
    public enum Verdict: Sendable, Equatable {
        /// The upstream failed: counts towards tripping, and re-opens a half-open breaker.
        case failure
        /// The upstream answered: resets the consecutive-failure count, and closes a half-open breaker.
        case success
        /// Says nothing about the upstream (a cancellation, an adapter's failure): not counted at all.
        case ignored
    }

    /// What a breaker trips on, how long it stays open, how many trial calls it lets through and what counts as
    /// a failure.
    ///
    /// Every setting is checked when the configuration is created: an invalid one written in code traps with a message
    /// that names it, and ``validated(tripCondition:openDuration:halfOpenTrialCalls:retryAfter:classify:)``, for
    /// settings that arrive at run time, throws a ``ConfigurationError`` instead.
    public struct Configuration: Sendable {
        /// The default ``tripCondition``: 5 consecutive failures.
        public static let defaultTripCondition = TripCondition.consecutiveFailures(5)
        /// The default ``openDuration``: 30 seconds.
        public static let defaultOpenDuration = Duration.seconds(30)
        /// The default ``halfOpenTrialCalls``: 1.
        public static let defaultHalfOpenTrialCalls = 1
        /// A configuration with every default.
        public static let `default` = Configuration(
            checked: defaultTripCondition, openDuration: defaultOpenDuration,
            halfOpenTrialCalls: defaultHalfOpenTrialCalls, retryAfter: .default, classify: CircuitBreaker.defaultVerdict
        )

        /// When the breaker opens; ``defaultTripCondition`` (5 consecutive failures) by default.
        public let tripCondition: TripCondition
        /// How long the breaker stays open before it lets trial calls through; ``defaultOpenDuration`` (30 s) by
        /// default.
        public let openDuration: Duration
        /// How many calls a half-open breaker lets through at once; ``defaultHalfOpenTrialCalls`` (1) by default.
        public let halfOpenTrialCalls: Int
        /// Which `Retry-After` headers keep the breaker open at least as long as they ask when a failure trips it;
        /// ``RetryAfter/default`` (429 and 503, at most 60 s) by default.
        public let retryAfter: RetryAfter
        /// Decides how an attempt counts; ``CircuitBreaker/defaultVerdict(for:)`` by default.
        public let classify: @Sendable (AttemptOutcome) -> Verdict

        /// Creates a configuration from settings written in code; an invalid one traps.
        ///
        /// An invalid setting is a programming error; the trap's message names it, for example
        /// `CircuitBreaker.Configuration.openDuration must be longer than zero, got 0.0 seconds`. For settings that
        /// arrive at run time, use ``validated(tripCondition:openDuration:halfOpenTrialCalls:retryAfter:classify:)``,
        /// which throws instead.
        ///
        /// - Parameters:
        ///   - tripCondition: When the breaker opens; 5 consecutive failures by default. The count must be at least
        ///     1, the rate in (0, 1], a count window at least 1 call, a time window longer than zero, and the minimum
        ///     number of calls at least 1.
        ///   - openDuration: How long the breaker stays open, longer than zero; 30 seconds by default.
        ///   - halfOpenTrialCalls: How many trial calls a half-open breaker lets through, at least 1; 1 by default.
        ///   - retryAfter: Which `Retry-After` headers lengthen the open time of a breaker their failure trips;
        ///     ``RetryAfter/default`` by default, ``RetryAfter/ignored`` for none.
        ///   - classify: How an attempt counts; ``CircuitBreaker/defaultVerdict(for:)`` by default.
        public init(
            tripCondition: TripCondition = defaultTripCondition,
            openDuration: Duration = defaultOpenDuration,
            halfOpenTrialCalls: Int = defaultHalfOpenTrialCalls,
            retryAfter: RetryAfter = .default,
            classify: @escaping @Sendable (AttemptOutcome) -> Verdict = CircuitBreaker.defaultVerdict
        ) {
            ConfigurationError.trapIfInvalid { () throws(ConfigurationError) in
                try Self.check(
                    tripCondition: tripCondition, openDuration: openDuration, halfOpenTrialCalls: halfOpenTrialCalls)
            }
            self.init(
                checked: tripCondition, openDuration: openDuration, halfOpenTrialCalls: halfOpenTrialCalls,
                retryAfter: retryAfter, classify: classify)
        }

        /// Creates a configuration from settings that arrive at run time, throwing when one is invalid.
        ///
        /// The parameters, their defaults and what is valid are those of
        /// ``init(tripCondition:openDuration:halfOpenTrialCalls:retryAfter:classify:)``.
        ///
        /// - Throws: ``ConfigurationError`` naming the first invalid setting.
        public static func validated(
            tripCondition: TripCondition = defaultTripCondition,
            openDuration: Duration = defaultOpenDuration,
            halfOpenTrialCalls: Int = defaultHalfOpenTrialCalls,
            retryAfter: RetryAfter = .default,
            classify: @escaping @Sendable (AttemptOutcome) -> Verdict = CircuitBreaker.defaultVerdict
        ) throws(ConfigurationError) -> Configuration {
            try check(tripCondition: tripCondition, openDuration: openDuration, halfOpenTrialCalls: halfOpenTrialCalls)
            return Configuration(
                checked: tripCondition, openDuration: openDuration, halfOpenTrialCalls: halfOpenTrialCalls,
                retryAfter: retryAfter, classify: classify)
        }

        /// Throws a ``ConfigurationError`` for the first invalid setting.
        private static func check(
            tripCondition: TripCondition, openDuration: Duration, halfOpenTrialCalls: Int
        ) throws(ConfigurationError) {
            let trip = "CircuitBreaker.Configuration.tripCondition"
            switch tripCondition {
            case .consecutiveFailures(let count):
                guard count >= 1 else {
                    throw ConfigurationError(
                        field: trip, problem: "must count at least 1 consecutive failure, got \(count)")
                }
            case .failureRate(let rate, let window, let minimumCalls):
                guard rate > 0, rate <= 1 else {
                    throw ConfigurationError(
                        field: trip, problem: "must have a failure rate above 0 and at most 1, got \(rate)")
                }
                guard minimumCalls >= 1 else {
                    throw ConfigurationError(
                        field: trip, problem: "must have a minimum of at least 1 call, got \(minimumCalls)")
                }
                switch window {
                case .count(let count):
                    guard count >= 1 else {
                        throw ConfigurationError(
                            field: trip, problem: "must have a count window of at least 1 call, got \(count)")
                    }
                case .time(let duration):
                    guard duration > .zero else {
                        throw ConfigurationError(
                            field: trip, problem: "must have a time window longer than zero, got \(duration)")
                    }
                }
            }
            guard openDuration > .zero else {
                throw ConfigurationError(
                    field: "CircuitBreaker.Configuration.openDuration",
                    problem: "must be longer than zero, got \(openDuration)")
            }
            guard halfOpenTrialCalls >= 1 else {
                throw ConfigurationError(
                    field: "CircuitBreaker.Configuration.halfOpenTrialCalls",
                    problem: "must be at least 1, got \(halfOpenTrialCalls)")
            }
        }

        private init(
            checked tripCondition: TripCondition, openDuration: Duration, halfOpenTrialCalls: Int,
            retryAfter: RetryAfter, classify: @escaping @Sendable (AttemptOutcome) -> Verdict
        ) {
            self.retryAfter = retryAfter
            self.tripCondition = tripCondition
            self.openDuration = openDuration
            self.halfOpenTrialCalls = halfOpenTrialCalls
            self.classify = classify
        }
    }

    /// The status codes that count as failures by default: every 5xx, 408 and 429.
    public static func isFailureStatus(_ statusCode: Int) -> Bool {
        (500..<600).contains(statusCode) || statusCode == 408 || statusCode == 429
    }

    /// The default verdict: a transport error or a status of 5xx, 408 or 429 is a failure; any other response
    /// (other 4xx included, and a 2xx that a validator rejected) is a success, because the upstream
    /// answered; cancellations and adapter failures are ignored, because the upstream was not reached.
    @Sendable public static func defaultVerdict(for outcome: AttemptOutcome) -> Verdict {
        if let statusCode = outcome.statusCode {
            return isFailureStatus(statusCode) ? .failure : .success
        }
        switch outcome.failure {
        case .transportFailed(let error):
            return error is CancellationError ? .ignored : .failure
        case .retryAborted(_, let original), .deadlineExceeded(_, let original):
            if case .transportFailed = original.original { return .failure }
            return .ignored
        case nil, .adaptationFailed, .circuitOpen, .unacceptableStatusCode, .validationFailed, .decodingFailed:
            return .ignored
        }
    }
}
