import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Stops sending requests to an upstream that keeps failing, then lets a few trial calls through to see whether it
/// is back.
///
/// - **Closed** (the start): every request goes through. Each attempt's outcome is counted, without any wiring: the
///   breaker registers through the context when it admits an attempt, and the session has it settle the attempt as
///   soon as its fate is decided, before any ``AttemptObserver`` hears of it (a failure whose retry the breaker is
///   asked to grant is counted when it is asked, ``admitRetry(_:dueTo:after:)``; a half-open trial that got a 401
///   whose retrier waits for a refresh, before that wait). When ``Configuration/tripCondition`` holds (5 failures in a
///   row by default) it opens.
/// - **Open**: requests fail at once, before reaching the network, with ``CircuitBreakerOpenError``, which says when
///   the breaker will try again. No retrier is asked about that error and it is not counted as another failure.
/// - **Half-open**, once the break has passed (``Configuration/breakDuration``: 0.25–0.5 s at first, growing up to
///   5–10 s while trials keep failing, by default): up to ``Configuration/halfOpenTrialCalls`` (1 by default) requests
///   go through at once, the rest fail fast. ``Configuration/trialSuccessesToClose`` trial successes in a row (1 by
///   default) close the breaker; a trial failure (or a slow trial, under a ``SlowCallRule``) opens it again; an
///   ignored outcome (a cancelled trial) gives its place to the next request, and so does a trial that has not
///   reported within ``Configuration/trialTimeout``.
///
/// It is also each admitted request's ``RetryGate``: a retry that would find the breaker open when its backoff ends is
/// refused at once with ``CircuitBreakerOpenError``, nothing slept; a backoff under way when the breaker opens ends
/// then, with that error; a retry whose backoff ended before the opening goes through (``admitRetry(_:dueTo:after:)``).
///
/// When the failure that opens the breaker carries a `Retry-After` (on 429 or 503 by default), the breaker stays open
/// at least that long; so does a `retry-after-ms` where its configuration's ``Configuration/retryAfter`` reads it.
///
/// What counts as a failure is ``Configuration/classify``'s decision: by default transport errors and 5xx, 408 and
/// 429; other 4xx count as successes (the upstream answered); cancellations and adapter failures are ignored. With a
/// ``Configuration/slowCallRule``, a share of calls slower than its threshold on the wire opens the breaker too,
/// whether they failed or not.
/// A breaker only counts attempts it let through itself: put it in the chain as an adapter, alone or inside any
/// wrapper that forwards `adapt` (it registers, through the context, to hear how the attempt it admitted ends). It is
/// also an ``AttemptObserver``, so that listed in `observers:` as well it still counts each attempt once.
///
/// The state moves from open to half-open when the breaker next admits an attempt, on the breaker's clock; reading
/// ``state`` changes nothing. Every transition is told to ``init(key:configuration:clock:enforcement:onTransition:)``'s `onTransition`
/// and to every ``transitions()`` stream.
///
/// A breaker is a class whose state is behind a lock: share one instance between sessions to share the upstream's
/// state. For one breaker per host, use a ``CircuitBreakerRegistry``.
///
/// Made with `enforcement: .shadow`, it decides as above and refuses nothing: each refusal it would have made is told
/// to the observers instead (``Enforcement``, ``ShadowRefusal``).
///
/// ```swift
/// let breaker = CircuitBreaker(key: "payments")
/// let session = Session(adapters: [breaker], retriers: [RetryPolicy()])
/// ```
public final class CircuitBreaker: RequestAdapter, AttemptObserver, RetryGate {
    private struct Storage: Sendable {
        var machine: CircuitBreakerMachine
        /// How many permits it gave are not settled yet. The permits themselves are held by the requests (see
        /// `RequestLedger.HeldPermit`), so that the breaker keeps nothing per attempt in flight.
        var permitsOut = 0
        /// The backoff waits of the retries it granted, by request, until the retry is admitted or the request ends;
        /// an opening ends and forgets them, but for those slept to their end, whose retries it admits (see `endWaits`).
        var waits: [UUID: KeptWait] = [:]
        /// How many waits it has kept: each wait's number, so that an opening ends them in the order they were granted
        /// (a dictionary's order changes from run to run, and a simulation's must not).
        var grants = 0
    }

