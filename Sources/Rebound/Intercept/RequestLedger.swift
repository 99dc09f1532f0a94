import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One request's record for its parts, in one heap object that every attempt's context carries: what they registered
/// (``RegisteredRoles``) and what they hold and noted of its attempts (``RequestLedger``), under one lock.
struct RequestRecord: Sendable {
    var roles: RegisteredRoles.State
    var ledger: RequestLedger.State
}

/// What a request's parts hold and noted of its attempts while it runs, beside what they registered
/// (``RegisteredRoles``, the other view of the same ``RequestRecord``): the permits its breakers gave attempts in
/// flight, the admissions the session checks as it sends each attempt, which attempts the session settled and whether
/// the request ended, what parts in shadow mode would have refused, and the credentials applied to attempts.
///
/// Each entry is written by the part it belongs to, through the attempt's context, and read back by that part or by the
/// session at a point the request's life fixes: a permit when its attempt is settled, an admission as its attempt is
/// sent, a refusal in shadow mode with the next attempt's outcome. The request's end forgets it all.
///
/// The record's lock is the innermost: a breaker holds its own lock while it has the request hold or give back a permit
/// (``hold(_:from:for:)``, ``takePermit(of:for:)``), and nothing here calls out of the ledger and the registrations
/// under it.
struct RequestLedger: Sendable {
    /// What the ledger holds, in its request's record.
    struct State: Sendable {
        /// The request's deadline, if it has one.
        let deadline: DeadlineTimer?
        /// The permits held, one per breaker and attempt in flight: usually one, held without an allocation (more for a
        /// hedged round's attempts, or more than one breaker).
        var permits = InlineList<HeldPermit>.none
        /// Whether a breaker let an attempt of the request through (held a permit for it), so that its grant of a
        /// retry may keep the backoff wait.
        var admittedByBreaker = false
        /// The attempts the session settled, and whether the request ended: a part that would count an attempt late
        /// (a pacer whose wait ends after a hedge lost) reads it, so that it never counts what it would not hear end.
        var settled = SettledAttempts()
        /// The admissions of attempts not yet sent, taken back by the session before it sends each: usually none or
        /// one, held without an allocation.
        var admissions = InlineList<Admission>.none
        /// The refusals parts in shadow mode would have made of the request, in order; the first `shadowRefusalsTold`
        /// were told with an attempt's outcome.
        var shadowRefusals: [ShadowRefusal] = []
        var shadowRefusalsTold = 0
        /// What parts in shadow mode no longer see, as they would never have seen it enforced.
        var shadowed = InlineList<Shadowed>.none
        /// The attempts that started as hedges, which a part in shadow mode would refuse alone, not the request.
        var hedges = InlineList<Int>.none
        /// The credentials scopes applied to attempts of the request: one per scope and attempt.
        var credentialsApplied: [AppliedCredential] = []

        init(deadline: DeadlineTimer?) {
            self.deadline = deadline
        }
    }

    /// The request's record, shared with its registrations.
    let record: Locked<RequestRecord>

    /// Runs `body` with the ledger, under the record's lock.
    private func withLedger<Result>(_ body: (inout State) -> Result) -> Result {
        record.withLock { body(&$0.ledger) }
    }

    /// The time left before the request's deadline, read now; `nil` without a deadline. For a part that would wait
    /// (a pacer): a wait that outlasts it can end the request at once instead.
    var timeLeft: Duration? {
        withLedger { $0.deadline }?.remaining()
    }

    // MARK: Permits

    /// Holds `permit`, which breaker `part` gave `attempt`, until the attempt is settled, and registers the breaker as
    /// an accountant, under one lock; returns `false`, holding nothing, when the breaker holds a permit for that
    /// attempt already (a breaker the chain holds twice is asked twice for one attempt: the first permit stays).
    func hold(_ permit: CircuitBreakerMachine.Permit, from part: some AttemptAccountant, for attempt: Int) -> Bool {
        let held = HeldPermit(holder: ObjectIdentifier(part), attempt: attempt, permit: permit)
        return record.withLock { record in
            RegisteredRoles.add(accountant: part, to: &record.roles)
            if record.ledger.permits.contains(where: { $0.isFor(held.holder, attempt: attempt) }) { return false }
            record.ledger.permits.append(held)
            record.ledger.admittedByBreaker = true
            return true
        }
    }

