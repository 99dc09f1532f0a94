/// When a session starts another attempt of a request while the first is still in flight: hedging, as gRPC (A6) and
/// Polly v8 do it, for requests that may be repeated.
///
/// A hedged request starts its first attempt as usual. When no attempt has answered within ``delay`` of the newest
/// attempt's hand-over to the transport, the session starts another beside it, and so on, while fewer than
/// ``maximumInFlight`` are in flight and the request has made fewer than ``maximumAttempts`` in all. A ``delay`` of
/// zero starts them all at once. The first acceptable response wins and the others are cancelled; a response that no
/// retrier would retry (a 404, say) ends them all and the request with it. An attempt that fails in a way the retriers
/// would retry starts the next hedge at once, if one may start; when the last attempt in flight fails, the request goes
/// on as without hedging: the retriers' delay, then a retry, itself hedged (a hedge a part refused before it was sent is
/// not that failure: the round goes on as though it had not started). The retriers are asked about a failure while
/// the other attempts stay in flight (a slow retrier never holds back an answer that came meanwhile), and a 429 or 503
/// whose `Retry-After` asks for a delay starts no new hedge before that time (its `retry-after-ms` too, and no new hedge
/// of the round after an `x-should-retry: false`, where the chain's retry policies read them).
///
/// **Which requests.** Only those that may be repeated: a method the chain's ``RetryPolicy`` retries (its
/// ``RetryPolicy/retryableHTTPMethods``; the idempotent GET, HEAD, OPTIONS, TRACE, PUT and DELETE when the chain has no
/// policy that says), or a request that carries a non-empty `Idempotency-Key` (``IdempotencyKeyAdapter`` adds the same
/// key to every attempt, hedges included). A request whose body is a stream is never hedged. Every hedge goes through
/// the adapters as any attempt does, and starts only once the attempt before it was handed to the transport.
///
/// **Load.** A hedge is extra load on a host that may be slow because it is loaded. Before each hedge the session asks
/// the request's ``RetryBudget`` (a hedge spends from it as a retry does, and gets it back if it is never sent; an
/// empty budget: no hedge, but for one in place of a free retry), its ``CircuitBreaker`` (anything but closed: no
/// hedge), its ``AdaptiveThrottle`` (a hedge is drawn for as a request is), and its ``ConcurrencyLimiter``,
/// ``RateLimitPacer`` and ``AdaptiveRateLimiter`` (no place, request of the quota or token free now: no hedge, so that
/// a hedge does not wait on the client); the limits before the budget, so a refused hedge costs nothing and takes no
/// attempt number. The first refusal ends the hedging of that round, and gates of your own are asked about retries
/// only. Retries and hedges together never exceed ``maximumAttempts``: ``RetryPolicy`` counts hedges among the attempts
/// before a retry too.
///
/// **What is reported.** Every attempt is recorded and told to the observers, with its ``Attempt/hedge`` number. An
/// attempt that lost to another is told with ``AttemptDecision/cancelled``; one that failed while others were still in
/// flight, with ``AttemptDecision/retry(after:)`` and no delay once the retriers chose to go on, or with
/// ``AttemptDecision/cancelled`` when the round ended before they answered, or when it ends after they declined it for
/// the attempts the request made (its retry limit, a repeated failure: no new hedge starts, and the attempts in flight
/// go on) or would retry it with no attempt left in ``maximumAttempts``. The request still ends with exactly one outcome.
///
/// **A delay learned, not chosen.** ``init(learning:maximumInFlight:maximumAttempts:)`` takes the delay of each host
/// from a ``HedgingDelayLearner``: the latency that 2% of its answers exceed (by default), with hedges capped at that
/// share of its rounds.
///
/// ```swift
/// // A second attempt when the first has not answered in 150 ms (about the service's p95).
/// let session = Session(retriers: [RetryPolicy()], hedging: Hedging(delay: .milliseconds(150)))
/// ```
public struct Hedging: Sendable, Hashable {
    /// No hedging: for a request of a hedging session that must not be hedged, `hedging: .off`.
    public static let off = Hedging(checkedDelay: .zero, maximumInFlight: 1, maximumAttempts: 1)
    /// The default ``maximumInFlight``: 2, the first attempt and one hedge (Polly's default).
    public static let defaultMaximumInFlight = 2
    /// The default ``maximumAttempts``: 3, as many as ``RetryPolicy`` makes by default.
    public static let defaultMaximumAttempts = 3
    /// The most attempts in flight at once that any setting may ask for: 5, gRPC's cap.
    public static let maximumInFlightCap = 5

    /// How long the session waits for an answer before it starts the next hedge; zero starts them all at once. No
    /// default: set it near the latency a response rarely exceeds (the service's p90 to p99), which no library can
    /// know. With a ``learner``, its shortest delay: each host's is learned.
    public let delay: Duration
    /// Where each host's delay is learned, and its hedges capped; `nil` for the fixed ``delay``.
    public let learner: HedgingDelayLearner?
    /// How many attempts of one request may be in flight at once, the first included, from 1 (no hedging) to 5; 2 by
    /// default.
    public let maximumInFlight: Int
    /// How many attempts one request makes at most, hedges and retries together; at least 1, 3 by default.
    ///
    /// Settings that never let a second attempt start (this or ``maximumInFlight`` at 1, as ``off`` has) turn hedging
    /// off altogether, this limit included: the retriers' own limits apply.
    public let maximumAttempts: Int