    /// The backoff wait of a retry the breaker granted, and which of the wait's sleeps that retry is slept in; and, for
    /// a breaker in shadow mode, what it tells when an opening would end the wait.
    private struct KeptWait: Sendable {
        let grant: Int
        let wait: BackoffWait
        let sleep: Int
        /// Where a breaker in shadow mode tells of the retry an opening would refuse; `nil` for a breaker enforced.
        let shadow: ShadowRetry?
    }

    /// The request whose retry a breaker in shadow mode granted, and the failed attempt the retry follows: what it
    /// tells if an opening would end the retry's wait.
    private final class ShadowRetry: Sendable {
        let ledger: RequestLedger
        let attempt: Int

        init(ledger: RequestLedger, attempt: Int) {
            self.ledger = ledger
            self.attempt = attempt
        }
    }

    /// Who a breaker is in shadow mode: a registry's breakers are one, as enforced any of them that refuses a request
    /// ends it for all.
    private var shadowIdentity: ObjectIdentifier { registry.map(ObjectIdentifier.init) ?? ObjectIdentifier(self) }

    /// The key this breaker was created with, usually the host it guards; `nil` if none.
    public let key: String?
    /// The breaker's configuration.
    public let configuration: Configuration
    /// Whether it refuses as it decides, or only tells of its refusals (``Enforcement/shadow``); enforced by default.
    public let enforcement: Enforcement

    private let storage: Locked<Storage>
    private let now: @Sendable () -> Duration
    private let onTransition: (@Sendable (Transition) -> Void)?
    private let broadcast = Broadcast<Transition>()
    /// A registry's stream, fed under this breaker's lock like the breaker's own.
    private let relay: Broadcast<Transition>?
    /// For a registry's breaker, the way to the registry's other breakers: a retry that moves to another key is that
    /// key's breaker's to admit. `nil` for a breaker made on its own, which guards whatever it is put in front of.
    private let registry: CircuitBreakerRegistry.Link?

    /// Creates a closed breaker.
    ///
    /// - Parameters:
    ///   - key: A name for the breaker, shown in its errors and transitions; none by default.
    ///   - configuration: When to trip, how long to stay open, how many trial calls; ``Configuration/default``
    ///     (5 consecutive failures, a short growing jittered break, 1 trial call) by default.
    ///   - clock: The clock the open duration and time windows are measured on; `ContinuousClock` by default.
    ///   - enforcement: ``Enforcement/enforced`` (the default) to refuse as it decides, ``Enforcement/shadow`` to
    ///     refuse nothing and tell the observers each refusal it would have made.
    ///   - onTransition: Called after every change of state, outside the breaker's lock, on the task that caused
    ///     it; calls from concurrent requests may overlap. None by default.
    public convenience init<C: Clock>(
        key: String? = nil, configuration: Configuration = .default, clock: C = ContinuousClock(),
        enforcement: Enforcement = .enforced, onTransition: (@Sendable (Transition) -> Void)? = nil
    ) where C.Duration == Duration {
        self.init(
            key: key, configuration: configuration, clock: clock, enforcement: enforcement, relay: nil,
            onTransition: onTransition)
    }

    init<C: Clock>(
        key: String?, configuration: Configuration, clock: C, enforcement: Enforcement, relay: Broadcast<Transition>?,
        registry: CircuitBreakerRegistry.Link? = nil, onTransition: (@Sendable (Transition) -> Void)?
    ) where C.Duration == Duration {
        self.relay = relay
        self.registry = registry
        self.key = key
        self.configuration = configuration
        self.enforcement = enforcement
        self.storage = Locked(Storage(machine: CircuitBreakerMachine(configuration: configuration)))
        self.now = SessionClock(clock).now
        self.onTransition = onTransition
    }

    /// The current state; an open breaker whose time is up reads as half-open.
    ///
    /// Reading changes nothing (a metrics gauge may poll it): the breaker moves to half-open when it admits the next
    /// attempt, and tells its transition then.
    public var state: State {
        let now = now()
        return storage.withLock { $0.machine.state(at: now) }
    }

    /// Whether the breaker is as a new one would be: closed, no failure counted, no attempt it let through unsettled
    /// and no granted retry waiting. What a registry asks before it forgets the breaker of an idle host.
    var isAtRest: Bool {
        let now = now()
        return storage.withLock { $0.permitsOut == 0 && $0.waits.isEmpty && $0.machine.isAtRest(at: now) }
    }

    /// How many attempts it let through have not been settled yet; for tests that check nothing is kept.
    package var permitsInFlight: Int { storage.withLock { $0.permitsOut } }

    /// How many backoff waits of granted retries it keeps; for tests that check nothing is kept.
    package var backoffWaitsKept: Int { storage.withLock { $0.waits.count } }

