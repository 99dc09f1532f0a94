import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Paces each host's requests by the quota its server advertises, so that a client that has spent its quota waits for
/// the quota's renewal instead of drawing a 429: proactive, where ``AdaptiveRateLimiter`` reacts to 429s.
///
/// Every response's quota fields are read (``RateLimitQuota``: the IETF `RateLimit` and `RateLimit-Policy` fields, the
/// earlier drafts' `RateLimit-Remaining` and `RateLimit-Reset`, the `X-RateLimit-` fields). The pacer keeps each
/// host's requests left and when the quota is renewed, and counts down one per attempt it lets through, so that
/// concurrent requests do not overdraw what the last response said (a response's count does not include the requests
/// still in flight, which the pacer subtracts). A request to a host with none left waits for the renewal, then goes
/// on. When the server gave the quota's limit and window (`RateLimit-Policy`'s `q` and `w`, both above zero), each
/// renewal begins a window with the limit; otherwise the host is not held after a renewal until a response says its
/// quota again, so requests that waited together go together. A hedge (``Hedging``) starts only while its host has a
/// request left: it never waits for a renewal.
///
/// **Bounds.** ``maximumWait`` bounds a request's whole wait in the pacer: the time it waited, on the pacer's clock,
/// summed over its attempts and the renewals each waited for. A request whose next wait would go past what is left of
/// it, or past the request's deadline, fails at once with ``RateLimitQuotaSpent``, which no retry policy retries
/// (behind a decorator that hands the pacer a context of its own, the pacer knows neither the request's earlier
/// attempts nor its deadline: each attempt's waits are bounded alone, and the deadline cuts the wait instead). No
/// single response holds a host longer than ``maximumHold``: a renewal, or a policy's window, further away is held at
/// it, and ``forgetQuota(for:)`` lets a host go at once. A host whose renewal has passed with no attempt in flight is
/// forgotten as requests go by, whatever host they go to.
///
/// Put it in a chain's adapters; share one instance between sessions to share each host's quota. It hears how attempts
/// end by registering through the context: behind a decorator that hands it a context of its own, it still paces, but
/// counts none of those attempts in flight (it would never hear them end). Responses that advertise nothing, or only
/// malformed fields, change nothing: a host the pacer never heard a quota from is never held. It is off by default
/// and not in ``Resilience``: a quota is often a user's or a token's rather than a host's, and a pacer per host would
/// then hold one user's requests for another's spent quota; add it where the quota is the client's own.
///
/// Made with `enforcement: .shadow`, it counts each host's quota as above and holds nobody: a request that finds its
/// host's quota spent goes on at once, and the refusal it would have met with no wait (``maximumWait`` of zero) is told
/// to the observers instead (``Enforcement``, ``ShadowRefusal``, reason ``StopReason/rateLimited``); the pacer sees no
/// more of that request (of that hedge, for a hedge), neither counting its attempts nor reading their responses'
/// quotas, as enforced the request would have ended there.
///
/// ```swift
/// let pacer = RateLimitPacer()
/// let session = Session(adapters: [pacer], retriers: [RetryPolicy()])
/// ```
public final class RateLimitPacer: RequestAdapter, AttemptObserver, HostAdmission, HedgeGate {
    /// The default ``maximumWait``: 30 seconds, the preset's deadline.
    public static let defaultMaximumWait = Duration.seconds(30)
    /// The default ``maximumHold``: 60 seconds, the longest `Retry-After` that ``RetryAfter`` honours by default.
    ///
    /// Long enough to honour whole the quotas of a second or a minute, the common windows; a host whose server says
    /// longer (a daily quota spent, a wrong clock, a hostile answer) is tried again after a minute, at the cost of
    /// one answer that says the quota again.
    public static let defaultMaximumHold = Duration.seconds(60)

    /// One host's quota as the pacer last heard it, on the pacer's clock.
    private struct Host: Sendable {
        var remaining: Int
        var renewedAt: Duration
        var limit: Int?
        var window: Duration?
        /// Requests let through against this quota whose attempts have not ended: a response's count of requests
        /// left does not include them yet.
        var inFlight = 0
        /// Which record of the host this is: a host let go (at a renewal, or to make room) and heard from again is a
        /// new record, which the ends of attempts counted against the old one leave alone.
        let record: Int