    /// Whether `part` holds a permit for `attempt` of the request (a trial, when `trialOnly`).
    func holdsPermit(of part: some AttemptAccountant, for attempt: Int, trialOnly: Bool = false) -> Bool {
        let holder = ObjectIdentifier(part)
        return withLedger { state in
            state.permits.contains { $0.isFor(holder, attempt: attempt) && (!trialOnly || $0.permit.trial != nil) }
        }
    }

    /// Takes the permit `part` gave `attempt` of the request, if it holds one (only if it is a trial, when
    /// `trialOnly`): the attempt is settled, or gives its trial up while it waits.
    func takePermit(
        of part: some AttemptAccountant, for attempt: Int, trialOnly: Bool = false
    ) -> CircuitBreakerMachine.Permit? {
        let holder = ObjectIdentifier(part)
        return withLedger { state in
            state.permits.remove { $0.isFor(holder, attempt: attempt) && (!trialOnly || $0.permit.trial != nil) }?
                .permit
        }
    }

    /// Whether a breaker let an attempt of the request through so far.
    var admittedByBreaker: Bool { withLedger { $0.admittedByBreaker } }

    // MARK: Admissions under a host

    /// Notes that `part` admitted `attempt` under `key`, seeing it at `url`, for the session to check against the host
    /// the attempt is sent to; a part that admits an attempt twice under one key (held twice by the chain) is noted
    /// once.
    func admitted(by part: some HostAdmission, attempt: Int, under key: String, at url: URL?) {
        withLedger { state in
            if state.admissions.contains(where: { $0.part === part && $0.attempt == attempt && $0.key == key }) {
                return
            }
            state.admissions.append(Admission(part: part, attempt: attempt, key: key, url: url))
        }
    }

    /// The admissions of `attempt` noted so far, in the order they were noted, left noted.
    func admissions(of attempt: Int) -> InlineList<Admission> {
        withLedger { state in
            var found = InlineList<Admission>.none
            for admission in state.admissions where admission.attempt == attempt { found.append(admission) }
            return found
        }
    }

    /// Notes `admission` under `key`, at `url`, in its place: the attempt gave way and was admitted again under the host
    /// a later adapter moved it to.
    func move(_ admission: Admission, to key: String, at url: URL?) {
        let moved = Admission(part: admission.part, attempt: admission.attempt, key: key, url: url)
        withLedger { state in
            state.admissions.replace(
                where: { $0.part === admission.part && $0.attempt == admission.attempt && $0.key == admission.key },
                with: moved)
        }
    }

    /// Takes the admissions of `attempt`, in the order they were noted, as the session sends it (or drops them, as it
    /// does not).
    func takeAdmissions(of attempt: Int) -> InlineList<Admission> {
        withLedger { state in
            // Usually every admission noted is this attempt's (no other attempt of a hedged round is being adapted):
            // the list moves out whole, without copying it element by element (nor to look at them).
            if !state.admissions.contains(where: { $0.attempt != attempt }) {
                var taken = InlineList<Admission>.none
                swap(&taken, &state.admissions)
                return taken
            }
            var taken = InlineList<Admission>.none
            while let admission = state.admissions.remove(where: { $0.attempt == attempt }) { taken.append(admission) }
            return taken
        }
    }

    // MARK: Settled attempts and the request's end

