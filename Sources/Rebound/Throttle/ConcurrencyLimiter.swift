import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Limits the attempts in flight to each host, shared by every session it is given to: a bulkhead, so that one slow
/// host cannot take every connection and task of the app, and an overloaded one is not sent more than it can serve.
///
/// **The rule.** An attempt takes one of its host's places when it is adapted and gives it back when it ends, on every
/// path (its answer, before the retriers decide what follows; a cancellation; an attempt that a later adapter or an
/// open breaker stopped); one that a later adapter sends to another host holds that host's place instead, taken after
/// the adapters. When every place is taken, the attempt waits in the host's queue, first come first served, for at most
/// ``Configuration/queueTimeout``; when the queue is full too (or has no room, ``Configuration/maximumQueued`` being
/// 0, the default), it fails at once. Either way the error is ``ConcurrencyLimitExceeded``, which says which limit was
/// hit; it is a ``NonRetryableError``, so no retrier retries it against the same limit at once. A hedge (``Hedging``)
/// starts only while its host has a place free and nobody waits for one: it never queues.
///
/// **The limit** is ``ConcurrencyLimit/fixed(_:)`` (64 by default), or adapts to the host: ``ConcurrencyLimit/aimd(_:)``
/// grows by one while the host keeps up and shrinks by a tenth after a failure; ``ConcurrencyLimit/gradient(_:)``
/// follows the ratio of the host's long-term latency to its latest. An adaptive limit learns from every attempt that
/// was sent, on the limiter's clock.
///
/// **Placement and sharing.** Put it in a chain's adapters, after the adapters that may refuse a request cheaply (an
/// ``AdaptiveThrottle``, a breaker), so that a refused request takes no place; it registers through the request's
/// context to give its place back, so it keeps working inside any wrapper that forwards `adapt`. One limiter keeps
/// every host's places behind one lock: share one instance between the sessions that must share the limit.
///
/// Made with `enforcement: .shadow`, it counts places as above and refuses and queues nobody: an attempt that finds
/// every place of its host taken goes on at once without a place, and the refusal it would have met with no queue is
/// told to the observers instead (``Enforcement``, ``ShadowRefusal``, reason ``StopReason/concurrencyLimit``, limit hit
/// ``ConcurrencyLimitExceeded/LimitHit/inFlight``); the limiter sees no more of that request (of that hedge, for a
/// hedge), as enforced the request would have ended there.
///
/// ```swift
/// let limiter = ConcurrencyLimiter(configuration: .init(limit: .fixed(16), maximumQueued: 32))
/// let session = Session(adapters: [limiter], retriers: [RetryPolicy()])
/// ```
public final class ConcurrencyLimiter: RequestAdapter, RetryGate {

    /// An attempt's place: its host, when it took it, and how many were in flight then (itself included).
    private struct Place: Sendable {
        let key: String
        let since: Duration
        let inFlight: Int
        /// When the attempt got its answer and gave the place back, to be settled later; `nil` while it is in flight.
        var ended: Duration?
    }

    /// An attempt waiting for a place.
    private struct Waiter: Sendable {
        let continuation: CheckedContinuation<Void, any Error>
        /// The task that ends the wait at the queue timeout, attached once started.
        var timer: Task<Void, Never>?
    }

    private struct Host: Sendable {
        var limit: LimitState
        var inFlight = 0
        /// The attempts that gave their place back with their answer and are not settled yet: what an adaptive limit
        /// learns of them comes at their settling, so the host is kept until then.
        var answered = 0
        /// The attempts waiting for a place, first come first served; any of them may leave early.
        var queue = KeyedQueue<AttemptKey, Waiter>()
        /// When a place of the host was last taken or given back, on the limiter's clock.
        var lastActive: Duration

        /// Nothing in flight and nobody waiting: a fixed limit has nothing to remember, an adaptive one only what it
        /// learned, which no longer holds once the host has sat idle a while.
        var isIdle: Bool { inFlight == 0 && answered == 0 && queue.isEmpty }