        /// Whether the host's quota can no longer hold a request by itself: renewed, with nothing in flight.
        func isAtRest(at now: Duration) -> Bool {
            renewedAt <= now && inFlight == 0
        }

        /// The host's quota at `now`: as it is before its renewal; once renewed, with the quota's limit and window
        /// known, the window `now` falls in, which begins with the limit less the requests still in flight; `nil` once
        /// renewed without them, when the host is not held until a response says its quota again.
        func renewed(at now: Duration) -> Host? {
            guard now >= renewedAt else { return self }
            guard let limit, limit > 0, let window, window > .zero else { return nil }
            var host = self
            let windows = ((now - renewedAt) / window).rounded(.down) + 1
            host.renewedAt += window * windows
            host.remaining = max(limit - inFlight, 0)
            return host
        }
    }

    /// An attempt let through under a host's key until it ends: counted in flight against the host record numbered
    /// `record`, or against none (`nil`) when the pacer knew no quota of the host, until its answer; its response's
    /// quota is the key's.
    private struct Counted: Sendable {
        let attempt: Int
        let key: String
        let record: Int?
        /// Whether the pacer heard the attempt's answer (and read its quota) as it came: its count in flight ended then.
        var answered = false
    }

    /// What the pacer keeps of a request until it ends: only for a request it will hear the end of.
    private struct Request: Sendable {
        /// The attempts let through against a host's quota whose ends the pacer has not heard.
        var counted: [Counted] = []
        /// How long the request has waited for renewals so far, over all its attempts.
        var waited = Duration.zero
    }

    private struct State: Sendable {
        var hosts: HostTable<Host>
        /// The requests the pacer keeps something of, until each ends.
        var requests: [UUID: Request] = [:]
        /// For a pacer in shadow mode, the attempts of each request it no longer sees, until the request ends: it would
        /// have refused them, or the request before them.
        var unseen: [UUID: Set<Int>] = [:]
        /// The number of the last host record made.
        var records = 0

        /// The number of a new host record.
        mutating func newRecord() -> Int {
            records += 1
            return records
        }
    }

    /// How long a request waits in the pacer at most, over all its attempts; 30 s by default.
    public let maximumWait: Duration
    /// How long one response can hold a host at most: a renewal further away is held at it; 60 s by default.
    public let maximumHold: Duration
    /// Whether it holds and refuses as it counts, or only tells of its refusals (``Enforcement/shadow``); enforced by
    /// default.
    public let enforcement: Enforcement
    private let keyFunction: CircuitBreakerRegistry.KeyFunction
    private let clock: SessionClock
    private let state: Locked<State>