    /// A stream of every transition from now on, in order; it ends when the breaker is released.
    public func transitions() -> AsyncStream<Transition> {
        broadcast.subscribe()
    }

    /// Opens the breaker until ``reset()`` or ``forceClosed()``: every request fails fast.
    public func forceOpen() {
        announce(update { machine, _, transitions in machine.forceOpen(transitions: &transitions) }.1)
    }

    /// Closes the breaker until ``reset()`` or ``forceOpen()``: every request goes through and nothing trips it.
    public func forceClosed() {
        announce(update { machine, _, transitions in machine.forceClosed(transitions: &transitions) }.1)
    }

    /// Closes the breaker and forgets every count, as if it were new.
    public func reset() {
        announce(update { machine, _, transitions in machine.reset(transitions: &transitions) }.1)
    }

    /// Lets the attempt through, returning `request` unchanged, or throws ``CircuitBreakerOpenError``.
    public func adapt(_ request: consuming URLRequest, context: RequestContext) async throws -> URLRequest {
        try admit(context)
        return request
    }

    /// Lets the attempt through or throws ``CircuitBreakerOpenError``; synchronous, so that a registry in front of
    /// the breaker makes no second async call. An attempt let through registers the breaker, through the context, to
    /// hear how it ends, and the request holds its permit until then: wrapped in anything that forwards `adapt`, the
    /// breaker still counts it and gets its permit back.
    func admit(_ context: RequestContext) throws(CircuitBreakerOpenError) {
        let requestID = context.requestID
        let attempt = context.attempt
        let ledger = context.ledger
        // In shadow mode, a request this breaker would have refused goes on unseen by it, as it would have ended.
        if enforcement == .shadow, let ledger, ledger.isShadowed(attempt: attempt, for: shadowIdentity) { return }
        let (rejection, transitions) = update { storage, time, transitions -> CircuitBreakerOpenError? in
            // The retry this breaker granted is here: its wait is over.
            let kept = storage.waits.isEmpty ? nil : storage.waits.removeValue(forKey: requestID)
            // An attempt abandoned at its deadline goes on in the background, cancelled, and its end was already
            // told: a permit taken now would never come back. Checked under the lock, and the permit is held by the
            // request under it too, so that an attempt abandoned after this point holds its permit before its end is
            // settled (which takes the permit under this lock as well), and gives it back then.
            if Task.isCancelled { return nil }
            if let ledger, storage.machine.admitsFreely {
                // Closed, the common case: admitting changes nothing. A breaker the chain holds twice is asked twice
                // for one attempt: the first permit stays.
                let permit = CircuitBreakerMachine.Permit(generation: storage.machine.generation, trial: nil)
                if ledger.hold(permit, from: self, for: attempt) { storage.permitsOut += 1 }
                return nil
            }
            // The attempt already has its permit (the breaker held twice): admitting again could take a trial.
            if let ledger, ledger.holdsPermit(of: self, for: attempt) { return nil }
            // A retry whose backoff ended while the breaker was closed was admitted then, as an attempt let through
            // just before an opening is: it goes through, and its outcome says nothing about the break that began
            // after it. (Forced open, nothing goes through.) Its wait outlived the opening for that reason alone.
            if let kept, kept.wait.hasSlept(kept.sleep), storage.machine.state != .forcedOpen {
                if let ledger, ledger.hold(.uncounted, from: self, for: attempt) { storage.permitsOut += 1 }
                return nil
            }
            switch storage.machine.admit(time: &time, transitions: &transitions) {
            case .admitted(let permit):
                guard let ledger else {
                    // Nothing would report how this attempt ends (a context made outside a session, or anew by a
                    // decorator): let it through uncounted rather than hold a permit, a trial's included, for good.
                    storage.machine.record(.ignored, permit: permit, time: &time, transitions: &transitions)
                    return nil
                }
                if ledger.hold(permit, from: self, for: attempt) { storage.permitsOut += 1 }
                // A trial is noted (by the registry, for a registry's), to be given up while a later adapter waits.
                if permit.trial != nil, registry == nil {
                    ledger.admitted(by: self, attempt: attempt, under: key ?? "", at: nil)
                }
                return nil
            case .rejected(let retryAfter):
                return CircuitBreakerOpenError(key: key, state: storage.machine.state, retryAfter: retryAfter)
            }
        }
        announce(transitions)
        guard let rejection else { return }
        guard enforcement == .shadow else { throw rejection }
        ledger?.refuseInShadow(
            shadowRefusal(of: requestID, attempt: attempt, stage: .attempt, error: rejection), by: shadowIdentity)
    }