        /// Idle for ``ConcurrencyLimiter/idleHorizon`` by `now`: what an adaptive limit learned of the host no longer
        /// holds.
        func hasSatIdle(at now: Duration) -> Bool {
            isIdle && now - lastActive >= ConcurrencyLimiter.idleHorizon
        }
    }

    /// How long a host with an adaptive limit sits idle before the limiter forgets it as requests go on to other hosts,
    /// though no new host comes: a minute.
    static let idleHorizon: Duration = .seconds(60)

    private struct State: Sendable {
        /// Each host's places and queue; an idle host is at rest, and a busy one is never forgotten.
        var hosts: HostTable<Host>
        var places: [AttemptKey: Place] = [:]
        /// The host each queued attempt waits for, so that settling an attempt finds its wait.
        var waiting: [AttemptKey: String] = [:]
    }

    /// The limiter's numbers.
    public let configuration: Configuration
    /// Whether it refuses and queues as it counts, or only tells of its refusals (``Enforcement/shadow``); enforced by
    /// default.
    public let enforcement: Enforcement

    private let keyFunction: CircuitBreakerRegistry.KeyFunction
    private let classify: (@Sendable (AttemptOutcome) -> CircuitBreaker.Verdict)?
    private let clock: SessionClock
    private let state: Locked<State>

    /// Creates a limiter.
    ///
    /// - Parameters:
    ///   - configuration: The limit, the queue and its timeout; ``Configuration/default`` (64 per host, no queue).
    ///   - key: Picks the host whose places a request takes, or `nil` for a request never limited;
    ///     ``CircuitBreakerRegistry/hostKey(for:)`` (the host, and the port when the URL names one) by default.
    ///   - clock: The clock the queue timeout and an adaptive limit's latencies are measured on; `ContinuousClock` by
    ///     default.
    ///   - classify: Whether an attempt that was sent failed in a way that tells an adaptive limit the host is
    ///     overloaded (``CircuitBreaker/Verdict/failure``); asked outside the limiter's lock, and never for a fixed
    ///     limit, which learns nothing. `nil`, the default, is ``CircuitBreaker/defaultVerdict(for:)`` (5xx, 408,
    ///     429, transport failures).
    ///   - maximumHosts: How many hosts the limiter keeps, at least 1; 10,000 by default. A host with a fixed limit is
    ///     forgotten as soon as nothing is in flight to it; one with an adaptive limit once it is idle and was not used
    ///     lately. A host with attempts in flight or queued is never forgotten, so at the cap a new host makes the
    ///     limiter forget an idle one among the few it looks at, or else is kept past the cap until idle ones are
    ///     found (see <doc:SecurityGuide>).
    ///   - enforcement: ``Enforcement/enforced`` (the default) to refuse and queue as it counts,
    ///     ``Enforcement/shadow`` to refuse and queue nobody and tell the observers each refusal it would have made.
    public init<C: Clock>(
        configuration: Configuration = .default,
        key: @escaping CircuitBreakerRegistry.KeyFunction = CircuitBreakerRegistry.hostKey,
        clock: C = ContinuousClock(), classify: (@Sendable (AttemptOutcome) -> CircuitBreaker.Verdict)? = nil,
        maximumHosts: Int = 10_000, enforcement: Enforcement = .enforced
    ) where C.Duration == Duration {
        HostTable<Host>.trapIfInvalid(maximumHosts, owner: "ConcurrencyLimiter")
        self.state = Locked(State(hosts: HostTable(capacity: maximumHosts, keepsBusyHosts: true)))
        self.configuration = configuration
        self.enforcement = enforcement
        self.keyFunction = key
        self.classify = classify
        self.clock = SessionClock(clock)
    }

    /// The places of `key`'s host now; reading changes nothing.
    public func snapshot(for key: String) -> Snapshot {
        state.withLock { state in
            guard let host = state.hosts[key] else {
                return Snapshot(limit: LimitState(configuration.limit).current, inFlight: 0, queued: 0)
            }
            return Snapshot(limit: host.limit.current, inFlight: host.inFlight, queued: host.queue.count)
        }
    }

