/// The observers and gates that parts registered through a request's contexts, in the order they registered; each
/// instance once.
///
/// One per request whose chain has adapters or retriers; it is read after every attempt, so an empty one costs a lock
/// and no allocation.
final class RegisteredRoles: Sendable {
    private struct State: Sendable {
        var observers: [any AttemptObserver] = []
        var gates: [any RetryGate] = []
        var seen: Set<Key> = []
    }

    /// A registered instance in one role.
    private struct Key: Hashable, Sendable {
        let object: ObjectIdentifier
        let isGate: Bool
    }

    private let state = Locked(State())

    func add(observer: some AttemptObserver & AnyObject) {
        state.withLock { state in
            if state.seen.insert(Key(object: ObjectIdentifier(observer), isGate: false)).inserted {
                state.observers.append(observer)
            }
        }
    }

    func add(gate: some RetryGate & AnyObject) {
        state.withLock { state in
            if state.seen.insert(Key(object: ObjectIdentifier(gate), isGate: true)).inserted {
                state.gates.append(gate)
            }
        }
    }

    /// The observers registered so far.
    var observers: [any AttemptObserver] { state.withLock { $0.observers } }

    /// The gates registered so far.
    var gates: [any RetryGate] { state.withLock { $0.gates } }
}