    /// What a breaker in shadow mode tells of a refusal it would have made (the session adds the request's label).
    private func shadowRefusal(
        of requestID: UUID, attempt: Int, stage: ShadowRefusal.Stage, error: CircuitBreakerOpenError
    ) -> ShadowRefusal {
        ShadowRefusal(
            requestID: requestID, attempt: attempt, stage: stage, reason: .circuitOpen, part: "CircuitBreaker",
            key: key, error: error)
    }

    /// Grants a retry only while the breaker is closed, and refuses it at once otherwise with
    /// ``CircuitBreakerOpenError``: nothing is slept for a refusal (and a budget refunds what it granted).
    ///
    /// The rule: a retry is sent only to a host the breaker trusts. While the breaker is open the retry would be
    /// refused, or would compete for the trial that a fresh request should take once the break is over; while it is
    /// half-open its trials are taken or kept for fresh requests, of which a request whose trial told the breaker
    /// nothing (the device's network was down, a later part stopped it) is one still: its retry takes a trial that is
    /// free. A retry granted while the breaker is closed waits its backoff, and if the breaker opens meanwhile the wait
    /// ends at once with the breaker's error: no caller sleeps a backoff only to be refused at the end of it. A retry
    /// whose backoff ended while the breaker was still closed was admitted then: if the breaker opens before the retry
    /// reaches it in the chain, it goes through all the same, like an attempt let through just before the opening, and
    /// its outcome is not counted (unless the breaker was forced open).
    ///
    /// The failed attempt is counted first, here rather than when it is reported, so that the failure that trips the
    /// breaker refuses its own retry. A ``CircuitBreakerRegistry``'s breaker grants or refuses only retries to its own
    /// key: a retry that moves to another host (`.retryWithRequest`, a fallback) is passed to the registry's breaker of
    /// that host, which decides by the same rule.
    public func admitRetry(_ request: RetryRequest, dueTo error: ReboundError, after delay: Duration) -> (any Error)? {
        guard let attempt = request.attempts.last else { return nil }
        let (roles, ledger) = (request.roles, request.ledger)
        // In shadow mode, a request this breaker would have refused goes on unseen by it. A hedge it would have refused
        // and that failed last holds no permit, so it is not counted below, and the retry is decided as the one after
        // the round would have been.
        if enforcement == .shadow, let ledger, ledger.isWhollyShadowed(for: shadowIdentity) { return nil }
        let verdict = configuration.verdict(for: attempt) {
            AttemptOutcome(
                requestID: request.requestID, label: request.label, original: request.original,
                attempt: attempt, data: request.data, decision: .retry(after: delay),
                endpoint: request.placement(of: attempt))
        }
        let openAtLeast = openAtLeast(after: verdict, of: attempt)
        // A retry that moves to another key (a fallback host) is the registry's breaker of that key's to decide; found
        // before this breaker's lock is taken (the key function is the caller's).
        let elsewhere = registry?.breaker(forRetry: request, otherThan: key)
        let (refusal, transitions) = update { storage, time, transitions -> CircuitBreakerOpenError? in
            let permit = ledger?.takePermit(of: self, for: attempt.number)
            if let permit {
                storage.permitsOut -= 1
                storage.machine.record(
                    verdict, permit: permit, timeOnWire: attempt.timeOnWire, time: &time, openAtLeast: openAtLeast,
                    transitions: &transitions)
            }
            if elsewhere != nil { return nil }
            // A trial that told the breaker nothing gave its place back above: the request's retry may take it again.
            let retriesTrial = permit?.trial != nil && verdict == .ignored
            if let refusal = refusalOfRetry(by: storage.machine, time: &time, retriesTrial: retriesTrial) {
                return refusal
            }
            // Granted while closed: the wait is kept so that an opening ends it (a zero delay has none to end; a retry
            // granted half-open takes a trial as it is sent). A breaker that did not let the failed attempt through (a
            // gate only, or asked about a fallback) registers to hear the request's end, which forgets the wait.
            if delay > .zero, storage.machine.state != .halfOpen, let wait = request.backoffWait {
                storage.grants += 1
                let shadow = ledger.flatMap {
                    enforcement == .shadow ? ShadowRetry(ledger: $0, attempt: attempt.number) : nil
                }
                storage.waits[request.requestID] = KeptWait(
                    grant: storage.grants, wait: wait, sleep: wait.nextSleep, shadow: shadow)
                if permit == nil { roles?.add(observer: self) }
            }
            return nil
        }
        announce(transitions)
        if let elsewhere { return elsewhere.admitRetry(request, dueTo: error, after: delay) }
        guard let refusal, enforcement == .shadow else { return refusal }
        ledger?.refuseInShadow(
            shadowRefusal(of: request.requestID, attempt: attempt.number, stage: .retry, error: refusal),
            by: shadowIdentity)
        return nil
    }

