/// A part that holds other parts and knows their roles: ``Interceptor`` and ``LoggingRetrier``, which ``ChainRoles``
/// look into.
protocol RoleContainer {
    /// The roles of the parts it holds, itself included where it plays one.
    var roles: ChainRoles { get }
}

/// The observers, validators and gates of a chain's parts, found once when the chain is built so that requests pay
/// nothing for roles their chain does not have.
///
/// These are the parts the chain holds directly, or inside an ``Interceptor`` or a ``LoggingRetrier``. Parts behind
/// anything else (a user's decorator) are reached through the calls it forwards: they register through the context
/// (``RegisteredRoles``), and ``merged(with:)`` adds them.
struct ChainRoles: Sendable {
    let observers: [any AttemptObserver]
    let validators: [any ResponseValidator]
    let gates: [any RetryGate]

    static let none = ChainRoles(observers: [], validators: [], gates: [])

    /// The roles of a part that only observes.
    static func observing(_ observer: any AttemptObserver) -> ChainRoles {
        ChainRoles(observers: [observer], validators: [], gates: [])
    }

    /// The class instances among ``observers``, by which a registration through the context is found to be one of
    /// them.
    private let observerIdentities: Set<ObjectIdentifier>
    /// The class instances among ``gates``.
    private let gateIdentities: Set<ObjectIdentifier>

    private init(observers: [any AttemptObserver], validators: [any ResponseValidator], gates: [any RetryGate]) {
        self.observers = observers
        self.validators = validators
        self.gates = gates
        self.observerIdentities = Set(observers.compactMap(Self.identity(of:)))
        self.gateIdentities = Set(gates.compactMap(Self.identity(of:)))
    }

    /// Whether the class instance `object` is one of these observers.
    func holdsObserver(_ object: ObjectIdentifier) -> Bool {
        observerIdentities.contains(object)
    }

    /// Whether the class instance `object` is one of these gates.
    func holdsGate(_ object: ObjectIdentifier) -> Bool {
        gateIdentities.contains(object)
    }

    var isEmpty: Bool { observers.isEmpty && validators.isEmpty && gates.isEmpty }

    /// The roles of one interceptor: a composite's collected roles, or the interceptor itself where it conforms.
    init(of interceptor: (any RequestInterceptor)?) {
        guard let interceptor else {
            self = .none
            return
        }
        if let container = interceptor as? any RoleContainer {
            self = container.roles
        } else {
            self.init(collecting: [interceptor])
        }
    }

    /// The roles of `parts` in order, looking into nested composites; a class instance found twice counts once.
    init(collecting parts: [any Sendable]) {
        var observers: [any AttemptObserver] = []
        var validators: [any ResponseValidator] = []
        var gates: [any RetryGate] = []
        var seenObservers = Set<ObjectIdentifier>()
        var seenValidators = Set<ObjectIdentifier>()
        var seenGates = Set<ObjectIdentifier>()

        func isNew(_ part: any Sendable, in seen: inout Set<ObjectIdentifier>) -> Bool {
            Self.identity(of: part).map { seen.insert($0).inserted } ?? true
        }
        func add(_ part: any Sendable) {
            if let container = part as? any RoleContainer {
                let roles = container.roles
                for observer in roles.observers where isNew(observer, in: &seenObservers) {
                    observers.append(observer)
                }
                for validator in roles.validators where isNew(validator, in: &seenValidators) {
                    validators.append(validator)
                }
                for gate in roles.gates where isNew(gate, in: &seenGates) {
                    gates.append(gate)
                }
                return
            }
            if let observer = part as? any AttemptObserver, isNew(observer, in: &seenObservers) {
                observers.append(observer)
            }
            if let validator = part as? any ResponseValidator, isNew(validator, in: &seenValidators) {
                validators.append(validator)
            }
            if let gate = part as? any RetryGate, isNew(gate, in: &seenGates) {
                gates.append(gate)
            }
        }
        parts.forEach(add)
        self.init(observers: observers, validators: validators, gates: gates)
    }

    /// These roles followed by `other`'s; a class instance in both counts once (the session's and a request's
    /// interceptor may share an observer or a budget, which must still hear each attempt once).
    func followed(by other: ChainRoles) -> ChainRoles {
        if other.isEmpty { return self }
        if isEmpty { return other }
        return ChainRoles(
            observers: Self.merging(observers, other.observers), validators: Self.merging(validators, other.validators),
            gates: Self.merging(gates, other.gates))
    }

    /// `first` followed by the parts of `second` that are not class instances already in `first`.
    private static func merging<Part>(_ first: [Part], _ second: [Part]) -> [Part] {
        let seen = Set(first.compactMap { identity(of: $0) })
        return first + second.filter { part in identity(of: part).map { !seen.contains($0) } ?? true }
    }

    /// A class instance's identity, by which a part listed twice is found; `nil` for a value, which cannot be.
    private static func identity(of part: Any) -> ObjectIdentifier? {
        type(of: part) is AnyClass ? ObjectIdentifier(part as AnyObject) : nil
    }
}
