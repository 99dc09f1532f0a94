import Foundation
import Rebound

/// The client-side policies the simulator compares, from none to the whole chain, each built from Rebound's real types.
enum Policy: CaseIterable, Sendable {
    case none
    case naive
    case alamofire
    case jittered
    case budget
    case breaker
    case throttle
    case preset
    case hedged
    case learned
    case grouped
    case paced
    case aws

    /// The policies of the outage scenarios: every one but hedging, which is for slow tails, and pacing, which is for
    /// quotas; the AWS SDKs' retry behavior last, for comparison.
    static let outagePolicies: [Policy] = [
        .none, .naive, .alamofire, .jittered, .budget, .breaker, .throttle, .preset, .aws,
    ]
    /// The policies of the scenario whose server answers `x-should-retry: false`: `RetryPolicy()`, which does not read
    /// the signal, beside the preset, which does.
    static let declinePolicies: [Policy] = [.alamofire, .preset]
    /// The policies of the slow-tail scenario.
    static let tailPolicies: [Policy] = [.none, .preset, .hedged]
    /// The policies of the scenarios of hedging that learns its delay: a slow tail, and a server that slows down.
    static let learnedPolicies: [Policy] = [.none, .preset, .learned]
    /// The policies of the scenario of a service at three endpoints, one of them down.
    static let endpointPolicies: [Policy] = [.preset, .grouped]
    /// The endpoints of ``grouped``: three servers, the request written for the first.
    static let endpoints = 3
    /// The policies of the quota scenario.
    static let quotaPolicies: [Policy] = [.none, .preset, .paced]
    /// The hedging delay of ``hedged``: about the p97 of the slow-tail server's latency.
    static let hedgingDelay = Duration.milliseconds(100)

    /// The name in the table and the chart.
    var name: String {
        switch self {
        case .none: "no retries"
        case .naive: "immediate retries (3)"
        case .alamofire: "RetryPolicy() (Alamofire's defaults)"
        case .jittered: "jittered backoff"
        case .budget: "+ ratio budget"
        case .breaker: "+ circuit breaker"
        case .throttle: "+ adaptive throttle"
        case .preset: "Session(resilience:) (the preset)"
        case .hedged: "the preset + hedging (100 ms)"
        case .learned: "the preset + hedging, delay learned"
        case .grouped: "the preset + an EndpointGroup of the three"
        case .paced: "the preset + RateLimitPacer"
        case .aws: "RetryPolicy.awsRetries2026() + its budget"
        }
    }

    /// Every client gives up on an attempt after this long, and a policy that retries retries it.
    static let attemptTimeout = Duration.seconds(1)

    /// One client's session: its own parts, as each app instance has its own, drawing from `random` and timed on
    /// `clock`, every attempt ending at ``attemptTimeout``.
    func session<C: Clock>(transport: any HTTPTransport, clock: C, random: RandomSource) -> Session
    where C.Duration == Duration {
        let jittered = RetryPolicy(backoff: RetryPolicy().backoff.fullJitter(using: random))
        let breakers = CircuitBreakerRegistry(
            configuration: .init(breakDuration: CircuitBreaker.Configuration.defaultBreakDuration(using: random)),
            clock: clock)
        let budget = RetryBudget(ratio: .default, clock: clock)
        if self == .grouped {
            // Failover among the three, the first first; an endpoint whose breaker is open is out of rotation.
            let resilience = Resilience(clock: clock, random: random)
            let group = EndpointGroup(
                name: "work",
                endpoints: (0..<Self.endpoints).map { .init(URL(string: "https://server\($0).example")!) },
                breakers: resilience.breakers, clock: clock)
            return Session(
                transport: transport, resilience: resilience, endpointGroup: group,
                attemptTimeout: Self.attemptTimeout, clock: clock)
        }
        if self == .preset || self == .hedged || self == .learned || self == .paced {
            let hedging: Hedging? =
                switch self {
                case .hedged: Hedging(delay: Self.hedgingDelay)
                // Each client learns its own delay, from its own answers.
                case .learned: Hedging(learning: HedgingDelayLearner(clock: clock))
                default: nil
                }
            return Session(
                transport: transport, resilience: Resilience(clock: clock, random: random),
                adapters: self == .paced ? [RateLimitPacer(clock: clock)] : [], attemptTimeout: Self.attemptTimeout,
                hedging: hedging, clock: clock)
        }
        let (adapters, retriers): ([any RequestAdapter], [any RequestRetrier]) =
            switch self {
            case .none: ([], [])
            case .naive: ([], [Retrier { request, _ in request.retryCount < 3 ? .retryWithDelay(.zero) : .doNotRetry }])
            case .alamofire: ([], [RetryPolicy()])
            case .jittered: ([], [jittered])
            case .budget: ([budget], [jittered])
            case .breaker: ([breakers, budget], [jittered])
            case .throttle: ([AdaptiveThrottle(clock: clock, random: random), breakers, budget], [jittered])
            case .aws:
                ([RetryBudget(configuration: .awsRetries2026)], [RetryPolicy.awsRetries2026(using: random)])
            case .preset, .hedged, .learned, .grouped, .paced: ([], [])
            }
        return Session(
            transport: transport, adapters: adapters, retriers: retriers, attemptTimeout: Self.attemptTimeout,
            clock: clock)
    }
}