    /// Creates a pacer; an invalid setting traps, naming it.
    ///
    /// - Parameters:
    ///   - maximumWait: How long a request waits in the pacer at most, summed over its attempts, zero or more; 30 s by
    ///     default.
    ///   - key: Picks the host whose quota a request draws on, or `nil` for a request never paced;
    ///     ``CircuitBreakerRegistry/hostKey(for:)`` by default.
    ///   - clock: The clock the renewals are timed and the waits slept on; `ContinuousClock` by default.
    ///   - maximumHosts: The most hosts the pacer keeps, at least 1; 10,000 by default. A host whose quota was renewed
    ///     is forgotten as requests go by; at the cap, a new host makes the pacer forget the host it used least
    ///     lately.
    ///   - maximumHold: How long one response can hold a host at most, zero or more: a renewal (or a policy's window)
    ///     further away is held at it; ``defaultMaximumHold`` (60 s) by default.
    ///   - enforcement: ``Enforcement/enforced`` (the default) to hold and refuse as it counts, ``Enforcement/shadow``
    ///     to hold and refuse nobody and tell the observers each refusal it would have made with no wait.
    public init<C: Clock>(
        maximumWait: Duration = defaultMaximumWait,
        key: @escaping CircuitBreakerRegistry.KeyFunction = CircuitBreakerRegistry.hostKey,
        clock: C = ContinuousClock(), maximumHosts: Int = 10_000, maximumHold: Duration = defaultMaximumHold,
        enforcement: Enforcement = .enforced
    ) where C.Duration == Duration {
        ConfigurationError.trapIfInvalid { () throws(ConfigurationError) in
            guard maximumWait >= .zero else {
                throw ConfigurationError(
                    field: "RateLimitPacer.maximumWait", problem: "must be 0 or more, got \(maximumWait)")
            }
            guard maximumHold >= .zero else {
                throw ConfigurationError(
                    field: "RateLimitPacer.maximumHold", problem: "must be 0 or more, got \(maximumHold)")
            }
        }
        HostTable<Host>.trapIfInvalid(maximumHosts, owner: "RateLimitPacer")
        self.maximumWait = maximumWait
        self.maximumHold = maximumHold
        self.enforcement = enforcement
        self.keyFunction = key
        self.clock = SessionClock(clock)
        self.state = Locked(State(hosts: HostTable(capacity: maximumHosts)))
    }

    /// The quota of `key`'s host as the pacer counts it now; `nil` for a host it holds nothing for. Reading changes
    /// nothing.
    public func quota(for key: String) -> RateLimitQuota? {
        let now = clock.now()
        return state.withLock { state in
            guard let host = state.hosts[key], host.renewedAt > now else { return nil }
            return RateLimitQuota(
                remaining: host.remaining, resetsIn: host.renewedAt - now, limit: host.limit, window: host.window)
        }
    }

    /// Forgets the quota of `key`'s host: its requests go at once, until a response says its quota again. Requests
    /// already waiting for its renewal wait on.
    public func forgetQuota(for key: String) {
        state.withLock { $0.hosts.remove(key) }
    }

    /// Forgets the quota of every host, as ``forgetQuota(for:)`` does for one.
    public func forgetAllQuotas() {
        state.withLock { $0.hosts.removeAll() }
    }

    /// Lets the request through once its host has a request left, waiting for the quota's renewal if it has none,
    /// and registers to read the quota of the attempt's response.
    ///
    /// - Throws: ``RateLimitQuotaSpent`` when the renewal is further away than what is left of ``maximumWait`` for the
    ///   request, or than its deadline; `CancellationError` when the task is cancelled while it waits.
    public func adapt(_ request: consuming URLRequest, context: RequestContext) async throws -> URLRequest {
        context.observeAndAdmitHedges(through: self)
        guard let key = keyFunction(request), !isUnseen(context) else { return request }
        guard try await pace(key, context: context) else { return request }
        // A later adapter that moves the request to another host has the session ask the pacer again, for that host.
        context.admitted(by: self, under: key, at: request.url)
        return request
    }

    /// Whether a pacer in shadow mode no longer sees `context`'s attempt (it would have refused it, or the request
    /// before it), which it then keeps as unseen until the request ends; always `false` enforced.
    private func isUnseen(_ context: RequestContext) -> Bool {
        guard enforcement == .shadow, let ledger = context.ledger,
            ledger.isShadowed(attempt: context.attempt, for: ObjectIdentifier(self))
        else { return false }
        keepUnseen(context)
        return true
    }

    /// Keeps `context`'s attempt as one a pacer in shadow mode no longer sees, until the request ends.
    private func keepUnseen(_ context: RequestContext) {
        state.withLock { _ = $0.unseen[context.requestID, default: []].insert(context.attempt) }
    }

