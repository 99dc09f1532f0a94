import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A part that validates responses once it registered through a request's context: the chain finds no validator by
/// itself, so a part that must see successful responses (``JSONBodyRetrier``) registers from `adapt`.
protocol RegisteredValidator: AnyObject, Sendable {
    /// Why the response fails the attempt; `nil` when it accepts it.
    func reason(for response: HTTPURLResponse, data: Data, context: RequestContext) -> ReboundError.Reason?
}

/// A part that is asked about retries once it registered through a request's context, before the chain's retriers.
protocol RegisteredRetrier: AnyObject, Sendable {
    /// Answers whether to retry, as a ``RequestRetrier`` would.
    func retry(_ request: RetryRequest, dueTo error: ReboundError) async -> RetryResult
}

/// A user's ``ResponseValidator``, registered through ``RequestContext/validateResponses(with:)``.
private final class UserValidator: RegisteredValidator {
    let validator: any ResponseValidator

    init(validator: any ResponseValidator) {
        self.validator = validator
    }

    func reason(for response: HTTPURLResponse, data: Data, context: RequestContext) -> ReboundError.Reason? {
        validator.reason(for: response, data: data, context: context)
    }
}

/// The observers and gates an ``Interceptor`` was given, in one box that registers as a whole.
final class RoleGroup: Sendable {
    let roles: ChainRoles

    init(_ roles: ChainRoles) {
        self.roles = roles
    }
}

/// The roles that parts registered through a request's contexts and that the session's and the request's own lists did
/// not already hold, in the order they registered; each instance once.
///
/// This is the only way a part plays a role beyond the call it was placed for, so that whatever forwards that call
/// (a nested ``Interceptor``, a ``LoggingRetrier``, a user's decorator) keeps the role: nothing looks at a part's type.
///
/// One per request whose chain has adapters or retriers, made of one allocation (its ``Locked`` state); copies share
/// it. A registration of a part the lists hold, or of one already registered, changes nothing and allocates nothing:
/// the common case of a breaker or a budget given straight to a session costs a lock per attempt.
struct RegisteredRoles: Sendable {
    private struct State: Sendable {
        /// The class instances the lists hold as observers and as gates, which registering does not add again.
        let chain: ChainRoles
        var observers: [any AttemptObserver] = []
        var gates: [any RetryGate] = []
        /// The parts whose credential belongs to some hosts only, which every redirect hop is secured with.
        var scopes: [any CredentialScope] = []
        var validators: [any RegisteredValidator] = []
        var retriers: [any RegisteredRetrier] = []
        /// The request's backoff wait, made when a breaker grants a retry.
        var backoffWait: BackoffWait?
        /// The instances registered, in each role; a linear search, as there are few.
        var keys: [Key] = []
    }

    /// A registered instance in one role.
    private struct Key: Equatable, Sendable {
        let object: ObjectIdentifier
        let role: Role
    }

    private enum Role: Equatable, Sendable {
        case observer, gate, scope, validator, retrier, group
    }

    /// One reference wide, because every attempt's context carries it through the adapters' frames.
    private let state: Locked<State>

    init(besides chain: ChainRoles) {
        state = Locked(State(chain: chain))
    }

    func add(observer: some AttemptObserver & AnyObject) {
        state.withLock { Self.add(observer, to: &$0) }
    }

    func add(gate: some RetryGate & AnyObject) {
        state.withLock { Self.add(gate, to: &$0) }
    }

    func add(scope: some CredentialScope) {
        state.withLock { Self.add(ObjectIdentifier(scope), as: .scope, to: &$0) { $0.scopes.append(scope) } }
    }

    func add(validator: some RegisteredValidator) {
        add(validator, as: ObjectIdentifier(validator))
    }

    /// Adds a user's validator, known by the instance it stands for.
    func add(validator: some ResponseValidator & AnyObject) {
        state.withLock { state in
            Self.add(ObjectIdentifier(validator), as: .validator, to: &state) {
                $0.validators.append(UserValidator(validator: validator))
            }
        }
    }

    private func add(_ validator: any RegisteredValidator, as object: ObjectIdentifier) {
        state.withLock { Self.add(object, as: .validator, to: &$0) { $0.validators.append(validator) } }
    }

    func add(retrier: some RegisteredRetrier) {
        state.withLock { Self.add(ObjectIdentifier(retrier), as: .retrier, to: &$0) { $0.retriers.append(retrier) } }
    }

    /// Registers each observer and gate of `group`, once for the group: a value among them cannot be told apart from
    /// another, so the group's identity stands for its members.
    func add(group: RoleGroup) {
        state.withLock { state in
            Self.add(ObjectIdentifier(group), as: .group, to: &state) { state in
                for observer in group.roles.observers { Self.add(observer, to: &state) }
                for gate in group.roles.gates { Self.add(gate, to: &state) }
            }
        }
    }

    /// Appends an observer, unless it is a class instance the lists hold or that registered already.
    private static func add(_ observer: any AttemptObserver, to state: inout State) {
        guard let object = ChainRoles.identity(of: observer) else { return state.observers.append(observer) }
        guard !state.chain.holdsObserver(object) else { return }
        add(object, as: .observer, to: &state) { $0.observers.append(observer) }
    }

    /// Appends a gate, unless it is a class instance the lists hold or that registered already.
    private static func add(_ gate: any RetryGate, to state: inout State) {
        guard let object = ChainRoles.identity(of: gate) else { return state.gates.append(gate) }
        guard !state.chain.holdsGate(object) else { return }
        add(object, as: .gate, to: &state) { $0.gates.append(gate) }
    }

    /// Appends a part in one role unless it registered in it already.
    private static func add(
        _ object: ObjectIdentifier, as role: Role, to state: inout State, appending append: (inout State) -> Void
    ) {
        let key = Key(object: object, role: role)
        guard !state.keys.contains(key) else { return }
        // Room for a breaker's or a budget's two roles and a few more, in one allocation.
        if state.keys.isEmpty { state.keys.reserveCapacity(4) }
        state.keys.append(key)
        append(&state)
    }

    /// The observers registered so far that the lists do not hold.
    var observers: [any AttemptObserver] { state.withLock { $0.observers } }

    /// The gates registered so far that the lists do not hold.
    var gates: [any RetryGate] { state.withLock { $0.gates } }

    /// The parts registered so far whose credential belongs to some hosts only.
    var scopes: [any CredentialScope] { state.withLock { $0.scopes } }

    /// The validators registered so far.
    var validators: [any RegisteredValidator] { state.withLock { $0.validators } }

    /// The request's backoff wait, made on first use: a gate that grants a retry keeps it to end the wait early.
    func makeBackoffWait() -> BackoffWait {
        state.withLock { state in
            if let wait = state.backoffWait { return wait }
            let wait = BackoffWait()
            state.backoffWait = wait
            return wait
        }
    }

    /// The request's backoff wait, if a gate made one.
    var backoffWait: BackoffWait? { state.withLock { $0.backoffWait } }

    /// The retriers registered so far.
    var retriers: [any RegisteredRetrier] { state.withLock { $0.retriers } }
}
