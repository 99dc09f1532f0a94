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
/// Registrations only: what parts hold and note of the request's attempts while it runs (a breaker's permits, the
/// admissions checked as each attempt is sent, which attempts are settled, what parts in shadow mode would have
/// refused, the credentials applied) is the request's ``RequestLedger``. Both are views of one heap object per request
/// that a part may register through (see `RequestPlan.registered`), its ``RequestRecord``, under one lock; copies share
/// it. The first registration is held inline and the others in one array (``Registrations``), so that the realistic
/// chain's registration (its breaker's) allocates nothing, and reading them allocates nothing either: the readers
/// iterate a snapshot. The parts that settle their own attempts are also kept in a list of their own, which the session
/// reads after every attempt without copying the registrations' entries. A registration of a part the lists hold, or
/// of one already registered, changes nothing and allocates nothing.
///
/// The record's lock is the innermost (see ``RequestLedger``): nothing here calls out of this type under it.
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

    /// A request's registrations, in its ``RequestRecord``.
    struct State: Sendable {
        /// The class instances the lists hold as observers and as gates, which registering does not add again.
        let chain: ChainRoles
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
        /// The gates asked before a hedge besides the accountants that spend nothing for it (a pacer), each once, in
        /// the order they registered.
        var hedgeChecks: [any HedgeGate] = []
        /// The gates asked before a hedge that spend for it (a budget), each once, in the order they registered: asked
        /// last, so that a hedge another gate refuses spends nothing.
        var hedgeGates: [any HedgeGate] = []
        /// The part that routes the request's attempts among endpoints (an ``EndpointGroup``): the first to register.
        var router: (any RetryRouter)?
    }

    /// A registered instance in one role.
    fileprivate struct Key: Equatable, Sendable {
        let object: ObjectIdentifier
        let role: Role
    }

    fileprivate enum Role: Equatable, Sendable {
        case observer, gate, scope, validator, retrier, group, accountant
    }

    /// The request's record, its ledger's too: one reference, which every attempt's context carries through the
    /// adapters.
    let record: Locked<RequestRecord>

    /// Registrations besides what `chain` holds, for a request with `deadline`, if it has one (its ledger's).
    init(besides chain: ChainRoles, deadline: DeadlineTimer? = nil) {
        record = Locked(RequestRecord(roles: State(chain: chain), ledger: RequestLedger.State(deadline: deadline)))
    }

    /// What parts hold and note of the request's attempts: the other view of the same record.
    var ledger: RequestLedger { RequestLedger(record: record) }

    /// Runs `body` with the registrations, under the record's lock.
    private func withRoles<Result>(_ body: (inout State) -> Result) -> Result {
        record.withLock { body(&$0.roles) }
    }

    func add(observer: some AttemptObserver & AnyObject) {
        withRoles { Self.add(observer: observer, known: ObjectIdentifier(observer), to: &$0) }
    }

    func add(gate: some RetryGate & AnyObject) {
        withRoles { Self.add(gate: gate, known: ObjectIdentifier(gate), to: &$0) }
    }

    /// Adds a budget: a gate (and an observer too if `observes`), asked before hedges as well, under one lock.
    func add(budget part: some AttemptObserver & RetryGate & HedgeGate, observes: Bool) {
        let object = ObjectIdentifier(part)
        withRoles { state in
            if observes { Self.add(observer: part, known: object, to: &state) }
            Self.add(gate: part, known: object, to: &state)
            if !state.hedgeGates.contains(where: { $0 === part }) { state.hedgeGates.append(part) }
        }
    }

    /// Adds an observer that is asked before a hedge too and spends nothing for it (a pacer), under one lock.
    func add(hedgeCheck part: some AttemptObserver & HedgeGate) {
        withRoles { state in
            Self.add(observer: part, known: ObjectIdentifier(part), to: &state)
            if !state.hedgeChecks.contains(where: { $0 === part }) { state.hedgeChecks.append(part) }
        }
    }

    /// Adds a part that settles its own attempts and is a gate, in one entry (a gate only if the lists do not hold it
    /// as one).
    func add(accountant part: some AttemptAccountant) {
        withRoles { Self.add(accountant: part, to: &$0) }
    }

    /// Adds a part that settles its own attempts to `state`, as a gate too unless the lists hold it as one; called
    /// under the record's lock (``RequestLedger/hold(_:from:for:)`` registers a breaker so), it takes no lock and calls
    /// nothing out of this type.
    static func add(accountant part: some AttemptAccountant, to state: inout State) {
        let object = ObjectIdentifier(part)
        let key = Key(object: object, role: .accountant)
        // Registered already, the case of every attempt after the first: nothing more to check.
        if state.registrations.holds(key) { return }
        // Not a gate a second time: the lists hold it as one, or it registered as one (an `Interceptor`'s gates).
        let gate = Key(object: object, role: .gate)
        let isGate = !state.chain.holdsGate(object) && !state.registrations.holds(gate)
        state.registrations.append(Registration(key: key, entry: .accountant(part, isGate: isGate)))
        state.accountants.append(part)
        if isGate { state.gateCount += 1 }
    }

    func add(scope: some CredentialScope) {
        withRoles { _ = Self.add(.scope(scope), as: Key(object: ObjectIdentifier(scope), role: .scope), to: &$0) }
    }

    /// Adds a validator, known by its instance.
    func add(validator: some ResponseValidator & AnyObject) {
        let key = Key(object: ObjectIdentifier(validator), role: .validator)
        withRoles { _ = Self.add(.validator(validator), as: key, to: &$0) }
    }

    func add(retrier: some RegisteredRetrier) {
        withRoles {
            _ = Self.add(.retrier(retrier), as: Key(object: ObjectIdentifier(retrier), role: .retrier), to: &$0)
        }
    }

    /// Registers each observer and gate of `group`, once for the group: a value among them cannot be told apart from
    /// another, so the group's identity stands for its members.
    func add(group: RoleGroup) {
        withRoles { state in
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
        // Accountants are added by `add(accountant:to:)` alone, which counts them.
        case .accountant, .scope, .retrier, .group: break
        }
        return true
    }

    /// Whether `scope` registered as a scope: whether the part adapted the request.
    func holds(scope: some CredentialScope) -> Bool {
        let key = Key(object: ObjectIdentifier(scope), role: .scope)
        return withRoles { state in state.registrations.holds(key) }
    }

    /// Every registration so far, in order: a snapshot, which registrations made later do not change.
    var registrations: Registrations { withRoles { $0.registrations } }

    /// The registrations to look through for observers: none when no observer registered. A snapshot, which
    /// registrations made later do not change.
    var withObservers: Registrations { withRoles { $0.observerCount == 0 ? .none : $0.registrations } }

    /// Registers `part` as the request's router, unless another part routes it already; returns whether `part` routes
    /// the request.
    func route(through part: some RetryRouter) -> Bool {
        withRoles { state in
            guard let router = state.router else {
                state.router = part
                return true
            }
            return router === part
        }
    }

    /// The part that routes the request's attempts among endpoints, if any.
    var router: (any RetryRouter)? { withRoles { $0.router } }

    /// The endpoint the request's group sent `attempt` to, as its outcome names it; `nil` when no group routed it.
    func placement(of attempt: Attempt) -> EndpointGroup.Placement? {
        guard let sent = attempt.admittedRequest, let router else { return nil }
        return router.placement(of: sent)
    }

    /// Whether any validator registered so far: read on every response, where the common answer, no, spares a snapshot
    /// of the registrations.
    var hasValidators: Bool { withRoles { $0.validatorCount > 0 } }

    /// The registrations to look through for validators: none when no validator registered.
    var withValidators: Registrations { withRoles { $0.validatorCount == 0 ? .none : $0.registrations } }

    /// Whether any gate the lists do not hold registered so far.
    var hasGates: Bool { withRoles { $0.gateCount > 0 } }

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

    /// The parts that settle their own attempts, registered so far, in the order they registered.
    var accountants: InlineList<any AttemptAccountant> { withRoles { $0.accountants } }

    /// The parts asked before a hedge starts, registered so far: those that settle their attempts (a throttle, a
    /// breaker, a limiter), in the order they registered, then the pacers, then the budgets, which spend for it.
    var hedgeGates: [any HedgeGate] {
        withRoles { state in
            state.accountants.map { $0 as any HedgeGate } + state.hedgeChecks + state.hedgeGates
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
        return count > 1 && rest?.contains { $0.key == key } == true
    }
}