    /// Lets the attempt through once `key`'s host has a request left, waiting for the quota's renewal if it has none;
    /// returns whether it was counted against the quota, `false` for an attempt a pacer in shadow mode would have
    /// refused and let through unseen.
    private func pace(_ key: String, context: RequestContext) async throws -> Bool {
        // The pacer keeps what a request waited, and counts an attempt in flight, only if it will hear the request end:
        // through a context that cannot register (a decorator's own), neither would ever be given back.
        let heard = context.canRegister ? context : nil
        if enforcement == .shadow {
            // In shadow mode nobody waits: the refusal the request would have met with no wait is told (through a
            // context that cannot register, a decorator's own, there is no request to tell it to).
            guard let hold = take(key, for: heard) else { return true }
            if let ledger = context.ledger {
                ledger.refuseInShadow(
                    ShadowRefusal(
                        requestID: context.requestID, attempt: context.attempt, stage: .attempt, reason: .rateLimited,
                        part: "RateLimitPacer", key: key, error: RateLimitQuotaSpent(key: key, renewedIn: hold.wait)),
                    by: ObjectIdentifier(self))
                keepUnseen(context)
            }
            return false
        }
        // What this attempt waited, for a request the pacer keeps nothing of.
        var waitedHere = Duration.zero
        while let hold = take(key, for: heard) {
            let left = maximumWait - (heard == nil ? waitedHere : hold.waited)
            // A renewal past the request's deadline would be waited for in vain: the request ends now.
            let longest = context.timeLeft.map { min($0, left) } ?? left
            // A hedge never waits for a renewal: the request it found left when it was let start went to another.
            guard hold.wait <= longest, !context.isHedge else {
                throw RateLimitQuotaSpent(key: key, renewedIn: hold.wait)
            }
            let start = clock.now()
            do {
                try await clock.sleep(hold.wait)
            } catch {
                throw CancellationError()
            }
            let slept = clock.now() - start
            waitedHere += slept
            if let heard {
                state.withLock { state in
                    // A request that ended meanwhile (a hedge that lost wakes late) is not kept again.
                    guard !heard.requestEnded else { return }
                    state.requests[heard.requestID, default: Request()].waited += slept
                }
            }
        }
        return true
    }

    /// A wait for a host's renewal, and what the request waited before it.
    private struct Hold {
        let wait: Duration
        let waited: Duration
    }

    /// Counts an attempt against `key`'s quota, and as in flight until it ends if `context` says which and the session
    /// has not settled it; returns how long
    /// until the quota's renewal when none is left. Moves the host table's hand a step, so that idle hosts are
    /// forgotten though no new host comes.
    private func take(_ key: String, for context: RequestContext?) -> Hold? {
        let now = clock.now()
        return state.withLock { state -> Hold? in
            // An attempt the session settled already (a hedge that lost, one the deadline cut short, whose task goes on)
            // is not counted in flight: the pacer would never hear it end. Read under the pacer's lock, so that an
            // attempt settled after this reads is still counted here before its end is heard.
            let attempt = context.flatMap { $0.isSettled ? nil : $0 }
            state.hosts.forgetIdle(steps: 1, isAtRest: { $0.isAtRest(at: now) })
            let taken = state.hosts.modify(key) { host -> Taken in
                guard let renewed = host.renewed(at: now) else { return .letGo }
                host = renewed
                guard host.remaining > 0 else { return .wait(host.renewedAt - now) }
                host.remaining -= 1
                if attempt != nil { host.inFlight += 1 }
                return .taken(record: host.record)
            }
            let record: Int?
            switch taken {
            case nil:
                // A host the pacer heard no quota from is never held.
                record = nil
            case .letGo:
                state.hosts.remove(key)
                record = nil
            case .wait(let wait):
                let waited = attempt.flatMap { state.requests[$0.requestID]?.waited } ?? .zero
                return Hold(wait: wait, waited: waited)
            case .taken(let taken):
                record = taken
            }
            // The key is kept until the attempt ends, so that its response's quota is read as this key's, whatever a
            // later adapter changes.
            if let attempt {
                state.requests[attempt.requestID, default: Request()].counted.append(
                    Counted(attempt: attempt.attempt, key: key, record: record))
            }
            return nil
        }
    }

    /// Gives back, uncounted, the request `context`'s attempt took from `admitted`'s quota, and paces the attempt by
    /// `key`'s quota instead: a later adapter moved it to that host.
    func readmit(_ context: RequestContext, from admitted: String, to key: String?) async throws {
        giveBack(context, from: admitted)
        if let key { _ = try await pace(key, context: context) }
    }

