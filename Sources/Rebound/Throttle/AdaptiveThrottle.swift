import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Rejects part of a host's requests on the client while the host keeps failing or throttling, before they cost it
/// anything: the client-side throttling of Google's SRE book ("Handling Overload").
///
/// **The rule.** For each host (``CircuitBreakerRegistry/hostKey(for:)`` by default) the throttle counts, over a
/// sliding ``Configuration/window``, the attempts it was asked to let through (*requests*, the ones it rejected
/// included) and those the host accepted (*accepts*: any response but a 5xx, 408 or 429, as a breaker counts them;
/// an attempt that was never sent counts for nothing). It rejects each attempt with probability
///
///     max(0, (requests − multiplier × accepts) / (requests + 1))
///
/// capped at ``Configuration/maximumRejection``, and rejects nothing while the window holds fewer than
/// ``Configuration/minimumRequests``. With the default multiplier of 2, a host that accepts half the requests or more
/// sees every one of them; one that accepts a third sees about a third fewer; one that accepts nothing sees a tenth
/// (the cap). The rejected requests never leave the client, so a struggling host gets the room to recover, and the
/// throttle lets more through as soon as what it lets through is accepted again.
///
/// **A rejection** fails the attempt with ``AdaptiveThrottleRejection`` (as
/// ``ReboundError/Reason/adaptationFailed(error:)``; its ``ReboundError/Reason/errorType`` is `throttled`), which
/// ``RetryPolicy`` does not retry. A retry is drawn for once, when it is granted: the throttle is also the request's
/// ``RetryGate``, so a retry it would reject is refused before its backoff (as
/// ``ReboundError/Reason/retryAborted(error:original:)``), and a granted one is not drawn for again when it is sent.
///
/// **Placement and sharing.** Put it in a chain's adapters, before a ``CircuitBreakerRegistry`` (a request the
/// throttle rejects then takes no trial of a half-open breaker). It registers through the request's context to hear
/// how the attempts it let through end, so it keeps working inside any wrapper that forwards `adapt`. One throttle
/// holds the counts of every host it sees, behind one lock: share one instance between the sessions that talk to the
/// same hosts, as you share a ``RetryBudget``.
///
/// Made with `enforcement: .shadow`, it draws and counts as above and rejects nothing: each rejection it would have
/// made is told to the observers instead (``Enforcement``, ``ShadowRefusal``, reason ``StopReason/throttled``), and a
/// request it would have rejected goes on unseen by it (it counts none of its later attempts and draws for none of its
/// retries), so that its counts and draws stay those of the throttle enforced.
///
/// ```swift
/// let throttle = AdaptiveThrottle()
/// let session = Session(adapters: [throttle, CircuitBreakerRegistry()], retriers: [RetryPolicy()])
/// ```
public final class AdaptiveThrottle: RequestAdapter, RetryGate {
    /// The throttle's numbers.
    public struct Configuration: Sendable, Equatable {
        /// The SRE book's rule with a multiplier of 2 over a 10 s window, rejecting at most 90% and nothing below 10
        /// requests.
        public static let `default` = Configuration(
            checkedMultiplier: 2, window: .seconds(10), maximumRejection: 0.9, minimumRequests: 10,
            countsRejections: true)

        /// How many requests per accepted one the host may be sent before the throttle rejects any (the book's K);
        /// `2` by default. Lower rejects sooner; 1 rejects as soon as anything fails.
        public let multiplier: Double
        /// The sliding window requests and accepts are counted over; 10 s by default (the book uses two minutes for
        /// traffic between backends; a shorter window forgets an outage sooner).
        public let window: Duration
        /// The highest probability of rejection; `0.9` by default, so that a tenth of the requests still reach a host
        /// that accepted nothing. The rule alone tends to 1 in a total outage, and then finds the recovered host only
        /// after many windows, since it counts its own rejections as requests.
        public let maximumRejection: Double
        /// The fewest requests in the window before anything is rejected; `10` by default, so that a quiet client's
        /// one failure is not taken for a pattern.
        public let minimumRequests: Int
        /// Whether a request the throttle rejects counts as a request, as the book's rule has it; `true` by default.
        ///
        /// Counted, rejections keep the probability up while the host refuses, and after the host recovers the
        /// throttle lets more through only as fast as what it lets through is accepted: about twice as many each
        /// window, from a tenth. Not counted (Envoy's admission control counts only what reached the host), the
        /// probability follows the host's own answers and falls as soon as the host accepts as many as it refused
        /// within the window.
        public let countsRejections: Bool