    /// The places of the host a request to `url` takes one of; `nil` for a request never limited.
    public func snapshot(for url: URL) -> Snapshot? {
        keyFunction(URLRequest(url: url)).map { snapshot(for: $0) }
    }

    /// Takes one of the host's places for the attempt, waiting in its queue if there is room there, and registers
    /// through the context to give it back when the attempt ends; throws ``ConcurrencyLimitExceeded`` when the host has
    /// no place and no room in its queue, or the wait times out, and `CancellationError` when the task is cancelled
    /// while it waits. A hedge never waits: it is refused when the host has no place. In shadow mode it never waits, and
    /// throws nothing.
    public func adapt(_ request: consuming URLRequest, context: RequestContext) async throws -> URLRequest {
        guard let key = keyFunction(request) else { return request }
        // A context that cannot register would never give its place back: such an attempt goes through unlimited.
        guard let ledger = context.ledger else { return request }
        // In shadow mode, a request it would have refused goes on unseen by it, as enforced it would have ended.
        if enforcement == .shadow, ledger.isShadowed(attempt: context.attempt, for: ObjectIdentifier(self)) {
            return request
        }
        // Registered before a place is taken, so that an attempt settled while it waits, or just as a place is handed
        // to it (its deadline, the end of a hedged round), gives that place back or leaves the queue.
        context.settleAndAdmitRetries(through: self)
        // A place taken is noted, so that an attempt a later adapter sends to another host holds that host's place
        // instead (``readmit(_:from:to:)``).
        if try await takePlace(of: key, for: context, ledger: ledger) {
            context.admitted(by: self, under: key, at: request.url)
        }
        return request
    }

    /// Takes one of `key`'s places for `context`'s attempt, waiting in the host's queue if there is room there; throws
    /// as ``adapt(_:context:)`` does. Returns whether the attempt holds a place (in shadow mode, one refused goes on
    /// without one).
    private func takePlace(
        of key: String, for context: RequestContext, ledger: RequestLedger, returning: Bool = false
    ) async throws -> Bool {
        let attempt = AttemptKey(requestID: context.requestID, attempt: context.attempt)
        switch take(key, for: attempt, returning: returning) {
        case .taken:
            return true
        case .refused(let error):
            guard enforcement == .shadow else { throw error }
            ledger.refuseInShadow(
                ShadowRefusal(
                    requestID: context.requestID, attempt: context.attempt, stage: .attempt, reason: .concurrencyLimit,
                    part: "ConcurrencyLimiter", key: key, error: error),
                by: ObjectIdentifier(self))
            return false
        case .mustWait:
            // A hedge never queues: the room it found when it was let start went to another request meanwhile.
            if context.isHedge { throw noPlace(for: key) }
            try await wait(key, for: attempt, returning: returning)
            return true
        }
    }

    private enum Taking {
        case taken
        case refused(ConcurrencyLimitExceeded)
        case mustWait
    }

    /// Takes a place at once if there is one (or lets an abandoned attempt through without one), else says whether the
    /// attempt may wait.
    private func take(_ key: String, for attempt: AttemptKey, returning: Bool) -> Taking {
        let now = clock.now()
        return state.withLock { state in
            // A cancelled attempt (abandoned at its deadline, whose end may have been told already) takes no place:
            // nothing might give it back. Checked under the lock: the session cancels an attempt before it settles it.
            if Task.isCancelled { return .taken }
            // A breaker-like part held twice is asked twice for one attempt: it already has its place.
            if state.places[attempt] != nil { return .taken }
            return admission(key, for: attempt, returning: returning, now: now, in: &state)
        }
    }

