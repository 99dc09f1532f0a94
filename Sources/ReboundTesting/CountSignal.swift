import Rebound

/// A counter that tasks can wait on until it reaches a value, so that tests wait for an event instead of yielding
/// and hoping.
final class CountSignal: Sendable {
    private struct Waiter {
        let id: Int
        let threshold: Int
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var count = 0
        var nextID = 0
        var waiters: [Waiter] = []
        /// Waiters that have an id but are not registered yet.
        var unregisteredIDs: Set<Int> = []
        /// Unregistered waiters whose task was cancelled.
        var cancelledIDs: Set<Int> = []
    }

    private let state = Locked(State())

    /// The current value.
    var count: Int { state.withLock { $0.count } }

    /// Sets the value and wakes the waiters it satisfies.
    func set(_ count: Int) {
        state.withLock { state in
            state.count = count
            Self.wake(&state)
        }
    }

    /// Adds one and wakes the waiters it satisfies.
    func increment() {
        state.withLock { state in
            state.count += 1
            Self.wake(&state)
        }
    }

    /// Suspends until the value is at least `threshold`; throws `CancellationError` if the task is cancelled first.
    func wait(atLeast threshold: Int) async throws {
        let id = state.withLock { state in
            state.nextID += 1
            state.unregisteredIDs.insert(state.nextID)
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                state.withLock { state in
                    state.unregisteredIDs.remove(id)
                    if state.cancelledIDs.remove(id) != nil {
                        continuation.resume(throwing: CancellationError())
                    } else if state.count >= threshold {
                        continuation.resume()
                    } else {
                        state.waiters.append(Waiter(id: id, threshold: threshold, continuation: continuation))
                    }
                }
            }
        } onCancel: {
            state.withLock { state in
                if let index = state.waiters.firstIndex(where: { $0.id == id }) {
                    state.waiters.remove(at: index).continuation.resume(throwing: CancellationError())
                } else if state.unregisteredIDs.contains(id) {
                    // The handler ran before the waiter was registered: make registration fail at once.
                    state.cancelledIDs.insert(id)
                }
            }
        }
    }

    private static func wake(_ state: inout State) {
        guard !state.waiters.isEmpty else { return }
        let count = state.count
        state.waiters.removeAll { waiter in
            guard waiter.threshold <= count else { return false }
            waiter.continuation.resume()
            return true
        }
    }
}
