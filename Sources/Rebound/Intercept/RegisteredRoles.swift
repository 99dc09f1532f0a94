import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The roles that parts registered through a request's contexts and that the session's and the request's own lists did
/// not already hold, in the order they registered; each instance once.
///
/// This is the only way a part plays a role beyond the call it was placed for, so that whatever forwards that call
/// (a nested ``Interceptor``, a ``LoggingRetrier``, a user's decorator) keeps the role: no role is found from a part's
/// type.
///
/// One per request that a part may register through (see `RequestPlan.registered`), made of one heap object (its
/// ``Locked`` state); copies share it. The first registration is held inline and the others in one array
/// (``Registrations``), so that the realistic chain's registration (its breaker's) allocates nothing, and reading them
/// allocates nothing either: the readers iterate a snapshot. The parts that settle their own attempts are also kept in a list of their own, which the
/// session reads after every attempt without copying the registrations' entries. The permit of the attempt a breaker
/// let through is held the same way (``HeldPermit``). A registration of a part the lists hold, or of one already
/// registered, changes nothing and allocates nothing.
///
/// Its lock is the innermost: a breaker holds its own lock while it has the request hold or give back a permit, and
/// nothing here calls out of this type under the lock.
struct RegisteredRoles: Sendable {
    /// One registration: a part in one role, and the instance it is known by (`nil` for a value).
    struct Registration: Sendable {
        fileprivate let key: Key?
        let entry: Entry
    }

    /// Registrations in order, the first held inline: a request's first registration, usually its only one (a
    /// breaker's), allocates nothing. A copy is a snapshot, which registrations made later do not change.
    typealias Registrations = InlineList<Registration>

    /// A registered part in its role.
    enum Entry: Sendable {
        case observer(any AttemptObserver)
        case gate(any RetryGate)
        /// A part whose credential belongs to some hosts only, which every redirect hop is secured with.
        case scope(any CredentialScope)
        /// A validator registered through ``RequestContext/validateResponses(with:)`` (``JSONBodyRetrier``'s too).
        case validator(any ResponseValidator)
        case retrier(any RegisteredRetrier)
        /// A part that settles its own attempts, and is a gate unless `isGate` is `false` (the lists hold it as one).
        case accountant(any AttemptAccountant, isGate: Bool)
        /// An ``Interceptor``'s observers and gates, registered as a whole (each member is an entry of its own).
        case group
    }

    private struct State: Sendable {
        /// The class instances the lists hold as observers and as gates, which registering does not add again.
        let chain: ChainRoles
        /// The request's deadline, if it has one.
        let deadline: DeadlineTimer?
        /// In order; searched linearly for a key, as there are few.
        var registrations = Registrations.none
        /// How many entries are validators: the one role read on every attempt's response.
        var validatorCount = 0
        /// How many entries are observers: read after every attempt.
        var observerCount = 0
        /// How many entries are gates (accountants that are gates included): read before every retry.
        var gateCount = 0
        /// The parts that settle their own attempts, in the order they registered: read after every attempt, without
        /// copying the registrations' entries.
        var accountants = InlineList<any AttemptAccountant>.none
        /// The gates asked before a hedge besides the accountants (a budget), each once, in the order they registered.
        var hedgeGates: [any HedgeGate] = []
        /// The part that routes the request's attempts among endpoints (an ``EndpointGroup``): the first to register.
        var router: (any RetryRouter)?
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
    }

    /// A registered instance in one role.
    fileprivate struct Key: Equatable, Sendable {
        let object: ObjectIdentifier
        let role: Role
    }

    fileprivate enum Role: Equatable, Sendable {
        case observer, gate, scope, validator, retrier, group, accountant
    }

    /// One reference: every attempt's context carries it through the adapters.
    private let state: Locked<State>

    /// Registrations besides what `chain` holds, for a request with `deadline`, if it has one.
    init(besides chain: ChainRoles, deadline: DeadlineTimer? = nil) {
        state = Locked(State(chain: chain, deadline: deadline))
    }

    /// The time left before the request's deadline, read now; `nil` without a deadline. For a part that would wait
    /// (a pacer): a wait that outlasts it can end the request at once instead.
    var timeLeft: Duration? {
        state.withLock { $0.deadline }?.remaining()
    }

    func add(observer: some AttemptObserver & AnyObject) {
        state.withLock { Self.add(observer: observer, known: ObjectIdentifier(observer), to: &$0) }
    }