        /// Creates the numbers from values written in code; an invalid one traps.
        ///
        /// - Parameters:
        ///   - multiplier: At least 1; 2 by default.
        ///   - window: At least 1 ms; 10 s by default.
        ///   - maximumRejection: Between 0 and 1; 0.9 by default.
        ///   - minimumRequests: 0 or more; 10 by default.
        ///   - countsRejections: Whether rejected requests count as requests; `true` by default.
        public init(
            multiplier: Double = 2, window: Duration = .seconds(10), maximumRejection: Double = 0.9,
            minimumRequests: Int = 10, countsRejections: Bool = true
        ) {
            ConfigurationError.trapIfInvalid { () throws(ConfigurationError) in
                try Self.check(
                    multiplier: multiplier, window: window, maximumRejection: maximumRejection,
                    minimumRequests: minimumRequests)
            }
            self.init(
                checkedMultiplier: multiplier, window: window, maximumRejection: maximumRejection,
                minimumRequests: minimumRequests, countsRejections: countsRejections)
        }

        /// Creates the numbers from values that arrive at run time, throwing ``ConfigurationError`` for an invalid
        /// one; the parameters are those of
        /// ``init(multiplier:window:maximumRejection:minimumRequests:countsRejections:)``.
        public static func validated(
            multiplier: Double = 2, window: Duration = .seconds(10), maximumRejection: Double = 0.9,
            minimumRequests: Int = 10, countsRejections: Bool = true
        ) throws(ConfigurationError) -> Configuration {
            try check(
                multiplier: multiplier, window: window, maximumRejection: maximumRejection,
                minimumRequests: minimumRequests)
            return Configuration(
                checkedMultiplier: multiplier, window: window, maximumRejection: maximumRejection,
                minimumRequests: minimumRequests, countsRejections: countsRejections)
        }

        private static func check(
            multiplier: Double, window: Duration, maximumRejection: Double, minimumRequests: Int
        ) throws(ConfigurationError) {
            guard multiplier.isFinite, multiplier >= 1 else {
                throw ConfigurationError(
                    field: "AdaptiveThrottle.Configuration.multiplier", problem: "must be at least 1, got \(multiplier)"
                )
            }
            guard window >= .milliseconds(1) else {
                throw ConfigurationError(
                    field: "AdaptiveThrottle.Configuration.window", problem: "must be at least 1 ms, got \(window)")
            }
            guard maximumRejection.isFinite, (0...1).contains(maximumRejection) else {
                throw ConfigurationError(
                    field: "AdaptiveThrottle.Configuration.maximumRejection",
                    problem: "must be between 0 and 1, got \(maximumRejection)")
            }
            guard minimumRequests >= 0 else {
                throw ConfigurationError(
                    field: "AdaptiveThrottle.Configuration.minimumRequests",
                    problem: "must be 0 or more, got \(minimumRequests)")
            }
        }

        private init(
            checkedMultiplier: Double, window: Duration, maximumRejection: Double, minimumRequests: Int,
            countsRejections: Bool
        ) {
            self.multiplier = checkedMultiplier
            self.window = window
            self.maximumRejection = maximumRejection
            self.minimumRequests = minimumRequests
            self.countsRejections = countsRejections
        }

        /// The probability of rejecting a request, given the window's counts.
        func rejectionProbability(requests: Int, accepts: Int) -> Double {
            guard requests >= minimumRequests, requests > 0 else { return 0 }
            let rule = (Double(requests) - multiplier * Double(accepts)) / (Double(requests) + 1)
            return min(max(rule, 0), maximumRejection)
        }
    }

