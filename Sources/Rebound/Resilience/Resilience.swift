import Foundation

/// Rebound's recommended resilience chain in one value, for `Session(resilience: .recommended)`: an adaptive throttle,
/// a circuit breaker per host, a ratio retry budget, jittered exponential backoff and a deadline.
///
/// **The parts, in the order they run.** Adapters: ``throttle`` (rejects part of a failing host's requests before
/// they leave the client), ``breakers`` (fails requests to a host that keeps failing at once), ``budget`` (retries at
/// most a tenth of each host's traffic); then the session's own adapters. Retriers: the session's own, then
/// ``retryPolicy``. Every request ends at ``deadline``. The cheap local refusals come first, so that a refused request
/// costs nothing else, and the retries are bounded by the budget and the breaker together: see the
/// [Resilience](doc:ResilienceGuide) guide, and the storm simulator's numbers for this preset.
///
/// **Sharing.** The throttle, the breakers and the budget keep their state per host: every session given the same
/// `Resilience` shares it, which is what a process wants (one view of each host). ``recommended`` is one such value for
/// the whole process. Make a `Resilience` of your own to keep a set of sessions apart, to time it on a test clock, or
/// to change a part.
///
/// **Shadow mode.** `Resilience(enforcement: .shadow)` makes the throttle, the breakers and the budget decide as usual
/// and refuse nothing (``Enforcement/shadow``): each refusal one of them would have made is told to the observers as a
/// ``ShadowRefusal``, and the requests go on. As no part refuses, each sees the traffic it would see alone: what a part
/// tells is what it would refuse were it the only part enforced. The retry policy and the deadline apply as usual.
///
/// Hedging is off: it is for requests that may be repeated, and a session asks for it with `hedging:` and a delay
/// that suits its service (`Session(resilience: .recommended, hedging: Hedging(delay: .milliseconds(150)))`).
///
/// ```swift
/// let session = Session(resilience: .recommended)
/// ```
public final class Resilience: Sendable {
    /// One `Resilience` with every default, shared by the whole process.
    public static let recommended = Resilience()

    /// The adaptive throttle; by default Google SRE's rule (K = 2, at most 90% rejected, nothing below 10 requests)
    /// over a 5 s window, counting only what reached the host, so that a recovered host gets its traffic back within
    /// seconds.
    public let throttle: AdaptiveThrottle
    /// The circuit breakers, one per host; by default 5 consecutive failures trip one, for a break of 0.25 to 0.5 s
    /// that does not grow, so that a recovered host is found within half a second (``CircuitBreaker``'s own default
    /// grows its break in a long outage, which sends less but finds the host later); a `Retry-After` or
    /// `retry-after-ms` on the failure that trips one keeps it open that long.
    public let breakers: CircuitBreakerRegistry
    /// The retry budget; by default retries are at most 10% of each host's requests over 10 s, plus one a second.
    public let budget: RetryBudget
    /// The retry policy; by default Alamofire's (2 retries of idempotent requests after 408, 500, 502, 503 and 504, a
    /// 429 with `Retry-After`, and 18 transient `URLError` codes, 0.5 s × 2ⁿ) with full jitter (each delay is drawn in
    /// `0 ..< 0.5 × 2ⁿ` s), no third attempt after two that failed the same way
    /// (``RetryPolicy/stopsAfterRepeatedFailure``), the server's own signals read beside `Retry-After`
    /// (``RetryAfter/Signals/all``: `retry-after-ms`, and `x-should-retry`, which it obeys), and up to 2 retries of any
    /// method, POST included, after an attempt that never reached the server (``RetryPolicy/unsentRetryLimit``: a
    /// refused connection, a DNS failure, a failed TLS handshake).
    public let retryPolicy: RetryPolicy
    /// The total time limit of each request, all attempts and backoffs included; 30 s by default.
    public let deadline: Duration?