    /// Gives `attempt` a place of `key`'s host if one is free and nobody waits for one; otherwise refuses it when the
    /// queue has no room, or says it may wait.
    private func admission(
        _ key: String, for attempt: AttemptKey, returning: Bool, now: Duration, in state: inout State
    ) -> Taking {
        let limit = configuration.limit
        // A limiter in shadow mode queues nobody: it judges as with no queue. An attempt that gave its place way while
        // it waited in a later adapter may wait for one again, whatever the queue's size.
        let maximumQueued = enforcement == .shadow ? 0 : returning ? Int.max : configuration.maximumQueued
        // The place's count of attempts in flight, when the attempt took one.
        let (taking, inFlight) = state.hosts.update(
            key, make: { Host(limit: LimitState(limit), lastActive: now) }, isAtRest: { $0.hasSatIdle(at: now) },
            mayMakeRoom: { $0.isIdle }
        ) { host -> (Taking, Int?) in
            // In shadow mode, an attempt back from giving way, which enforced would wait for a place, takes one.
            if host.inFlight < host.limit.current && host.queue.isEmpty || returning && enforcement == .shadow {
                host.inFlight += 1
                host.lastActive = now
                return (.taken, host.inFlight)
            }
            guard host.queue.count < maximumQueued else {
                let refusal = ConcurrencyLimitExceeded(
                    key: key, limitHit: maximumQueued == 0 ? .inFlight : .queue, limit: host.limit.current,
                    inFlight: host.inFlight, queued: host.queue.count)
                return (.refused(refusal), nil)
            }
            return (.mustWait, nil)
        }
        if let inFlight { state.places[attempt] = Place(key: key, since: now, inFlight: inFlight) }
        // A step of the table's hand: hosts that sat idle are forgotten though no new host comes.
        state.hosts.forgetIdle(steps: 1, isAtRest: { $0.hasSatIdle(at: now) })
        return taking
    }