    /// Gives back, uncounted, the request `context`'s attempt took of `key`'s quota while the attempt waits in a later
    /// adapter: the request it waits for (a credential's refresh) may need it.
    func giveWay(_ context: RequestContext, admittedUnder key: String) -> Bool {
        giveBack(context, from: key)
    }

    /// Paces `context`'s attempt, which gave its request of the quota way, by `key`'s quota again.
    func admitAgain(_ context: RequestContext, under key: String, admittedUnder admitted: String) async throws {
        _ = try await pace(key, context: context)
    }

    /// Gives back, uncounted, the request `context`'s attempt took from `admitted`'s quota, if it took one; returns
    /// whether it did.
    @discardableResult
    private func giveBack(_ context: RequestContext, from admitted: String) -> Bool {
        state.withLock { state in
            guard
                let index = state.requests[context.requestID]?.counted.lastIndex(where: {
                    $0.attempt == context.attempt && $0.key == admitted
                }),
                let counted = state.requests[context.requestID]?.counted.remove(at: index)
            else { return false }
            guard let record = counted.record else { return true }
            state.hosts.modify(admitted) { host in
                guard host.record == record else { return }
                host.inFlight = max(host.inFlight - 1, 0)
                host.remaining += 1
            }
            return true
        }
    }

    /// The key the pacer paces `request` by.
    func admissionKey(for request: URLRequest) -> String? {
        keyFunction(request)
    }

    /// An attempt is counted in flight only until its answer (``attemptEnded(_:response:)``).
    var holdsWhileInFlight: Bool { true }

    /// Lets a hedge start only while its host has a request of its quota left: a hedge never waits for a renewal, whose
    /// requests the request's own attempts and other requests need. The hedge is counted against the quota when it is
    /// adapted, as any attempt is.
    func admitHedge(
        _ request: URLRequest, of requestID: UUID, attempt: Int, after failed: Attempt?, roles: RegisteredRoles
    ) -> (any Error)? {
        guard let key = keyFunction(request) else { return nil }
        if enforcement == .shadow, roles.ledger.isShadowed(attempt: attempt, for: ObjectIdentifier(self)) { return nil }
        let now = clock.now()
        let refusal = state.withLock { state -> RateLimitQuotaSpent? in
            guard let host = state.hosts[key]?.renewed(at: now), host.remaining == 0 else { return nil }
            return RateLimitQuotaSpent(key: key, renewedIn: host.renewedAt - now)
        }
        guard let refusal, enforcement == .shadow else { return refusal }
        // In shadow mode the hedge starts, unseen by the pacer: it is not counted against the quota.
        roles.ledger.refuseInShadow(
            ShadowRefusal(
                requestID: requestID, attempt: attempt, stage: .hedge, reason: .rateLimited, part: "RateLimitPacer",
                key: key, error: refusal),
            by: ObjectIdentifier(self))
        return nil
    }

    /// What taking a request from a host's quota came to.
    private enum Taken {
        /// Renewed without a known window: the host is not held any more.
        case letGo
        /// None left until the renewal, this far away.
        case wait(Duration)
        /// Counted against the host record numbered `record`.
        case taken(record: Int)
    }

    /// Ends the attempt's count against its host's quota, and reads the quota its response advertises, if any, unless
    /// the pacer heard both as the attempt's answer came; the host is the one the pacer counted the attempt against,
    /// whatever a later adapter changed, and for an attempt it did not count, the host the attempt was sent to.
    public func attemptDidFinish(_ outcome: AttemptOutcome) async {
        let quota = outcome.responseHead.flatMap(RateLimitQuota.init)
        let sentTo = quota == nil ? nil : keyFunction(outcome.attempt.admittedRequest ?? outcome.request)
        let now = clock.now()
        state.withLock { state in
            // An attempt a pacer in shadow mode no longer sees tells it nothing: enforced, it would not have been sent.
            if !state.unseen.isEmpty, state.unseen[outcome.requestID]?.contains(outcome.attempt.number) == true {
                return
            }
            // Taken and heard under one key, so that a pacer before an adapter that moves the request paces it.
            let takenFrom = state.requests[outcome.requestID]?.counted.first { $0.attempt == outcome.attempt.number }
            settle(&state, outcome.requestID, forgetting: false) { $0 == outcome.attempt.number }
            guard takenFrom?.answered != true, let quota, let key = takenFrom?.key ?? sentTo else { return }
            hear(quota, for: key, at: now, in: &state)
        }
    }