    func add(gate: some RetryGate & AnyObject) {
        state.withLock { Self.add(gate: gate, known: ObjectIdentifier(gate), to: &$0) }
    }

    /// Adds a budget: a gate (and an observer too if `observes`), asked before hedges as well, under one lock.
    func add(budget part: some AttemptObserver & RetryGate & HedgeGate, observes: Bool) {
        let object = ObjectIdentifier(part)
        state.withLock { state in
            if observes { Self.add(observer: part, known: object, to: &state) }
            Self.add(gate: part, known: object, to: &state)
            if !state.hedgeGates.contains(where: { $0 === part }) { state.hedgeGates.append(part) }
        }
    }

    /// Adds a part that settles its own attempts and is a gate, in one entry (a gate only if the lists do not hold it
    /// as one).
    func add(accountant part: some AttemptAccountant) {
        state.withLock { Self.add(accountant: part, to: &$0) }
    }

    /// Adds a breaker that let `attempt` through with `permit` as an accountant, and holds the permit until the attempt
    /// is settled, under one lock; returns `false`, holding nothing, when the breaker holds a permit for that attempt
    /// already (a breaker the chain holds twice is asked twice for one attempt: the first permit stays).
    func add(
        accountant part: some AttemptAccountant, holding permit: CircuitBreakerMachine.Permit, for attempt: Int
    ) -> Bool {
        let held = HeldPermit(holder: ObjectIdentifier(part), attempt: attempt, permit: permit)
        return state.withLock { state in
            Self.add(accountant: part, to: &state)
            if state.permits.contains(where: { $0.isFor(held.holder, attempt: attempt) }) { return false }
            state.permits.append(held)
            state.admittedByBreaker = true
            return true
        }
    }

    private static func add(accountant part: some AttemptAccountant, to state: inout State) {
        let object = ObjectIdentifier(part)
        let key = Key(object: object, role: .accountant)
        // Registered already, the case of every attempt after the first: nothing more to check.
        if state.registrations.holds(key) { return }
        // Not a gate a second time: the lists hold it as one, or it registered as one (an `Interceptor`'s gates).
        let gate = Key(object: object, role: .gate)
        let isGate = !state.chain.holdsGate(object) && !state.registrations.holds(gate)
        add(.accountant(part, isGate: isGate), as: key, to: &state)
    }

    /// Whether `part` holds a permit for `attempt` of the request.
    func holdsPermit(of part: some AttemptAccountant, for attempt: Int) -> Bool {
        let holder = ObjectIdentifier(part)
        return state.withLock { state in state.permits.contains { $0.isFor(holder, attempt: attempt) } }
    }

    /// Takes the permit `part` gave `attempt` of the request, if it holds one: the attempt is settled.
    func takePermit(of part: some AttemptAccountant, for attempt: Int) -> CircuitBreakerMachine.Permit? {
        let holder = ObjectIdentifier(part)
        return state.withLock { state in state.permits.remove { $0.isFor(holder, attempt: attempt) }?.permit }
    }

    func add(scope: some CredentialScope) {
        state.withLock { _ = Self.add(.scope(scope), as: Key(object: ObjectIdentifier(scope), role: .scope), to: &$0) }
    }

    /// Adds a validator, known by its instance.
    func add(validator: some ResponseValidator & AnyObject) {
        let key = Key(object: ObjectIdentifier(validator), role: .validator)
        state.withLock { _ = Self.add(.validator(validator), as: key, to: &$0) }
    }

    func add(retrier: some RegisteredRetrier) {
        state.withLock {
            _ = Self.add(.retrier(retrier), as: Key(object: ObjectIdentifier(retrier), role: .retrier), to: &$0)
        }
    }

    /// Registers each observer and gate of `group`, once for the group: a value among them cannot be told apart from
    /// another, so the group's identity stands for its members.
    func add(group: RoleGroup) {
        state.withLock { state in
            guard Self.add(.group, as: Key(object: ObjectIdentifier(group), role: .group), to: &state) else { return }
            for observer in group.roles.observers {
                Self.add(observer: observer, known: ChainRoles.identity(of: observer), to: &state)
            }
            for gate in group.roles.gates {
                Self.add(gate: gate, known: ChainRoles.identity(of: gate), to: &state)
            }
        }
    }