    /// Waits in `key`'s queue until a place is handed over, the queue timeout passes, the task is cancelled or the
    /// attempt is settled.
    private func wait(_ key: String, for attempt: AttemptKey, returning: Bool) async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let now = clock.now()
                // Asked again: places may have been given back, or the queue filled up, since `take`.
                let taking = state.withLock { state -> Taking? in
                    // Cancelled before it queued: the cancellation handler found nothing to end, and the attempt may
                    // have been settled already, so it must not wait for a place nobody would give back.
                    if Task.isCancelled { return nil }
                    let taking = admission(key, for: attempt, returning: returning, now: now, in: &state)
                    if case .mustWait = taking {
                        state.hosts.modify(key) {
                            $0.queue.append(Waiter(continuation: continuation, timer: nil), key: attempt)
                        }
                        state.waiting[attempt] = key
                    }
                    return taking
                }
                switch taking {
                case nil: return continuation.resume(throwing: CancellationError())
                case .mustWait: break
                case .taken: return continuation.resume()
                case .refused(let refusal): return continuation.resume(throwing: refusal)
                }
                let timeout = configuration.queueTimeout
                let clock = clock
                let timer = Spawn.task { [weak self] in
                    guard (try? await clock.sleep(timeout)) != nil else { return }
                    self?.endWait(of: attempt, with: .timedOut)
                }
                let attached: Bool = state.withLock { state in
                    guard state.hosts[key]?.queue[attempt] != nil else { return false }
                    state.hosts.modify(key) { $0.queue[attempt]?.timer = timer }
                    return true
                }
                if !attached { timer.cancel() }
            }
        } onCancel: {
            endWait(of: attempt, with: .cancelled)
        }
    }

    private enum WaitEnding {
        case timedOut
        case cancelled
    }

    /// Ends the wait of `attempt` if it is still in a queue: with ``ConcurrencyLimitExceeded`` at the queue timeout,
    /// `CancellationError` when the task is cancelled or the attempt settled. A wait that was handed a place or ended
    /// already is left alone.
    private func endWait(of attempt: AttemptKey, with ending: WaitEnding) {
        let ended: (Waiter, ConcurrencyLimitExceeded)? = state.withLock { state in
            guard let key = state.waiting.removeValue(forKey: attempt) else { return nil }
            let ended = state.hosts.modify(key) { host -> (Waiter, ConcurrencyLimitExceeded)? in
                guard let waiter = host.queue.remove(attempt) else { return nil }
                let timedOut = ConcurrencyLimitExceeded(
                    key: key, limitHit: .queueTimeout, limit: host.limit.current, inFlight: host.inFlight,
                    queued: host.queue.count)
                return (waiter, timedOut)
            }
            forgetIfIdle(key, in: &state)
            return ended ?? nil
        }
        guard let (waiter, timedOut) = ended else { return }
        waiter.timer?.cancel()
        switch ending {
        case .timedOut: waiter.continuation.resume(throwing: timedOut)
        case .cancelled: waiter.continuation.resume(throwing: CancellationError())
        }
    }

    /// Settles the place of `attempt`, if it holds one, teaching an adaptive limit whether the attempt says the host is
    /// overloaded (`dropped` is `true`), keeping up (`false`) or nothing (`nil`), and, unless the attempt gave it back
    /// with its answer already, hands the freed place to the first waiter; an attempt still waiting leaves the queue.
    /// Returns whether the attempt held a place.
    @discardableResult
    private func giveBack(_ attempt: AttemptKey, dropped: Bool?) -> Bool {
        let now = clock.now()
        let handed: [Waiter]? = state.withLock { state in
            guard let place = state.places.removeValue(forKey: attempt) else { return nil }
            state.hosts.modify(place.key) { host in
                if place.ended != nil { host.answered -= 1 }
                // Timed to the attempt's answer, not to its settling, which waits for the retriers' decision.
                if let dropped {
                    host.limit.update(
                        latency: (place.ended ?? now) - place.since, inFlight: place.inFlight, dropped: dropped)
                }
            }
            // A place given back as the attempt got its answer was handed on then.
            let handed = place.ended == nil ? handOn(place.key, now: now, in: &state) : []
            forgetIfIdle(place.key, in: &state)
            return handed
        }
        guard let handed else {
            // No place: the attempt may still be waiting for one (settled at its deadline, say).
            endWait(of: attempt, with: .cancelled)
            return false
        }
        resume(handed)
        return true
    }

    /// Gives back the place of `context`'s attempt as it got its answer: the attempts waiting for one get it now,
    /// while the retriers decide what follows; the place is settled with the attempt (``settle(_:of:ledger:outcome:)``).
    func attemptEnded(_ context: RequestContext, response: ResponseHead?) {
        let attempt = AttemptKey(requestID: context.requestID, attempt: context.attempt)
        let now = clock.now()
        let handed = state.withLock { state -> [Waiter] in
            guard var place = state.places[attempt], place.ended == nil else { return [] }
            place.ended = now
            state.places[attempt] = place
            state.hosts.modify(place.key) { $0.answered += 1 }
            let handed = handOn(place.key, now: now, in: &state)
            forgetIfIdle(place.key, in: &state)
            return handed
        }
        resume(handed)
    }

    /// Frees one of `key`'s places and hands the free ones, in order, to the attempts waiting; returns those to resume.
    private func handOn(_ key: String, now: Duration, in state: inout State) -> [Waiter] {
        // Each waiter handed a place, with the count of attempts in flight its place was taken at.
        let handed =
            state.hosts.modify(key) { host -> [(AttemptKey, Waiter, Int)] in
                host.inFlight -= 1
                host.lastActive = now
                var handed: [(AttemptKey, Waiter, Int)] = []
                while host.inFlight < host.limit.current, let (waiting, waiter) = host.queue.popFirst() {
                    host.inFlight += 1
                    handed.append((waiting, waiter, host.inFlight))
                }
                return handed
            } ?? []
        for (waiting, _, inFlight) in handed {
            state.waiting[waiting] = nil
            state.places[waiting] = Place(key: key, since: now, inFlight: inFlight)
        }
        return handed.map { $0.1 }
    }

    /// Resumes the attempts handed a place.
    private func resume(_ handed: [Waiter]) {
        for waiter in handed {
            waiter.timer?.cancel()
            waiter.continuation.resume()
        }
    }

    /// Forgets `key`'s host at once when it is idle with a fixed limit, which has nothing to remember.
    private func forgetIfIdle(_ key: String, in state: inout State) {
        guard configuration.limit.isFixed, state.hosts[key]?.isIdle == true else { return }
        state.hosts.remove(key)
    }

    /// Never refuses a retry: the retry's attempt takes a place, or waits or fails, when it is adapted.
    public func admitRetry(_ request: RetryRequest, dueTo error: ReboundError, after delay: Duration) -> (any Error)? {
        nil
    }

    /// How many attempts hold a place or are not settled since they gave it back with their answer; for tests that
    /// check every place comes back.
    package var placesHeld: Int { state.withLock { $0.places.count } }

    /// How many hosts the limiter keeps; for tests that check it forgets idle ones.
    package var hostsKept: Int { state.withLock { $0.hosts.count } }
}

