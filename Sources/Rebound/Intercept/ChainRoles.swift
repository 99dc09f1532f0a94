/// The observers and gates a session or a request was given explicitly (`observers:`, `gates:`), or an ``Interceptor``
/// holds, kept with the identities of their class instances so that a part that also registers through the context
/// is told once. One object, which every request of the session or interceptor that made it shares.
///
/// No role is ever found by looking at a part's type: a part plays the role of the list it is given in, and any other
/// role it registers through the context of the calls it gets (``RegisteredRoles``). That is what keeps every role
/// behind a wrapper: a wrapper that forwards the call it was placed for forwards the registrations too.
final class ChainRoles: Sendable {
    let observers: [any AttemptObserver]
    let gates: [any RetryGate]

    static let none = ChainRoles(observers: [], gates: [])

    /// The class instances among ``observers``, by which a registration through the context is found to be one of
    /// them.
    private let observerIdentities: Set<ObjectIdentifier>
    /// The class instances among ``gates``.
    private let gateIdentities: Set<ObjectIdentifier>

    /// The roles given, in order; a class instance listed twice counts once.
    init(observers: [any AttemptObserver], gates: [any RetryGate]) {
        self.observers = Self.merging(observers, [])
        self.gates = Self.merging(gates, [])
        self.observerIdentities = Set(self.observers.compactMap(Self.identity(of:)))
        self.gateIdentities = Set(self.gates.compactMap(Self.identity(of:)))
    }

    /// Whether the class instance `object` is one of these observers.
    func holdsObserver(_ object: ObjectIdentifier) -> Bool {
        !observerIdentities.isEmpty && observerIdentities.contains(object)
    }

    /// Whether the class instance `object` is one of these gates.
    func holdsGate(_ object: ObjectIdentifier) -> Bool {
        !gateIdentities.isEmpty && gateIdentities.contains(object)
    }

    var isEmpty: Bool { observers.isEmpty && gates.isEmpty }

    /// These roles followed by `other`'s; a class instance in both counts once (the session's and a request's lists
    /// may share an observer or a gate, which must still hear each attempt once).
    func followed(by other: ChainRoles) -> ChainRoles {
        if other.isEmpty { return self }
        if isEmpty { return other }
        return ChainRoles(
            observers: Self.merging(observers, other.observers), gates: Self.merging(gates, other.gates))
    }

    /// `first` followed by `second`, without the class instances seen before.
    private static func merging<Part>(_ first: [Part], _ second: [Part]) -> [Part] {
        var seen = Set<ObjectIdentifier>()
        return (first + second).filter { part in identity(of: part).map { seen.insert($0).inserted } ?? true }
    }

    /// A class instance's identity, by which a part listed twice is found; `nil` for a value, which cannot be.
    static func identity(of part: Any) -> ObjectIdentifier? {
        type(of: part) is AnyClass ? ObjectIdentifier(part as AnyObject) : nil
    }
}