    /// Adds an observer known by `object` (`nil` for a value), unless the lists hold it or it registered already.
    private static func add(observer: any AttemptObserver, known object: ObjectIdentifier?, to state: inout State) {
        if let object, state.chain.holdsObserver(object) { return }
        add(.observer(observer), as: object.map { Key(object: $0, role: .observer) }, to: &state)
    }

    /// Adds a gate known by `object` (`nil` for a value), unless the lists hold it or it registered already.
    private static func add(gate: any RetryGate, known object: ObjectIdentifier?, to state: inout State) {
        if let object, state.chain.holdsGate(object) { return }
        // An accountant that is a gate already (a breaker that admitted an attempt) is not added again as one.
        if let object,
            state.registrations.contains(where: {
                if case .accountant(_, isGate: true) = $0.entry { $0.key?.object == object } else { false }
            })
        {
            return
        }
        add(.gate(gate), as: object.map { Key(object: $0, role: .gate) }, to: &state)
    }

    /// Appends an entry unless its instance registered in that role already (a value always is); returns whether it
    /// did.
    @discardableResult
    private static func add(_ entry: @autoclosure () -> Entry, as key: Key?, to state: inout State) -> Bool {
        if let key, state.registrations.holds(key) { return false }
        let entry = entry()
        state.registrations.append(Registration(key: key, entry: entry))
        switch entry {
        case .validator: state.validatorCount += 1
        case .observer: state.observerCount += 1
        case .gate: state.gateCount += 1
        case .accountant(let part, let isGate):
            state.accountants.append(part)
            if isGate { state.gateCount += 1 }
        default: break
        }
        return true
    }

    /// Notes that `scope` applied `credential` to `attempt`, in place of what it applied to that attempt before.
    func note(_ credential: some Sendable, appliedBy scope: some CredentialScope, to attempt: Int) {
        let applied = AppliedCredential(scope: ObjectIdentifier(scope), attempt: attempt, credential: credential)
        state.withLock { state in
            state.credentialsApplied.removeAll { $0.scope == applied.scope && $0.attempt == attempt }
            state.credentialsApplied.append(applied)
        }
    }

    /// The credentials scopes applied to `attempt`.
    func credentialsApplied(to attempt: Int) -> [AppliedCredential] {
        state.withLock { $0.credentialsApplied.filter { $0.attempt == attempt } }
    }

    /// Whether `scope` registered as a scope: whether the part adapted the request.
    func holds(scope: some CredentialScope) -> Bool {
        let key = Key(object: ObjectIdentifier(scope), role: .scope)
        return state.withLock { state in state.registrations.holds(key) }
    }

    /// Every registration so far, in order: a snapshot, which registrations made later do not change.
    var registrations: Registrations { state.withLock { $0.registrations } }

    /// The registrations to look through for observers: none when no observer registered. A snapshot, which
    /// registrations made later do not change.
    var withObservers: Registrations { state.withLock { $0.observerCount == 0 ? .none : $0.registrations } }

    /// Whether a breaker let an attempt of the request through so far.
    var admittedByBreaker: Bool { state.withLock { $0.admittedByBreaker } }