    /// What the throttle counts for one host now: a pure read, for a gauge.
    public struct Snapshot: Sendable, Equatable {
        /// The requests in the window, rejected ones included.
        public let requests: Int
        /// The requests in the window the host accepted.
        public let accepts: Int
        /// The probability that the next request is rejected.
        public let rejectionProbability: Double
    }

    private struct State: Sendable {
        /// Each host's requests (first) and accepts (second); a host whose window is empty is at rest.
        var tallies: HostTable<SlidingTally>
        /// For each request asked about a retry: the number of the failed attempt, counted when the retry was asked
        /// for (so that it is not counted again when it is settled), whose retry was drawn for then (so that it is not
        /// drawn for again when it is sent).
        var granted: [UUID: Int] = [:]
    }

    /// The throttle's numbers.
    public let configuration: Configuration
    /// Whether it rejects as it draws, or only tells of its rejections (``Enforcement/shadow``); enforced by default.
    public let enforcement: Enforcement

    private let keyFunction: CircuitBreakerRegistry.KeyFunction
    private let classify: (@Sendable (AttemptOutcome) -> CircuitBreaker.Verdict)?
    private let random: RandomSource
    private let state: Locked<State>
    private let now: @Sendable () -> Duration

    /// Creates a throttle.
    ///
    /// - Parameters:
    ///   - configuration: The rule's numbers; ``Configuration/default`` by default.
    ///   - key: Picks the host whose counts a request joins, or `nil` for a request never throttled;
    ///     ``CircuitBreakerRegistry/hostKey(for:)`` (the host, and the port when the URL names one) by default.
    ///   - clock: The clock the window slides on; `ContinuousClock` by default.
    ///   - random: Where the draws come from; ``RandomSource/system`` by default (``RandomSource/seeded(_:)`` makes
    ///     them reproducible).
    ///   - classify: Whether an attempt the throttle let through was accepted (``CircuitBreaker/Verdict/success``),
    ///     not accepted (``CircuitBreaker/Verdict/failure``) or is not counted (``CircuitBreaker/Verdict/ignored``);
    ///     asked only about attempts that were sent. `nil`, the default, is ``CircuitBreaker/defaultVerdict(for:)``.
    ///   - maximumHosts: The most hosts whose counts the throttle keeps, at least 1; 10,000 by default. A host whose
    ///     window is empty and that was not used lately is forgotten; at the cap, a new host makes the throttle forget
    ///     the host it used least lately (see <doc:SecurityGuide>).
    ///   - enforcement: ``Enforcement/enforced`` (the default) to reject as it draws, ``Enforcement/shadow`` to reject
    ///     nothing and tell the observers each rejection it would have made.
    public init<C: Clock>(
        configuration: Configuration = .default,
        key: @escaping CircuitBreakerRegistry.KeyFunction = CircuitBreakerRegistry.hostKey,
        clock: C = ContinuousClock(), random: RandomSource = .system,
        classify: (@Sendable (AttemptOutcome) -> CircuitBreaker.Verdict)? = nil,
        maximumHosts: Int = 10_000, enforcement: Enforcement = .enforced
    ) where C.Duration == Duration {
        HostTable<SlidingTally>.trapIfInvalid(maximumHosts, owner: "AdaptiveThrottle")
        self.state = Locked(State(tallies: HostTable(capacity: maximumHosts)))
        self.configuration = configuration
        self.enforcement = enforcement
        self.keyFunction = key
        self.classify = classify
        self.random = random
        self.now = SessionClock(clock).now
    }

    /// The counts of `key`'s window and the probability of rejecting its next request; reading changes nothing.
    public func snapshot(for key: String) -> Snapshot {
        let now = now()
        let (requests, accepts) = state.withLock { state in
            state.tallies[key]?.totals(at: now, window: configuration.window) ?? (0, 0)
        }
        return Snapshot(
            requests: requests, accepts: accepts,
            rejectionProbability: configuration.rejectionProbability(requests: requests, accepts: accepts))
    }

