import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension CircuitBreaker {
    /// When a closed breaker opens.
    ///
    /// A minor release may add a case: switch over it with `@unknown default` (<doc:APIStabilityGuide>).
    public enum TripCondition: Sendable, Equatable {
        /// After this many failures in a row; a success starts the count again.
        case consecutiveFailures(Int)
        /// When the share of failures among the calls in `window` reaches `rate` (between 0 and 1), once the window
        /// holds at least `minimumCalls` calls (or is full, for a count window shorter than that).
        case failureRate(Double, window: Window, minimumCalls: Int)
    }

    /// The calls a failure rate, or a slow-call rule's share, is measured over.
    ///
    /// A minor release may add a case: switch over it with `@unknown default` (<doc:APIStabilityGuide>).
    public enum Window: Sendable, Equatable {
        /// The last `n` calls, from 1 to ``maximumCount``.
        case count(Int)
        /// The calls that ended in the last `duration`, measured in tenths of it: a call leaves the window between
        /// `0.9 × duration` and `duration` after it ended.
        case time(Duration)

        /// The longest count window: 100,000 calls. The breaker keeps one entry per call of the window, made when it
        /// is made, so a longer one would hold megabytes per breaker (per host, in a registry).
        public static let maximumCount = 100_000
    }

    /// How an attempt counts for the breaker.
    public enum Verdict: Sendable, Equatable {
        /// The upstream failed: counts towards tripping, and re-opens a half-open breaker.
        case failure
        /// The upstream answered: resets the consecutive-failure count, and counts toward closing a half-open breaker
        /// (``Configuration/trialSuccessesToClose``; a slow one opens it again under a ``SlowCallRule``).
        case success
        /// Says nothing about the upstream (a cancellation, an adapter's failure): not counted at all.
        case ignored
    }

    /// When slow calls open a breaker, after resilience4j's slow-call rate: an attempt whose time on the wire
    /// (``Attempt/timeOnWire``) exceeds ``threshold`` is slow, and once ``window`` holds at least ``minimumCalls`` calls
    /// (or is full, for a count window shorter than that) the breaker opens when the share of slow ones among them
    /// reaches ``rate``, whether they failed or succeeded.
    ///
    /// Only the attempts the breaker counts are timed: one it ignores (cancelled, a hedge that lost its round, one
    /// that never reached the host) is not counted, however long it took. A half-open breaker's trial that is slow
    /// counts as a failed trial: the breaker opens again.
    /// The breaker checks the settings with its configuration (see ``Configuration``): the threshold longer than zero,
    /// the rate in (0, 1], a window and a minimum as a ``TripCondition/failureRate(_:window:minimumCalls:)``'s.
    public struct SlowCallRule: Sendable, Equatable {
        /// The time on the wire beyond which an attempt is slow.
        public let threshold: Duration
        /// The share of slow calls in the window that opens the breaker, between 0 and 1; 1 (every call) by default.
        public let rate: Double
        /// The calls the share is measured over; the last 100 by default.
        public let window: Window
        /// How many calls the window must hold before the share is read, or all of a count window that holds fewer;
        /// 100 by default.
        public let minimumCalls: Int

        /// A rule that counts an attempt slower than `threshold` on the wire as slow, and opens the breaker once
        /// `rate` of the calls in `window` are slow, with at least `minimumCalls` calls in it. The defaults are
        /// resilience4j's: every one of the last 100 calls.
        public init(threshold: Duration, rate: Double = 1, window: Window = .count(100), minimumCalls: Int = 100) {
            self.threshold = threshold
            self.rate = rate
            self.window = window
            self.minimumCalls = minimumCalls
        }

        /// Whether an attempt that spent `timeOnWire` on the wire was slow (one never sent, `nil`, is not).
        func isSlow(_ timeOnWire: Duration?) -> Bool {
            timeOnWire.map { $0 > threshold } ?? false
        }
    }

    /// What a breaker trips on, how long it stays open, how many trial calls it lets through and what counts as
    /// a failure.
    ///
    /// **How long it stays open.** Each time the breaker opens, it stays open for ``breakDuration``'s delay for the
    /// number of times it has opened since it was last closed (0 the first time). The default,
    /// ``defaultBreakDuration``, is short and jittered while an outage is young, and grows only while trials keep
    /// failing: between 0.25 s and 0.5 s for the first eleven openings (about 4 s of failed trials), then doubling up
    /// to 10 s (5 s to 10 s once jittered). A recovered host is handed back within half a second; a long outage gets
    /// a trial per instance every 5 to 10 s. `Retry-After` on the failure that trips it keeps it open at least that
    /// long. `Docs/CircuitBreaker.md` shows the trade-off with numbers.
    ///
    /// Every setting is checked when the configuration is created: an invalid one written in code traps with a message
    /// that names it, and the `validated(…)` factories, for settings that arrive at run time, throw a
    /// ``ConfigurationError`` instead.
    public struct Configuration: Sendable {
        /// The default ``tripCondition``: 5 consecutive failures.
        public static let defaultTripCondition = TripCondition.consecutiveFailures(5)
        /// The default ``breakDuration``: 0.5 s for the first eleven openings, then doubling up to 10 s, each with equal
        /// jitter (between half and all of it), drawn from the system's random numbers.
        public static let defaultBreakDuration = defaultBreakDuration(using: .system)
        /// The default ``halfOpenTrialCalls``: 1.
        public static let defaultHalfOpenTrialCalls = 1
        /// The default ``trialSuccessesToClose``: 1.
        public static let defaultTrialSuccessesToClose = 1
        /// The default ``trialTimeout``: 30 seconds.
        public static let defaultTrialTimeout = Duration.seconds(30)
        /// A configuration with every default.
        public static let `default` = Configuration(
            checked: defaultTripCondition, breakDuration: defaultBreakDuration,
            halfOpenTrialCalls: defaultHalfOpenTrialCalls, trialSuccessesToClose: defaultTrialSuccessesToClose,
            trialTimeout: defaultTrialTimeout, slowCallRule: nil, retryAfter: .default, classify: nil)

        /// The default ``breakDuration`` with its jitter drawn from `random`: a seeded source makes runs repeatable.
        public static func defaultBreakDuration(using random: RandomSource) -> BackoffStrategy {
            .exponential(a: .nanoseconds(488_281), b: 2).min(.milliseconds(500)).max(.seconds(10)).equalJitter(
                using: random)
        }

        /// When the breaker opens; ``defaultTripCondition`` (5 consecutive failures) by default.
        public let tripCondition: TripCondition
        /// How long the breaker stays open, given how many times it opened since it was last closed;
        /// ``defaultBreakDuration`` by default.
        public let breakDuration: BackoffStrategy
        /// How many calls a half-open breaker lets through at once; ``defaultHalfOpenTrialCalls`` (1) by default.
        public let halfOpenTrialCalls: Int
        /// How many trial successes in a row close a half-open breaker; ``defaultTrialSuccessesToClose`` (1) by
        /// default. Each success frees its place for the next trial; a failed trial opens the breaker again and the
        /// count starts over.
        public let trialSuccessesToClose: Int
        /// How long a trial call may go without reporting before its permit expires and another call may try; 30 s
        /// by default. A trial whose outcome never arrives (its request abandoned, a wrapper that drops the report)
        /// cannot keep the breaker half-open for good.
        public let trialTimeout: Duration
        /// When slow calls open the breaker, and the time a half-open breaker's trial must beat; `nil` (the default):
        /// an attempt's time counts for nothing.
        public let slowCallRule: SlowCallRule?
        /// Which `Retry-After` headers keep the breaker open at least as long as they ask when a failure trips it, and
        /// whether a `retry-after-ms` is read first (``RetryAfter/Signals/retryAfterMs``; `x-should-retry` plays no
        /// part here); ``RetryAfter/default`` (429 and 503, at most 60 s, `Retry-After` only) by default.
        public let retryAfter: RetryAfter
        /// Decides how an attempt counts; ``CircuitBreaker/defaultVerdict(for:)`` by default.
        public var classify: @Sendable (AttemptOutcome) -> Verdict { classifier ?? CircuitBreaker.defaultVerdict }

        /// The caller's `classify`; `nil` for the default, which the breaker applies to the attempt directly, without
        /// building an ``AttemptOutcome`` for it.
        private let classifier: (@Sendable (AttemptOutcome) -> Verdict)?

        /// How long the breaker stays open the first time, without jitter: 0.5 s by default.
        public var openDuration: Duration { breakDuration.withoutJitter.delay(forRetryCount: 0) }

        /// Creates a configuration from settings written in code; an invalid one traps.
        ///
        /// An invalid setting is a programming error; the trap's message names it. For settings that arrive at run
        /// time, use
        /// ``validated(tripCondition:breakDuration:halfOpenTrialCalls:trialSuccessesToClose:trialTimeout:slowCallRule:retryAfter:classify:)``,
        /// which throws instead.
        ///
        /// - Parameters:
        ///   - tripCondition: When the breaker opens; 5 consecutive failures by default. The count must be at least
        ///     1, the rate in (0, 1], a count window from 1 to ``Window/maximumCount`` calls, a time window longer
        ///     than zero, and the minimum number of calls at least 1.
        ///   - breakDuration: How long the breaker stays open, given how many times it opened since it was last
        ///     closed; ``defaultBreakDuration`` by default. Its first delay must be longer than zero.
        ///   - halfOpenTrialCalls: How many trial calls a half-open breaker lets through, at least 1; 1 by default.
        ///   - trialSuccessesToClose: How many trial successes in a row close a half-open breaker, at least 1; 1 by
        ///     default.
        ///   - trialTimeout: How long a trial's permit lasts without a report, longer than zero; 30 s by default.
        ///   - slowCallRule: When slow calls open the breaker (its threshold longer than zero, its rate, window and
        ///     minimum as a failure rate's); `nil` (none) by default.
        ///   - retryAfter: Which `Retry-After` headers (and `retry-after-ms`, where its signals say) lengthen the open
        ///     time of a breaker their failure trips; ``RetryAfter/default`` by default, ``RetryAfter/ignored`` for none.
        ///   - classify: How an attempt counts; `nil` (the default) for ``CircuitBreaker/defaultVerdict(for:)``.
        public init(
            tripCondition: TripCondition = defaultTripCondition,
            breakDuration: BackoffStrategy = defaultBreakDuration,
            halfOpenTrialCalls: Int = defaultHalfOpenTrialCalls,
            trialSuccessesToClose: Int = defaultTrialSuccessesToClose,
            trialTimeout: Duration = defaultTrialTimeout,
            slowCallRule: SlowCallRule? = nil,
            retryAfter: RetryAfter = .default,
            classify: (@Sendable (AttemptOutcome) -> Verdict)? = nil
        ) {
            ConfigurationError.trapIfInvalid { () throws(ConfigurationError) in
                try Self.check(
                    tripCondition: tripCondition, breakDuration: breakDuration,
                    halfOpenTrialCalls: halfOpenTrialCalls, trialSuccessesToClose: trialSuccessesToClose,
                    trialTimeout: trialTimeout, slowCallRule: slowCallRule)
            }
            self.init(
                checked: tripCondition, breakDuration: breakDuration, halfOpenTrialCalls: halfOpenTrialCalls,
                trialSuccessesToClose: trialSuccessesToClose, trialTimeout: trialTimeout, slowCallRule: slowCallRule,
                retryAfter: retryAfter, classify: classify)
        }

        /// Creates a configuration whose breaker stays open for the same `openDuration` every time, without jitter
        /// or growth (a constant ``breakDuration``); an invalid setting traps.
        ///
        /// - Parameters:
        ///   - tripCondition: When the breaker opens; 5 consecutive failures by default.
        ///   - openDuration: How long the breaker stays open each time, longer than zero.
        ///   - halfOpenTrialCalls: How many trial calls a half-open breaker lets through, at least 1; 1 by default.
        ///   - trialSuccessesToClose: How many trial successes in a row close a half-open breaker, at least 1; 1 by
        ///     default.
        ///   - trialTimeout: How long a trial's permit lasts without a report, longer than zero; 30 s by default.
        ///   - slowCallRule: When slow calls open the breaker; `nil` (none) by default.
        ///   - retryAfter: Which `Retry-After` headers (and `retry-after-ms`, where its signals say) lengthen the open
        ///     time; ``RetryAfter/default`` by default.
        ///   - classify: How an attempt counts; `nil` (the default) for ``CircuitBreaker/defaultVerdict(for:)``.
        public init(
            tripCondition: TripCondition = defaultTripCondition,
            openDuration: Duration,
            halfOpenTrialCalls: Int = defaultHalfOpenTrialCalls,
            trialSuccessesToClose: Int = defaultTrialSuccessesToClose,
            trialTimeout: Duration = defaultTrialTimeout,
            slowCallRule: SlowCallRule? = nil,
            retryAfter: RetryAfter = .default,
            classify: (@Sendable (AttemptOutcome) -> Verdict)? = nil
        ) {
            ConfigurationError.trapIfInvalid { () throws(ConfigurationError) in
                try Self.check(openDuration: openDuration)
            }
            self.init(
                tripCondition: tripCondition, breakDuration: .constant(openDuration),
                halfOpenTrialCalls: halfOpenTrialCalls, trialSuccessesToClose: trialSuccessesToClose,
                trialTimeout: trialTimeout, slowCallRule: slowCallRule, retryAfter: retryAfter, classify: classify)
        }

        /// Creates a configuration from settings that arrive at run time, throwing when one is invalid.
        ///
        /// The parameters, their defaults and what is valid are those of
        /// ``init(tripCondition:breakDuration:halfOpenTrialCalls:trialSuccessesToClose:trialTimeout:slowCallRule:retryAfter:classify:)``.
        ///
        /// - Throws: ``ConfigurationError`` naming the first invalid setting.
        public static func validated(
            tripCondition: TripCondition = defaultTripCondition,
            breakDuration: BackoffStrategy = defaultBreakDuration,
            halfOpenTrialCalls: Int = defaultHalfOpenTrialCalls,
            trialSuccessesToClose: Int = defaultTrialSuccessesToClose,
            trialTimeout: Duration = defaultTrialTimeout,
            slowCallRule: SlowCallRule? = nil,
            retryAfter: RetryAfter = .default,
            classify: (@Sendable (AttemptOutcome) -> Verdict)? = nil
        ) throws(ConfigurationError) -> Configuration {
            try check(
                tripCondition: tripCondition, breakDuration: breakDuration, halfOpenTrialCalls: halfOpenTrialCalls,
                trialSuccessesToClose: trialSuccessesToClose, trialTimeout: trialTimeout, slowCallRule: slowCallRule)
            return Configuration(
                checked: tripCondition, breakDuration: breakDuration, halfOpenTrialCalls: halfOpenTrialCalls,
                trialSuccessesToClose: trialSuccessesToClose, trialTimeout: trialTimeout, slowCallRule: slowCallRule,
                retryAfter: retryAfter, classify: classify)
        }

        /// Creates a configuration with a fixed open duration from settings that arrive at run time, throwing when
        /// one is invalid; see
        /// ``init(tripCondition:openDuration:halfOpenTrialCalls:trialSuccessesToClose:trialTimeout:slowCallRule:retryAfter:classify:)``.
        ///
        /// - Throws: ``ConfigurationError`` naming the first invalid setting.
        public static func validated(
            tripCondition: TripCondition = defaultTripCondition,
            openDuration: Duration,
            halfOpenTrialCalls: Int = defaultHalfOpenTrialCalls,
            trialSuccessesToClose: Int = defaultTrialSuccessesToClose,
            trialTimeout: Duration = defaultTrialTimeout,
            slowCallRule: SlowCallRule? = nil,
            retryAfter: RetryAfter = .default,
            classify: (@Sendable (AttemptOutcome) -> Verdict)? = nil
        ) throws(ConfigurationError) -> Configuration {
            try check(openDuration: openDuration)
            return try validated(
                tripCondition: tripCondition, breakDuration: .constant(openDuration),
                halfOpenTrialCalls: halfOpenTrialCalls, trialSuccessesToClose: trialSuccessesToClose,
                trialTimeout: trialTimeout, slowCallRule: slowCallRule, retryAfter: retryAfter, classify: classify)
        }

        private static func check(openDuration: Duration) throws(ConfigurationError) {
            guard openDuration > .zero else {
                throw ConfigurationError(
                    field: "CircuitBreaker.Configuration.openDuration",
                    problem: "must be longer than zero, got \(openDuration)")
            }
        }

        /// Throws a ``ConfigurationError`` for the first invalid setting.
        private static func check(
            tripCondition: TripCondition, breakDuration: BackoffStrategy, halfOpenTrialCalls: Int,
            trialSuccessesToClose: Int, trialTimeout: Duration, slowCallRule: SlowCallRule?
        ) throws(ConfigurationError) {
            let trip = "CircuitBreaker.Configuration.tripCondition"
            switch tripCondition {
            case .consecutiveFailures(let count):
                guard count >= 1 else {
                    throw ConfigurationError(
                        field: trip, problem: "must count at least 1 consecutive failure, got \(count)")
                }
            case .failureRate(let rate, let window, let minimumCalls):
                try check(rate: rate, of: "failure rate", window: window, minimumCalls: minimumCalls, field: trip)
            }
            let first = breakDuration.withoutJitter.delay(forRetryCount: 0)
            guard first > .zero else {
                throw ConfigurationError(
                    field: "CircuitBreaker.Configuration.breakDuration",
                    problem: "must open for longer than zero the first time, got \(first)")
            }
            guard halfOpenTrialCalls >= 1 else {
                throw ConfigurationError(
                    field: "CircuitBreaker.Configuration.halfOpenTrialCalls",
                    problem: "must be at least 1, got \(halfOpenTrialCalls)")
            }
            guard trialSuccessesToClose >= 1 else {
                throw ConfigurationError(
                    field: "CircuitBreaker.Configuration.trialSuccessesToClose",
                    problem: "must be at least 1, got \(trialSuccessesToClose)")
            }
            guard trialTimeout > .zero else {
                throw ConfigurationError(
                    field: "CircuitBreaker.Configuration.trialTimeout",
                    problem: "must be longer than zero, got \(trialTimeout)")
            }
            if let slowCallRule {
                let field = "CircuitBreaker.Configuration.slowCallRule"
                guard slowCallRule.threshold > .zero else {
                    throw ConfigurationError(
                        field: field, problem: "must have a threshold longer than zero, got \(slowCallRule.threshold)")
                }
                try check(
                    rate: slowCallRule.rate, of: "slow-call rate", window: slowCallRule.window,
                    minimumCalls: slowCallRule.minimumCalls, field: field)
            }
        }

        /// Throws a ``ConfigurationError`` for `field` when a share (`rate`, what `name` calls it), its window or its
        /// minimum of calls is invalid: the rules of a failure rate and a slow-call rate alike.
        private static func check(
            rate: Double, of name: String, window: Window, minimumCalls: Int, field: String
        ) throws(ConfigurationError) {
            guard rate > 0, rate <= 1 else {
                throw ConfigurationError(
                    field: field, problem: "must have a \(name) above 0 and at most 1, got \(rate)")
            }
            guard minimumCalls >= 1 else {
                throw ConfigurationError(
                    field: field, problem: "must have a minimum of at least 1 call, got \(minimumCalls)")
            }
            switch window {
            case .count(let count):
                guard (1...Window.maximumCount).contains(count) else {
                    throw ConfigurationError(
                        field: field,
                        problem: "must have a count window of 1 to \(Window.maximumCount) calls, got \(count)")
                }
            case .time(let duration):
                guard duration > .zero else {
                    throw ConfigurationError(
                        field: field, problem: "must have a time window longer than zero, got \(duration)")
                }
            }
        }

        private init(
            checked tripCondition: TripCondition, breakDuration: BackoffStrategy, halfOpenTrialCalls: Int,
            trialSuccessesToClose: Int, trialTimeout: Duration, slowCallRule: SlowCallRule?, retryAfter: RetryAfter,
            classify: (@Sendable (AttemptOutcome) -> Verdict)?
        ) {
            self.retryAfter = retryAfter
            self.tripCondition = tripCondition
            self.breakDuration = breakDuration
            self.halfOpenTrialCalls = halfOpenTrialCalls
            self.trialSuccessesToClose = trialSuccessesToClose
            self.trialTimeout = trialTimeout
            self.slowCallRule = slowCallRule
            self.classifier = classify
        }

        /// Whether `classify` is the default, a pure function of the attempt.
        var classifiesByDefault: Bool { classifier == nil }

        /// How `attempt` counts: the default verdict read from the attempt itself, or the caller's `classify` given
        /// the outcome `outcome` builds (only then).
        func verdict(for attempt: Attempt, outcome: () -> AttemptOutcome) -> Verdict {
            CircuitBreaker.verdict(for: attempt, classify: classifier, outcome: outcome)
        }
    }

    /// The status codes that count as failures by default: every 5xx, 408 and 429.
    public static func isFailureStatus(_ statusCode: Int) -> Bool {
        (500..<600).contains(statusCode) || statusCode == 408 || statusCode == 429
    }

    /// The default verdict: a transport error or a status of 5xx, 408 or 429 is a failure; any other response
    /// (other 4xx included, and a 2xx that a validator rejected) is a success, because the upstream
    /// answered; cancellations, adapter failures and failures of the device's own network (`notConnectedToInternet`,
    /// `dataNotAllowed`, `internationalRoamingOff`, `callIsActive`) are ignored, because the upstream was not reached. A
    /// refused connection or a DNS failure still counts: that is the host, or the way to it.
    @Sendable public static func defaultVerdict(for outcome: AttemptOutcome) -> Verdict {
        defaultVerdict(for: outcome.attempt)
    }

    /// How `attempt` counts: by `classify` given the outcome `outcome` builds (only then), or by the default verdict,
    /// read from the attempt itself, when there is none. What a breaker, a throttle and a limiter ask.
    ///
    /// A failure of the device's own network (no network at all: `notConnectedToInternet`, `dataNotAllowed`,
    /// `internationalRoamingOff`, `callIsActive`) is ignored whatever `classify` says: the request never left the device,
    /// and the host is not to blame.
    static func verdict(
        for attempt: Attempt, classify: (@Sendable (AttemptOutcome) -> Verdict)?, outcome: () -> AttemptOutcome
    ) -> Verdict {
        if attempt.accountedFailure == .deviceNetwork { return .ignored }
        guard let classify else { return defaultVerdict(for: attempt) }
        return classify(outcome())
    }

    /// The default verdict of an attempt, which depends on the attempt alone.
    static func defaultVerdict(for attempt: Attempt) -> Verdict {
        if attempt.accountedFailure == .deviceNetwork { return .ignored }
        if let statusCode = attempt.responseHead?.statusCode {
            return isFailureStatus(statusCode) ? .failure : .success
        }
        switch attempt.failure {
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