    /// Creates the settings from values written in code; an invalid one traps with a message that names it.
    ///
    /// - Parameters:
    ///   - delay: The wait before each hedge, zero or more; zero starts every hedge at once.
    ///   - maximumInFlight: The attempts in flight at once, first included, from 1 to 5; 2 by default.
    ///   - maximumAttempts: The attempts of one request in all, hedges and retries together, at least 1; 3 by
    ///     default.
    public init(
        delay: Duration, maximumInFlight: Int = defaultMaximumInFlight, maximumAttempts: Int = defaultMaximumAttempts
    ) {
        ConfigurationError.trapIfInvalid { () throws(ConfigurationError) in
            try Self.check(delay: delay, maximumInFlight: maximumInFlight, maximumAttempts: maximumAttempts)
        }
        self.init(checkedDelay: delay, maximumInFlight: maximumInFlight, maximumAttempts: maximumAttempts)
    }

    /// Creates settings whose delay `learner` learns for each host, with its hedges capped at a share of the host's
    /// rounds (see ``HedgingDelayLearner``); an invalid limit traps with a message that names it.
    ///
    /// - Parameters:
    ///   - learner: Where each host's delay is learned: share one between the sessions that talk to the same hosts.
    ///   - maximumInFlight: The attempts in flight at once, first included, from 1 to 5; 2 by default.
    ///   - maximumAttempts: The attempts of one request in all, hedges and retries together, at least 1; 3 by
    ///     default.
    public init(
        learning learner: HedgingDelayLearner, maximumInFlight: Int = defaultMaximumInFlight,
        maximumAttempts: Int = defaultMaximumAttempts
    ) {
        let delay = learner.configuration.minimumDelay
        ConfigurationError.trapIfInvalid { () throws(ConfigurationError) in
            try Self.check(delay: delay, maximumInFlight: maximumInFlight, maximumAttempts: maximumAttempts)
        }
        self.init(
            checkedDelay: delay, maximumInFlight: maximumInFlight, maximumAttempts: maximumAttempts, learner: learner)
    }

    /// Creates the settings from values that arrive at run time (remote configuration, say), throwing
    /// ``ConfigurationError`` for an invalid one; the parameters are those of
    /// ``init(delay:maximumInFlight:maximumAttempts:)``.
    public static func validated(
        delay: Duration, maximumInFlight: Int = defaultMaximumInFlight, maximumAttempts: Int = defaultMaximumAttempts
    ) throws(ConfigurationError) -> Hedging {
        try check(delay: delay, maximumInFlight: maximumInFlight, maximumAttempts: maximumAttempts)
        return Hedging(checkedDelay: delay, maximumInFlight: maximumInFlight, maximumAttempts: maximumAttempts)
    }

    private static func check(delay: Duration, maximumInFlight: Int, maximumAttempts: Int) throws(ConfigurationError) {
        guard delay >= .zero else {
            throw ConfigurationError(field: "Hedging.delay", problem: "must be zero or more, got \(delay)")
        }
        guard (1...maximumInFlightCap).contains(maximumInFlight) else {
            throw ConfigurationError(
                field: "Hedging.maximumInFlight",
                problem: "must be between 1 and \(maximumInFlightCap), got \(maximumInFlight)")
        }
        guard maximumAttempts >= 1 else {
            throw ConfigurationError(
                field: "Hedging.maximumAttempts", problem: "must be 1 or more, got \(maximumAttempts)")
        }
    }

    private init(
        checkedDelay: Duration, maximumInFlight: Int, maximumAttempts: Int, learner: HedgingDelayLearner? = nil
    ) {
        self.delay = checkedDelay
        self.maximumInFlight = maximumInFlight
        self.maximumAttempts = maximumAttempts
        self.learner = learner
    }

    /// Whether both are the same settings: the same numbers, and the same learner (the same instance) or none.
    public static func == (lhs: Hedging, rhs: Hedging) -> Bool {
        lhs.delay == rhs.delay && lhs.maximumInFlight == rhs.maximumInFlight
            && lhs.maximumAttempts == rhs.maximumAttempts
            && lhs.learner.map(ObjectIdentifier.init)
                == rhs.learner.map(ObjectIdentifier.init)
    }

    /// Hashes the numbers and the learner's identity.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(delay)
        hasher.combine(maximumInFlight)
        hasher.combine(maximumAttempts)
        hasher.combine(learner.map(ObjectIdentifier.init))
    }

    /// Whether a request with these settings may ever have a second attempt in flight.
    var hedges: Bool { maximumInFlight > 1 && maximumAttempts > 1 }
}