extension ConcurrencyLimiter: HostAdmission {
    /// A place is held while the attempt is in flight.
    var holdsWhileInFlight: Bool { true }

    func admissionKey(for request: URLRequest) -> String? {
        keyFunction(request)
    }

    /// Gives back the place `context`'s attempt holds, uncounted, while it waits for a later adapter (a refresh).
    func giveWay(_ context: RequestContext, admittedUnder key: String) -> Bool {
        giveBack(AttemptKey(requestID: context.requestID, attempt: context.attempt), dropped: nil)
    }

    /// Takes a place again for the attempt that gave its place way, waiting whatever the queue's size if still `admitted`'s.
    func admitAgain(_ context: RequestContext, under key: String, admittedUnder admitted: String) async throws {
        guard let ledger = context.ledger else { return }
        _ = try await takePlace(of: key, for: context, ledger: ledger, returning: key == admitted)
    }

    /// Gives back the place `context`'s attempt took of `admitted`'s host, teaching an adaptive limit nothing, and
    /// takes one of `key`'s host instead, waiting or throwing as ``adapt(_:context:)`` does.
    func readmit(_ context: RequestContext, from admitted: String, to key: String?) async throws {
        guard let ledger = context.ledger else { return }
        let attempt = AttemptKey(requestID: context.requestID, attempt: context.attempt)
        // Held twice, the limiter is asked once per admission it noted: a place of `key` taken already is kept.
        if let key, state.withLock({ $0.places[attempt]?.key == key }) { return }
        giveBack(attempt, dropped: nil)
        if let key { _ = try await takePlace(of: key, for: context, ledger: ledger) }
    }
}

// The session tells the limiter how the attempts it let through end directly (see `AttemptAccountant`).
extension ConcurrencyLimiter: AttemptAccountant {
    func settle(_ attempt: Attempt, of requestID: UUID, ledger: RequestLedger, outcome: () -> AttemptOutcome) {
        // Asked outside the lock (a `classify` of the caller's own is their code), only for an adaptive limit, and only
        // about an attempt that was sent: nothing else says anything about the host.
        var dropped: Bool?
        if !configuration.limit.isFixed, attempt.request != nil {
            switch CircuitBreaker.verdict(for: attempt, classify: classify, outcome: outcome) {
            case .success: dropped = false
            case .failure: dropped = true
            case .ignored: dropped = nil
            }
        }
        giveBack(AttemptKey(requestID: requestID, attempt: attempt.number), dropped: dropped)
    }

    func requestEnded(_ requestID: UUID) {}

    /// Lets a hedge start only while its host has a place free and nobody waits for one: a hedge is extra load, which a
    /// host at its limit does not get. The hedge takes its place when it is adapted, as any attempt does.
    func admitHedge(
        _ request: URLRequest, of requestID: UUID, attempt: Int, after failed: Attempt?, roles: RegisteredRoles
    ) -> (any Error)? {
        guard let key = keyFunction(request) else { return nil }
        if enforcement == .shadow, roles.ledger.isShadowed(attempt: attempt, for: ObjectIdentifier(self)) { return nil }
        let full = state.withLock { state in
            state.hosts[key].map { $0.inFlight >= $0.limit.current || !$0.queue.isEmpty } ?? false
        }
        guard full else { return nil }
        let refusal = noPlace(for: key)
        guard enforcement == .shadow else { return refusal }
        // In shadow mode the hedge starts, unseen by the limiter: it takes no place.
        roles.ledger.refuseInShadow(
            ShadowRefusal(
                requestID: requestID, attempt: attempt, stage: .hedge, reason: .concurrencyLimit,
                part: "ConcurrencyLimiter", key: key, error: refusal),
            by: ObjectIdentifier(self))
        return nil
    }
}