    /// Marks `attempt` settled, if there is one, and when `endsRequest` the request ended (every attempt counts as
    /// settled from then on: a part that would count one late no longer does), then returns, under the same lock, what
    /// the parts and the observers are to hear of the attempt; its untold refusals count as told from then on.
    func settling(attempt: Int?, endsRequest: Bool = false) -> Settlement {
        record.withLock { record in
            // Once the request ended, every attempt counts as settled: the attempt needs no mark of its own.
            if endsRequest { record.ledger.settled.requestEnded = true }
            guard let attempt else { return Settlement(accountants: .none, hasObservers: false, untold: []) }
            if !endsRequest { record.ledger.settled.insert(attempt) }
            // No part moves a settled attempt: the credentials applied to it are not needed any more.
            if !record.ledger.credentialsApplied.isEmpty {
                record.ledger.credentialsApplied.removeAll { $0.attempt == attempt }
            }
            let untold = record.ledger.shadowRefusals[record.ledger.shadowRefusalsTold...]
            record.ledger.shadowRefusalsTold = record.ledger.shadowRefusals.count
            return Settlement(
                accountants: record.roles.accountants, hasObservers: record.roles.observerCount > 0, untold: untold)
        }
    }

    /// What the parts and the observers hear of the request's end, read once it ended: whether any observer
    /// registered, the parts that settle its attempts, to be told once the observers heard of the end
    /// (``AttemptAccountant/requestEnded(_:)``), every refusal parts in shadow mode would have made of it, and how many
    /// of those no attempt's outcome told (the last ones).
    var ended:
        (
            hasObservers: Bool, accountants: InlineList<any AttemptAccountant>, shadowRefusals: [ShadowRefusal],
            untold: Int
        )
    {
        record.withLock { record in
            (
                record.roles.observerCount > 0, record.roles.accountants, record.ledger.shadowRefusals,
                record.ledger.shadowRefusals.count - record.ledger.shadowRefusalsTold
            )
        }
    }

    /// Whether the session settled `attempt` (told the parts and the observers how it ended), or the request ended.
    func isSettled(attempt: Int) -> Bool {
        withLedger { $0.settled.contains(attempt) }
    }

    /// Whether the request ended.
    var requestEnded: Bool {
        withLedger { $0.settled.requestEnded }
    }

    // MARK: Shadow mode

    /// Notes that attempt `number` starts as a hedge.
    func startsHedge(_ number: Int) {
        withLedger { $0.hedges.append(number) }
    }

    /// Whether attempt `number` started as a hedge.
    func isHedge(_ number: Int) -> Bool {
        withLedger { $0.hedges.contains { $0 == number } }
    }

    /// Forgets what parts in shadow mode noted of hedge `number`, which a gate refused: it never starts, and the
    /// request's next attempt takes its number, so a refusal of it not told yet would name another attempt.
    func hedgeRefused(_ number: Int) {
        withLedger { state in
            while state.shadowed.remove(where: { $0.attempt == number }) != nil {}
            let told = state.shadowRefusalsTold
            guard state.shadowRefusals[told...].contains(where: { $0.stage == .hedge && $0.attempt == number }) else {
                return
            }
            state.shadowRefusals =
                Array(state.shadowRefusals[..<told])
                + state.shadowRefusals[told...].filter { !($0.stage == .hedge && $0.attempt == number) }
        }
    }

    /// Notes `refusal`, which the part whose shadow identity is `part` would have made, for the observers; from now on
    /// that part no longer sees the request, as it would not have seen it had it refused. A refusal of a hedge, before
    /// it starts or as it is adapted, hides that hedge alone: enforced, the round would have gone on without it.
    func refuseInShadow(_ refusal: ShadowRefusal, by part: ObjectIdentifier) {
        withLedger { state in
            var refusal = refusal
            if refusal.stage == .attempt, state.hedges.contains(where: { $0 == refusal.attempt }) {
                refusal = refusal.with(stage: .hedge)
            }
            let hedge = refusal.stage == .hedge
            state.shadowRefusals.append(refusal)
            state.shadowed.append(Shadowed(part: part, attempt: hedge ? refusal.attempt : nil))
        }
    }