    /// Creates the recommended parts, timed on `clock` and drawing from `random`.
    ///
    /// - Parameters:
    ///   - clock: The clock the parts' windows, breaks and delays are measured on; `ContinuousClock` by default.
    ///   - random: Where the jitter, the breakers' breaks and the throttle's draws come from; ``RandomSource/system``
    ///     by default (``RandomSource/seeded(_:)`` makes them reproducible).
    ///   - deadline: The total time limit of each request; 30 s by default, `nil` for none.
    ///   - enforcement: ``Enforcement/enforced`` (the default) for parts that refuse as they decide,
    ///     ``Enforcement/shadow`` for a throttle, breakers and budget that refuse nothing and tell the observers each
    ///     refusal they would have made.
    public convenience init<C: Clock>(
        clock: C = ContinuousClock(), random: RandomSource = .system, deadline: Duration? = .seconds(30),
        enforcement: Enforcement = .enforced
    ) where C.Duration == Duration {
        self.init(
            throttle: AdaptiveThrottle(
                configuration: .init(window: .seconds(5), countsRejections: false), clock: clock, random: random,
                enforcement: enforcement),
            breakers: CircuitBreakerRegistry(
                configuration: .init(
                    breakDuration: .constant(.milliseconds(500)).equalJitter(using: random),
                    retryAfter: RetryAfter(signals: .all)),
                clock: clock, enforcement: enforcement),
            budget: RetryBudget(ratio: .default, clock: clock, enforcement: enforcement),
            retryPolicy: RetryPolicy(
                backoff: RetryPolicy().backoff.fullJitter(using: random), retryAfter: RetryAfter(signals: .all),
                stopsAfterRepeatedFailure: true, unsentRetryLimit: 2),
            deadline: deadline)
    }

    /// Creates a chain of the parts given, in the preset's order.
    ///
    /// - Parameters:
    ///   - throttle: The adaptive throttle.
    ///   - breakers: The circuit breakers.
    ///   - budget: The retry budget.
    ///   - retryPolicy: The retry policy.
    ///   - deadline: The total time limit of each request; `nil` for none.
    public init(
        throttle: AdaptiveThrottle, breakers: CircuitBreakerRegistry, budget: RetryBudget, retryPolicy: RetryPolicy,
        deadline: Duration?
    ) {
        self.throttle = throttle
        self.breakers = breakers
        self.budget = budget
        self.retryPolicy = retryPolicy
        self.deadline = deadline
    }

    /// The adapters, in order: the throttle, the breakers, the budget.
    public var adapters: [any RequestAdapter] { [throttle, breakers, budget] }

    /// The retriers: the retry policy.
    public var retriers: [any RequestRetrier] { [retryPolicy] }
}

extension Session {
    /// Creates a session on a ``Resilience`` chain: its adapters run before `adapters` (after `endpointGroup`, if
    /// given), its retry policy is asked after `retriers`, and its deadline is the session's.
    ///
    /// - Parameters:
    ///   - transport: The transport; `URLSessionHTTPTransport()` by default.
    ///   - resilience: The chain; ``Resilience/recommended`` for the process-wide one.
    ///   - endpointGroup: A service at several base URLs, whose requests go to its endpoints (see ``EndpointGroup``);
    ///     it adapts first, so that the chain's throttle, breakers and budget keep each endpoint apart, by its host.
    ///     None by default. Give it the chain's ``Resilience/breakers`` (`EndpointGroup(..., breakers:)`) to keep an
    ///     endpoint whose breaker is open out of rotation.
    ///   - adapters: Adapters of your own, run after the chain's (a credential, a header); none by default.
    ///   - retriers: Retriers of your own, asked before the chain's retry policy; none by default.
    ///   - interceptor: An interceptor of your own (an ``AuthenticationInterceptor``), which adapts after `adapters`
    ///     and is asked last; none by default.
    ///   - observers: Observers told how every attempt and request ended; none by default.
    ///   - validator: Decides which responses are failures; 2xx passes by default.
    ///   - attemptTimeout: The time limit of each attempt; none by default.
    ///   - redirectHandler: Decides which redirects are followed; `Redirector.follow` by default.
    ///   - hedging: When requests that may be repeated get another attempt beside a slow one (see ``Hedging``); off
    ///     by default. Hedges spend from the chain's budget and pass its throttle and breakers.
    ///   - clock: The clock backoffs are slept on and attempts timed with; `ContinuousClock` by default (give the
    ///     parts of a test's `Resilience` the same clock).
    public convenience init<C: Clock>(
        transport: any HTTPTransport = URLSessionHTTPTransport(),
        resilience: Resilience,
        endpointGroup: EndpointGroup? = nil,
        adapters: [any RequestAdapter] = [],
        retriers: [any RequestRetrier] = [],
        interceptor: (any RequestInterceptor)? = nil,
        observers: [any AttemptObserver] = [],
        validator: any ResponseValidator = .successfulStatusCodes,
        attemptTimeout: Duration? = nil,
        redirectHandler: any RedirectHandler = Redirector.follow,
        hedging: Hedging? = nil,
        clock: C = ContinuousClock()
    ) where C.Duration == Duration {
        let group: [any RequestAdapter] = endpointGroup.map { [$0] } ?? []
        self.init(
            transport: transport, adapters: group + resilience.adapters + adapters,
            retriers: retriers + resilience.retriers,
            interceptor: interceptor, observers: observers, validator: validator, deadline: resilience.deadline,
            attemptTimeout: attemptTimeout, redirectHandler: redirectHandler, hedging: hedging, clock: clock)
    }
}
