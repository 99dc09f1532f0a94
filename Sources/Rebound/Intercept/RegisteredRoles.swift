/// The observers, gates and credential scopes that parts registered through a request's contexts and that the chain did not already
/// hold, in the order they registered; each instance once.
///
/// One per request whose chain has adapters or retriers, made of one allocation (its ``Locked`` state); copies share
/// it. A registration of a part the chain holds directly, or of one already registered, changes nothing and allocates
/// nothing: the common case of a breaker or a budget given straight to a session costs a lock per attempt.
struct RegisteredRoles: Sendable {
    private struct State: Sendable {
        /// The class instances the chain holds as observers and as gates, which registering does not add again.
        let chain: ChainRoles
        var observers: [any AttemptObserver] = []
        var gates: [any RetryGate] = []
        /// The parts whose credential belongs to some hosts only, which every redirect hop is secured with.
        var scopes: [any CredentialScope] = []
        /// The instances registered, in each role; a linear search, as there are few.
        var keys: [Key] = []
    }

    /// A registered instance in one role.
    private struct Key: Equatable, Sendable {
        let object: ObjectIdentifier
        let role: Role
    }

    private enum Role: Equatable, Sendable {
        case observer, gate, scope
    }

    /// One reference wide, because every attempt's context carries it through the adapters' frames.
    private let state: Locked<State>

    init(besides chain: ChainRoles) {
        state = Locked(State(chain: chain))
    }

    func add(observer: some AttemptObserver & AnyObject) {
        add(ObjectIdentifier(observer), as: .observer) { $0.observers.append(observer) }
    }

    func add(gate: some RetryGate & AnyObject) {
        add(ObjectIdentifier(gate), as: .gate) { $0.gates.append(gate) }
    }

    func add(scope: some CredentialScope) {
        add(ObjectIdentifier(scope), as: .scope) { $0.scopes.append(scope) }
    }

    /// Appends a part in one role unless the chain holds it in that role or it registered in it already.
    private func add(_ object: ObjectIdentifier, as role: Role, appending append: (inout State) -> Void) {
        state.withLock { state in
            let key = Key(object: object, role: role)
            let held =
                switch role {
                case .observer: state.chain.holdsObserver(object)
                case .gate: state.chain.holdsGate(object)
                case .scope: false
                }
            guard !held, !state.keys.contains(key) else { return }
            // Room for a breaker's or a budget's two roles and a few more, in one allocation.
            if state.keys.isEmpty { state.keys.reserveCapacity(4) }
            state.keys.append(key)
            append(&state)
        }
    }

    /// The observers registered so far that the chain does not hold.
    var observers: [any AttemptObserver] { state.withLock { $0.observers } }

    /// The gates registered so far that the chain does not hold.
    var gates: [any RetryGate] { state.withLock { $0.gates } }

    /// The parts registered so far whose credential belongs to some hosts only.
    var scopes: [any CredentialScope] { state.withLock { $0.scopes } }
}