    /// Counts nothing: the session has the breaker settle each attempt it let through as soon as the attempt's fate is
    /// decided, before any observer hears of it, so that a breaker also listed in `observers:` counts each attempt once.
    public func attemptDidFinish(_ outcome: AttemptOutcome) async {}

    /// Forgets the request's backoff wait, if it kept one.
    public func requestDidFinish(_ outcome: RequestOutcome) async {
        forgetWait(of: outcome.requestID)
    }

    /// Forgets a request's backoff wait, if it kept one.
    func forgetWait(of requestID: UUID) {
        storage.withLock { storage in
            if !storage.waits.isEmpty { storage.waits[requestID] = nil }
        }
    }

    /// Counts `attempt` if this breaker let it through, as `verdict` says, or (`nil`) as its outcome says, which
    /// `outcome` builds for a configuration's own `classify` only, taking its permit from the request's ledger.
    func finish(_ attempt: Attempt, ledger: RequestLedger, verdict: Verdict? = nil, outcome: () -> AttemptOutcome) {
        // A `classify` of the caller's own is asked only about an attempt still to count (one whose failure was
        // counted when its retry was asked for is not asked about again), outside the lock.
        let number = attempt.number
        if verdict == nil, !configuration.classifiesByDefault, !ledger.holdsPermit(of: self, for: number) { return }
        let verdict = verdict ?? configuration.verdict(for: attempt, outcome: outcome)
        let (openAtLeast, timeOnWire) = (openAtLeast(after: verdict, of: attempt), attempt.timeOnWire)
        // The permit is taken under the breaker's lock, which `admit` holds while the request takes it.
        let ((), transitions) = update { storage, time, transitions in
            guard let permit = ledger.takePermit(of: self, for: number) else { return }
            storage.permitsOut -= 1
            storage.machine.record(
                verdict, permit: permit, timeOnWire: timeOnWire, time: &time, openAtLeast: openAtLeast,
                transitions: &transitions)
        }
        announce(transitions)
    }

    /// Gives back, uncounted, the permit this breaker gave `context`'s attempt, if the request holds one (only a trial,
    /// when `trialOnly`): the attempt goes to another host, whose breaker admits it instead, or waits in a later adapter
    /// (a trial taken is free again). Returns whether it gave one back.
    @discardableResult
    func giveBack(_ context: RequestContext, trialOnly: Bool = false) -> Bool {
        guard let ledger = context.ledger else { return false }
        let (gave, transitions) = update { storage, time, transitions -> Bool in
            guard let permit = ledger.takePermit(of: self, for: context.attempt, trialOnly: trialOnly) else {
                return false
            }
            storage.permitsOut -= 1
            storage.machine.record(.ignored, permit: permit, time: &time, transitions: &transitions)
            return true
        }
        announce(transitions)
        return gave
    }

    /// How long a break that `attempt` starts lasts at least: what its response's `Retry-After` asks for, read only
    /// from a failure (a success's headers are not read); `.zero` otherwise.
    private func openAtLeast(after verdict: Verdict, of attempt: Attempt) -> Duration {
        guard verdict == .failure, let head = attempt.responseHead else { return .zero }
        return configuration.retryAfter.delay(for: head) ?? .zero
    }

    /// The error that refuses a retry (or a hedge) now, by the rule of ``admitRetry(_:dueTo:after:)``.
    private func refusalOfRetry(by machine: CircuitBreakerMachine, time: inout LazyTime, retriesTrial: Bool = false)
        -> CircuitBreakerOpenError?
    {
        machine.refusalOfRetry(time: &time, retriesTrial: retriesTrial).map {
            CircuitBreakerOpenError(key: key, state: machine.state, retryAfter: $0)
        }
    }