    /// The snapshot of the host a request to `url` counts for; `nil` for a request never throttled.
    public func snapshot(for url: URL) -> Snapshot? {
        keyFunction(URLRequest(url: url)).map { snapshot(for: $0) }
    }

    /// Lets the attempt through and registers, through the context, to hear how it ends, or throws
    /// ``AdaptiveThrottleRejection``, counting the rejected request.
    public func adapt(_ request: consuming URLRequest, context: RequestContext) async throws -> URLRequest {
        try admit(request, context: context)
        return request
    }

    /// Lets the attempt through and registers, or throws the rejection; a request without a key goes through.
    fileprivate func admit(_ request: URLRequest, context: RequestContext) throws(AdaptiveThrottleRejection) {
        guard let key = keyFunction(request), !isUnseen(context.attempt, ledger: context.ledger) else { return }
        if let drawn = admit(key, requestID: context.requestID, attempt: context.attempt) {
            // In shadow mode the request goes on, unseen by the throttle from now on: it registers for nothing.
            if let rejection = rejectionToThrow(
                drawn, attempt: context.attempt, stage: .attempt, of: context.requestID, ledger: context.ledger)
            {
                throw rejection
            }
            return
        }
        context.settleAndAdmitRetries(through: self)
        // A first attempt is drawn for here: a later adapter that moves it to another host has the session have the
        // throttle draw for that host instead, whose tally counts the attempt's outcome.
        if context.attempt == 1 { context.admitted(by: self, under: key, at: request.url) }
    }

    /// The key the throttle draws for `request` under.
    func admissionKey(for request: URLRequest) -> String? {
        keyFunction(request)
    }

    /// Draws for `context`'s first attempt under `key`, the host it is sent to: the draw under `admitted` took nothing
    /// to give back (a rejection is counted, a request let through is counted when it ends, under the host it was sent
    /// to).
    func readmit(_ context: RequestContext, from admitted: String, to key: String?) async throws {
        if let key, let drawn = admit(key, requestID: context.requestID, attempt: context.attempt),
            let rejection = rejectionToThrow(
                drawn, attempt: context.attempt, stage: .attempt, of: context.requestID, ledger: context.ledger)
        {
            throw rejection
        }
    }

    /// Whether a throttle in shadow mode no longer sees `attempt` of the request whose ledger is `ledger`: it would
    /// have rejected the request, or this hedge; always `false` enforced.
    private func isUnseen(_ attempt: Int, ledger: RequestLedger?) -> Bool {
        guard enforcement == .shadow, let ledger else { return false }
        return ledger.isShadowed(attempt: attempt, for: ObjectIdentifier(self))
    }

    /// The rejection to throw (or, from a gate, to return) for `rejection`, the throttle's draw for `attempt` (of
    /// `stage`): `rejection` itself, enforced; `nil` in shadow mode, once `rejection` was told through `ledger` as the
    /// one the throttle would have made, after which it no longer sees the request (the hedge alone, for a hedge).
    private func rejectionToThrow(
        _ rejection: AdaptiveThrottleRejection, attempt: Int, stage: ShadowRefusal.Stage, of requestID: UUID,
        ledger: RequestLedger?
    ) -> AdaptiveThrottleRejection? {
        guard enforcement == .shadow else { return rejection }
        ledger?.refuseInShadow(
            ShadowRefusal(
                requestID: requestID, attempt: attempt, stage: stage, reason: .throttled, part: "AdaptiveThrottle",
                key: rejection.key, error: rejection),
            by: ObjectIdentifier(self))
        return nil
    }

    /// Draws for a first attempt of `key`'s host (a retry was drawn for when it was granted, a hedge before it
    /// started), counting it as a request if it is rejected; returns the rejection, or `nil` to let it through.
    private func admit(_ key: String, requestID: UUID, attempt: Int) -> AdaptiveThrottleRejection? {
        let now = now()
        return state.withLock { state in
            // Every later attempt was drawn for already: a retry when it was granted, a hedge before it started.
            if attempt > 1 {
                if !state.granted.isEmpty, state.granted[requestID] == attempt - 1 { state.granted[requestID] = nil }
                return nil
            }
            return Self.draw(key, in: &state, now: now, configuration: configuration, random: random)
        }
    }