    /// Marks `attempt` settled, if there is one, and when `endsRequest` the request ended (every attempt counts as
    /// settled from then on: a part that would count one late no longer does), then returns, under the same lock, what
    /// the parts and the observers are to hear of the attempt; its untold refusals count as told from then on.
    func settling(attempt: Int?, endsRequest: Bool = false) -> Settlement {
        state.withLock { state in
            if endsRequest { state.settled.endRequest() }
            guard let attempt else { return Settlement(accountants: .none, hasObservers: false, untold: []) }
            state.settled.insert(attempt)
            // No part moves a settled attempt: the credentials applied to it are not needed any more.
            if !state.credentialsApplied.isEmpty { state.credentialsApplied.removeAll { $0.attempt == attempt } }
            let untold = state.shadowRefusals[state.shadowRefusalsTold...]
            state.shadowRefusalsTold = state.shadowRefusals.count
            return Settlement(accountants: state.accountants, hasObservers: state.observerCount > 0, untold: untold)
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
        state.withLock { state in
            (
                state.observerCount > 0, state.accountants, state.shadowRefusals,
                state.shadowRefusals.count - state.shadowRefusalsTold
            )
        }
    }

    /// Notes that `part` admitted `attempt` under `key`, seeing it at `url`, for the session to check against the host
    /// the attempt is sent to; a part that admits an attempt twice under one key (held twice by the chain) is noted
    /// once.
    func admitted(by part: some HostAdmission, attempt: Int, under key: String, at url: URL?) {
        state.withLock { state in
            if state.admissions.contains(where: { $0.part === part && $0.attempt == attempt && $0.key == key }) {
                return
            }
            state.admissions.append(Admission(part: part, attempt: attempt, key: key, url: url))
        }
    }

    /// Takes the admissions of `attempt`, in the order they were noted, as the session sends it (or drops them, as it
    /// does not).
    func takeAdmissions(of attempt: Int) -> InlineList<Admission> {
        state.withLock { state in
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

    /// Notes that attempt `number` starts as a hedge.
    func startsHedge(_ number: Int) {
        state.withLock { $0.hedges.append(number) }
    }

    /// Forgets what parts in shadow mode noted of hedge `number`, which a gate refused: it never starts, and the
    /// request's next attempt takes its number, so a refusal of it not told yet would name another attempt.
    func hedgeRefused(_ number: Int) {
        state.withLock { state in
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
        state.withLock { state in
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
        state.withLock { state in
            state.shadowed.contains { $0.part == part && ($0.attempt == nil || $0.attempt == attempt) }
        }
    }

    /// Registers `part` as the request's router, unless another part routes it already; returns whether `part` routes
    /// the request.
    func route(through part: some RetryRouter) -> Bool {
        state.withLock { state in
            guard let router = state.router else {
                state.router = part
                return true
            }
            return router === part
        }
    }

    /// The part that routes the request's attempts among endpoints, if any.
    var router: (any RetryRouter)? { state.withLock { $0.router } }

    /// The endpoint the request's group sent `attempt` to, as its outcome names it; `nil` when no group routed it.
    func placement(of attempt: Attempt) -> EndpointGroup.Placement? {
        guard let sent = attempt.admittedRequest, let router else { return nil }
        return router.placement(of: sent)
    }

    /// Whether the part whose shadow identity is `part` no longer sees the request at all (not just one hedge of it):
    /// it would have refused an attempt or a retry of it.
    func isWhollyShadowed(for part: ObjectIdentifier) -> Bool {
        state.withLock { state in state.shadowed.contains { $0.part == part && $0.attempt == nil } }
    }

    /// Whether the session settled `attempt` (told the parts and the observers how it ended), or the request ended.
    func isSettled(attempt: Int) -> Bool {
        state.withLock { $0.settled.contains(attempt) }
    }

    /// Whether the request ended.
    var requestEnded: Bool {
        state.withLock { $0.settled.requestEnded }
    }

    /// The registrations to look through for validators: none when no validator registered (the common case, read on
    /// every response).
    var withValidators: Registrations { state.withLock { $0.validatorCount == 0 ? .none : $0.registrations } }

    /// Whether any gate the lists do not hold registered so far.
    var hasGates: Bool { state.withLock { $0.gateCount > 0 } }

    /// The gates registered so far that the lists do not hold.
    var gates: [any RetryGate] {
        registrations.compactMap { registration -> (any RetryGate)? in
            switch registration.entry {
            case .gate(let gate): gate
            case .accountant(let part, isGate: true): part
            default: nil
            }
        }
    }

    /// The parts asked before a hedge starts, registered so far: those that settle their attempts (a throttle, a
    /// breaker), in the order they registered, then the budgets.
    var hedgeGates: [any HedgeGate] {
        state.withLock { state in
            state.accountants.map { $0 as any HedgeGate } + state.hedgeGates
        }
    }

    /// The parts registered so far whose credential belongs to some hosts only.
    var scopes: [any CredentialScope] {
        registrations.compactMap { if case .scope(let scope) = $0.entry { scope } else { nil } }
    }

    /// The retriers registered so far.
    var retriers: [any RegisteredRetrier] {
        registrations.compactMap { if case .retrier(let retrier) = $0.entry { retrier } else { nil } }
    }
}

extension InlineList where Element == RegisteredRoles.Registration {
    /// Whether a registration has `key`, its keys read in place: no entry is copied (each copy of an entry, an enum
    /// with existential payloads, goes through the runtime).
    fileprivate func holds(_ key: RegisteredRoles.Key) -> Bool {
        // Empty, the case of a request's first registration (asked three times): no look at the optional `first`,
        // which reads its payload's layout through the runtime each time.
        if count == 0 { return false }
        if first?.key == key { return true }
        return count > 1 && rest.contains { $0.key == key }
    }
}