    /// Ends the count in flight of `context`'s attempt as its answer comes, and reads the quota its `response`
    /// advertises then, if any, as its host's: the server's count of requests left includes the attempt already, and
    /// its renewal counts from the answer, not from when the retriers have decided what follows.
    func attemptEnded(_ context: RequestContext, response: ResponseHead?) {
        let quota = response.flatMap(RateLimitQuota.init)
        let now = clock.now()
        state.withLock { state in
            guard
                let index = state.requests[context.requestID]?.counted.firstIndex(where: {
                    $0.attempt == context.attempt && !$0.answered
                }),
                let counted = state.requests[context.requestID]?.counted[index]
            else { return }
            if let record = counted.record {
                state.hosts.modify(counted.key) { host in
                    if host.record == record { host.inFlight = max(host.inFlight - 1, 0) }
                }
            }
            state.requests[context.requestID]?.counted[index].answered = true
            if let quota { hear(quota, for: counted.key, at: now, in: &state) }
        }
    }

    /// Keeps `quota`, heard at `now`, as `key`'s host's, less the requests still in flight, its renewal and window
    /// held at ``maximumHold``.
    private func hear(_ quota: RateLimitQuota, for key: String, at now: Duration, in state: inout State) {
        let kept = state.hosts[key]
        let inFlight = kept?.inFlight ?? 0
        let record = kept?.record ?? state.newRecord()
        let heard = Host(
            remaining: max(quota.remaining - inFlight, 0), renewedAt: now + min(quota.resetsIn, maximumHold),
            limit: quota.limit, window: quota.window.map { min($0, maximumHold) }, inFlight: inFlight, record: record)
        state.hosts.update(key, make: { heard }, isAtRest: { $0.isAtRest(at: now) }) { $0 = heard }
    }

    /// Ends the counts of the request's attempts still counted (one that never heard its end, cancelled say), and
    /// forgets what the request waited.
    public func requestDidFinish(_ outcome: RequestOutcome) async {
        state.withLock { state in
            settle(&state, outcome.requestID, forgetting: true) { _ in true }
            if !state.unseen.isEmpty { state.unseen[outcome.requestID] = nil }
        }
    }

    /// Ends the counts of the attempts of `requestID` that `matches` picks; forgets the request if `forgetting`, or
    /// once the pacer keeps nothing else of it.
    private func settle(
        _ state: inout State, _ requestID: UUID, forgetting: Bool, matching matches: (Int) -> Bool
    ) {
        guard var request = state.requests.removeValue(forKey: requestID) else { return }
        for counted in request.counted where matches(counted.attempt) {
            // An attempt whose answer was heard ended its count in flight then.
            guard let record = counted.record, !counted.answered else { continue }
            state.hosts.modify(counted.key) { host in
                if host.record == record { host.inFlight = max(host.inFlight - 1, 0) }
            }
        }
        request.counted.removeAll { matches($0.attempt) }
        if !forgetting, !request.counted.isEmpty || request.waited > .zero { state.requests[requestID] = request }
    }

    /// How many records of requests the pacer keeps (attempts counted in flight and time waited, and for a pacer in
    /// shadow mode the attempts it no longer sees), a request counted once for each; for tests that check nothing is
    /// kept.
    package var requestsKept: Int { state.withLock { $0.requests.count + $0.unseen.count } }

    /// How many hosts the pacer keeps a quota for; for tests that check idle hosts are forgotten.
    package var hostsKept: Int { state.withLock { $0.hosts.count } }
}