    /// How an attempt that was sent counts: accepted, not accepted, or not at all (`nil`); `outcome` builds its
    /// ``AttemptOutcome`` for a `classify` of the caller's own.
    private func accepted(_ attempt: Attempt, outcome: () -> AttemptOutcome) -> Bool? {
        switch CircuitBreaker.verdict(for: attempt, classify: classify, outcome: outcome) {
        case .success: true
        case .failure: false
        case .ignored: nil
        }
    }

    /// Draws for a request of `key`'s host with the window's probability; a rejected one is counted as a request.
    private static func draw(
        _ key: String, in state: inout State, now: Duration, configuration: Configuration, random: RandomSource
    ) -> AdaptiveThrottleRejection? {
        let (requests, accepts) = state.tallies[key]?.totals(at: now, window: configuration.window) ?? (0, 0)
        let probability = configuration.rejectionProbability(requests: requests, accepts: accepts)
        guard probability > 0, random.unitInterval() < probability else { return nil }
        guard configuration.countsRejections else {
            return AdaptiveThrottleRejection(
                key: key, rejectionProbability: probability, requests: requests, accepts: accepts)
        }
        add(requests: 1, accepts: 0, for: key, to: &state, now: now, window: configuration.window)
        return AdaptiveThrottleRejection(
            key: key, rejectionProbability: probability, requests: requests + 1, accepts: accepts)
    }

    /// Adds to `key`'s counts; a host seen for the first time may make the throttle forget hosts whose windows are
    /// empty (see `HostTable`).
    private static func add(
        requests: Int, accepts: Int, for key: String, to state: inout State, now: Duration, window: Duration
    ) {
        let isAtRest = { (tally: SlidingTally) in tally.isEmpty(at: now, window: window) }
        state.tallies.update(key, make: SlidingTally.init, isAtRest: isAtRest) {
            $0.add(first: requests, second: accepts, at: now, window: window)
        }
        // A step of the hand on every count (after it: the host just counted is marked used, and stays), and every
        // host whose window is empty once a window, so that hosts gone idle are forgotten though no new host comes.
        state.tallies.forgetIdle(at: now, every: window, isAtRest: isAtRest)
    }

    /// How many requests' retries the throttle keeps a record of; for tests that check nothing is kept.
    package var grantsKept: Int { state.withLock { $0.granted.count } }

    /// How many hosts' counts the throttle keeps; for tests that check it forgets.
    package var hostsKept: Int { state.withLock { $0.tallies.count } }
}

extension AdaptiveThrottle: HostAdmission {}

extension AdaptiveThrottle: AdaptsInPlace {
    /// Admits the attempt as ``adapt(_:context:)`` does, leaving the request unchanged.
    var adaptInPlace: Adapter.ModifyNowHandler? {
        { [self] request, context in try admit(request, context: context) }
    }
}