    /// Whether the part whose shadow identity is `part` no longer sees `attempt` of the request: it would have refused
    /// the request before, or that hedge.
    func isShadowed(attempt: Int, for part: ObjectIdentifier) -> Bool {
        withLedger { state in
            state.shadowed.contains { $0.part == part && ($0.attempt == nil || $0.attempt == attempt) }
        }
    }

    /// Whether the part whose shadow identity is `part` no longer sees the request at all (not just one hedge of it):
    /// it would have refused an attempt or a retry of it.
    func isWhollyShadowed(for part: ObjectIdentifier) -> Bool {
        withLedger { state in state.shadowed.contains { $0.part == part && $0.attempt == nil } }
    }

    // MARK: Credentials applied

    /// Notes that `scope` applied `credential` to `attempt`, in place of what it applied to that attempt before.
    func note(_ credential: some Sendable, appliedBy scope: some CredentialScope, to attempt: Int) {
        let applied = AppliedCredential(scope: ObjectIdentifier(scope), attempt: attempt, credential: credential)
        withLedger { state in
            state.credentialsApplied.removeAll { $0.scope == applied.scope && $0.attempt == attempt }
            state.credentialsApplied.append(applied)
        }
    }

    /// The credentials scopes applied to `attempt`.
    func credentialsApplied(to attempt: Int) -> [AppliedCredential] {
        withLedger { $0.credentialsApplied.filter { $0.attempt == attempt } }
    }
}

// What the ledger holds for the parts.
extension RequestLedger {
    /// A permit a breaker gave an attempt it let through, held with the request until the attempt is settled: the
    /// breaker keeps nothing for an attempt in flight, and a permit of a request that ended goes with it.
    struct HeldPermit: Sendable {
        let holder: ObjectIdentifier
        let attempt: Int
        let permit: CircuitBreakerMachine.Permit

        /// Whether this is the permit `holder` gave `attempt`.
        func isFor(_ holder: ObjectIdentifier, attempt: Int) -> Bool {
            self.holder == holder && self.attempt == attempt
        }
    }

    /// A credential a scope (an ``AuthenticationInterceptor``) applied to an attempt, which a move of that attempt to
    /// another origin takes off again, whatever credential the scope holds by then.
    struct AppliedCredential: Sendable {
        let scope: ObjectIdentifier
        let attempt: Int
        let credential: any Sendable

        /// The scope among `scopes` that applied the credential, if it is one of them.
        func scope(among scopes: [any CredentialScope]) -> (any CredentialScope)? {
            scopes.first { ObjectIdentifier($0) == scope }
        }
    }

    /// What a part in shadow mode no longer sees of the request after a refusal it would have made: the request from
    /// then on (`attempt` is `nil`), or one hedge. `part` is the part's identity in shadow mode: the breaker, or the
    /// registry whose breaker it is (enforced, a refusal by any of its breakers would end the request).
    struct Shadowed: Sendable {
        let part: ObjectIdentifier
        let attempt: Int?
    }

    /// An attempt a part admitted under a host's key, as the part saw it at `url`, before the session sends it.
    struct Admission: Sendable {
        let part: any HostAdmission
        let attempt: Int
        let key: String
        let url: URL?
    }

    /// What the parts and the observers hear of an attempt the session settles.
    struct Settlement {
        /// What they hear of an attempt of a request that keeps no ledger: no part settles it, and no observer
        /// registered.
        static var nobody: Settlement { Settlement(accountants: .none, hasObservers: false, untold: []) }

        /// The parts that settle their own attempts, in the order they registered: a snapshot, which registrations
        /// made later do not change, and reading it allocates nothing.
        let accountants: InlineList<any AttemptAccountant>
        /// Whether any observer registered so far.
        let hasObservers: Bool
        /// The refusals of parts in shadow mode not told yet, to tell with the attempt's outcome.
        let untold: ArraySlice<ShadowRefusal>
    }
}