    /// Runs `body` on the storage under the lock, returning its result and the states entered, in order, with the
    /// state left before each. Streams are fed under the lock so that they see transitions in order. The clock is read
    /// under the lock, at most once, and only if the time matters (see `LazyTime`).
    private func update<Result>(
        _ body: (inout Storage, inout LazyTime, inout [State]) -> Result
    ) -> (Result, [Transition]) {
        var time = LazyTime(now)
        var wakes: [() -> Void] = []
        let (result, transitions) = storage.withLock { storage -> (Result, [Transition]) in
            var before = storage.machine.state
            var entered: [State] = []
            let result = body(&storage, &time, &entered)
            // Nothing entered, the common case: nothing to forget, end or tell.
            if entered.isEmpty { return (result, []) }
            if entered.contains(where: { $0 == .open || $0 == .forcedOpen }), !storage.waits.isEmpty {
                wakes = endWaits(of: &storage, time: &time)
            }
            var transitions: [Transition] = []
            for state in entered {
                transitions.append(Transition(key: key, from: before, to: state))
                before = state
            }
            broadcast.send(transitions)
            relay?.send(transitions)
            return (result, transitions)
        }
        for wake in wakes { wake() }
        return (result, transitions)
    }

    /// Ends the backoff waits of the retries granted while the breaker was closed, now that it opened: those retries
    /// would be refused. A wait slept to its end before the opening is kept: its retry was admitted when the wait
    /// ended, and `admit` lets it through. Returns the wake-ups of the requests that sleep, in the order their retries
    /// were granted (a dictionary's order changes from run to run, and a simulation's must not), to call outside the
    /// lock.
    private func endWaits(of storage: inout Storage, time: inout LazyTime) -> [() -> Void] {
        let retryAfter = storage.machine.refusalOfRetry(time: &time) ?? nil
        let error = CircuitBreakerOpenError(key: key, state: storage.machine.state, retryAfter: retryAfter)
        var wakes: [() -> Void] = []
        for (requestID, kept) in storage.waits.sorted(by: { $0.value.grant < $1.value.grant }) {
            if let shadow = kept.shadow {
                // In shadow mode nothing is ended: the retry the opening would refuse is told, and from now on the
                // breaker no longer sees the request. A wait slept to its end is kept, as it is enforced.
                switch kept.wait.probe(sleep: kept.sleep) {
                case .alreadySlept: continue
                case .passed: storage.waits[requestID] = nil
                case .ended:
                    storage.waits[requestID] = nil
                    shadow.ledger.refuseInShadow(
                        shadowRefusal(of: requestID, attempt: shadow.attempt, stage: .retry, error: error),
                        by: shadowIdentity)
                }
                continue
            }
            switch kept.wait.end(with: error, sleep: kept.sleep) {
            case .ended(let wake):
                storage.waits[requestID] = nil
                if let wake { wakes.append(wake) }
            case .alreadySlept:
                continue
            case .passed:
                // The retry went on without this breaker (to another host's, say): nothing of it to end or admit.
                storage.waits[requestID] = nil
            }
        }
        return wakes
    }

    private func update<Result>(
        _ body: (inout CircuitBreakerMachine, inout LazyTime, inout [State]) -> Result
    ) -> (Result, [Transition]) {
        update { (storage: inout Storage, time, transitions) in body(&storage.machine, &time, &transitions) }
    }

    private func announce(_ transitions: [Transition]) {
        guard !transitions.isEmpty, let onTransition else { return }
        transitions.forEach(onTransition)
    }
}

extension CircuitBreaker {
    /// Lets a hedge start only while the breaker is closed (the rule for retries): an open breaker refuses it at once,
    /// and a half-open one keeps its trials for fresh requests. The hedge takes its permit when it is adapted.
    func admitHedge(
        _ request: URLRequest, of requestID: UUID, attempt: Int, after failed: Attempt?, roles: RegisteredRoles
    ) -> (any Error)? {
        if enforcement == .shadow, roles.ledger.isShadowed(attempt: attempt, for: shadowIdentity) { return nil }
        // A hedge to another key (another endpoint of a group) is for the registry's breaker of that key to decide.
        if let elsewhere = registry?.breaker(for: request, otherThan: key) {
            return elsewhere.admitHedge(request, of: requestID, attempt: attempt, after: failed, roles: roles)
        }
        var time = LazyTime(now)
        let refusal = storage.withLock { refusalOfRetry(by: $0.machine, time: &time) }
        guard let refusal, enforcement == .shadow else { return refusal }
        roles.ledger.refuseInShadow(
            shadowRefusal(of: requestID, attempt: attempt, stage: .hedge, error: refusal), by: shadowIdentity)
        return nil
    }
}