// The session tells the throttle how the attempts it let through end directly (see `AttemptAccountant`), and asks it
// about the request's retries.
extension AdaptiveThrottle: AttemptAccountant {
    /// Counts the failed attempt, then draws for the retry with the probability that results, so that a retry the
    /// throttle would reject is refused before its backoff rather than after it; a granted retry is not drawn for
    /// again when it is sent.
    public func admitRetry(_ request: RetryRequest, dueTo error: ReboundError, after delay: Duration) -> (any Error)? {
        guard let key = keyFunction(request.admittedRequest), let failed = request.attempts.last else { return nil }
        // In shadow mode, a request the throttle would have rejected goes on unseen by it; a hedge it would have
        // rejected that failed last is not counted, and the retry is drawn for as the one after the round would be.
        if enforcement == .shadow, let ledger = request.ledger, ledger.isWhollyShadowed(for: ObjectIdentifier(self)) {
            return nil
        }
        let counted =
            failed.request == nil || isUnseen(failed.number, ledger: request.ledger)
            ? nil
            : accepted(failed) {
                AttemptOutcome(
                    requestID: request.requestID, label: request.label, original: request.original, attempt: failed,
                    data: request.data, decision: .retry(after: delay), endpoint: request.placement(of: failed))
            }
        let now = now()
        let rejection = state.withLock { state -> AdaptiveThrottleRejection? in
            if let counted {
                Self.add(
                    requests: 1, accepts: counted ? 1 : 0, for: key, to: &state, now: now,
                    window: configuration.window)
            }
            // Kept whatever the draw: the failed attempt is settled after this, and must not be counted again.
            state.granted[request.requestID] = failed.number
            return Self.draw(key, in: &state, now: now, configuration: configuration, random: random)
        }
        return rejection.flatMap {
            rejectionToThrow($0, attempt: failed.number, stage: .retry, of: request.requestID, ledger: request.ledger)
        }
    }

    func settle(_ attempt: Attempt, of requestID: UUID, ledger: RequestLedger, outcome: () -> AttemptOutcome) {
        // Only an attempt that was sent tells anything about the host; a rejected one was counted when it was.
        // Counted under the host it was drawn for, whatever its redirects (see `Attempt.admittedRequest`).
        guard let sent = attempt.admittedRequest, let key = keyFunction(sent), !isUnseen(attempt.number, ledger: ledger)
        else { return }
        // A failed attempt whose retry was asked for was counted then.
        if state.withLock({ !$0.granted.isEmpty && $0.granted[requestID] == attempt.number }) { return }
        guard let counted = accepted(attempt, outcome: outcome) else { return }
        let now = now()
        state.withLock { state in
            Self.add(
                requests: 1, accepts: counted ? 1 : 0, for: key, to: &state, now: now, window: configuration.window)
        }
    }

    /// Draws for a hedge as for a request, before it starts: a hedge the throttle would reject is not started (and is
    /// counted as a rejected request, as any), and one drawn for is not drawn for again when it is adapted (no attempt
    /// after the first is).
    func admitHedge(
        _ request: URLRequest, of requestID: UUID, attempt: Int, after failed: Attempt?, roles: RegisteredRoles
    ) -> (any Error)? {
        guard let key = keyFunction(request), !isUnseen(attempt, ledger: roles.ledger) else { return nil }
        let now = now()
        let rejection = state.withLock { state in
            Self.draw(key, in: &state, now: now, configuration: configuration, random: random)
        }
        // In shadow mode the hedge starts, unseen by the throttle.
        return rejection.flatMap {
            rejectionToThrow($0, attempt: attempt, stage: .hedge, of: requestID, ledger: roles.ledger)
        }
    }

    func requestEnded(_ requestID: UUID) {
        state.withLock { state in
            if !state.granted.isEmpty { state.granted[requestID] = nil }
        }
    }
}

/// The error of an attempt or a retry that an ``AdaptiveThrottle`` rejected on the client.
public struct AdaptiveThrottleRejection: Error, Sendable, Equatable, CustomStringConvertible {
    /// The host's key, usually the host.
    public let key: String
    /// The probability of rejection the request was drawn against.
    public let rejectionProbability: Double
    /// The requests in the window, this one included when the throttle counts its rejections.
    public let requests: Int
    /// The requests in the window the host accepted.
    public let accepts: Int

    /// Creates the error; throttles create these, and test code may too.
    public init(key: String, rejectionProbability: Double, requests: Int, accepts: Int) {
        self.key = key
        self.rejectionProbability = rejectionProbability
        self.requests = requests
        self.accepts = accepts
    }

    /// For example `request to api.example.com rejected by the client's adaptive throttle (probability 0.62: 40
    /// requests, 7 accepted in its window)`.
    public var description: String {
        let probability = (rejectionProbability * 100).rounded() / 100
        return "request to \(key) rejected by the client's adaptive throttle (probability \(probability): "
            + "\(requests) requests, \(accepts) accepted in its window)"
    }
}
