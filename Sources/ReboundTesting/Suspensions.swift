import Rebound

/// Tasks suspended until their owner resumes them, each filed under a key (a threshold, a deadline), with the
/// bookkeeping that lets a cancellation arrive before the suspension is registered.
///
/// Lives inside an owner's `Locked` state; `suspend(in:at:key:isReady:didChange:)` does the suspending.
struct Suspensions<Key: Sendable>: Sendable {
    private var entries: [(id: Int, key: Key, continuation: CheckedContinuation<Void, any Error>)] = []
    private var nextID = 0
    /// Suspensions that have an id but are not registered yet.
    private var unregistered: Set<Int> = []
    /// Unregistered suspensions whose task was cancelled.
    private var cancelled: Set<Int> = []

    /// How many tasks are suspended.
    var count: Int { entries.count }

    /// The keys of the waiting suspensions.
    var keys: [Key] { entries.map(\.key) }

    fileprivate mutating func reserveID() -> Int {
        nextID += 1
        unregistered.insert(nextID)
        return nextID
    }

    /// Registers the continuation, or resumes it at once: throwing if its task was cancelled first, normally if
    /// `ready`. Returns whether it was registered.
    fileprivate mutating func register(
        _ id: Int, key: Key, continuation: CheckedContinuation<Void, any Error>, ready: Bool
    ) -> Bool {
        unregistered.remove(id)
        if cancelled.remove(id) != nil {
            continuation.resume(throwing: CancellationError())
        } else if ready {
            continuation.resume()
        } else {
            entries.append((id, key, continuation))
            return true
        }
        return false
    }

    /// Resumes a registered suspension with `CancellationError`, or makes its registration fail at once.
    fileprivate mutating func cancel(_ id: Int) {
        if let index = entries.firstIndex(where: { $0.id == id }) {
            entries.remove(at: index).continuation.resume(throwing: CancellationError())
        } else if unregistered.contains(id) {
            cancelled.insert(id)
        }
    }

    /// Resumes every suspension whose key satisfies `isDue`, in the order `areInOrder` gives.
    mutating func resume(where isDue: (Key) -> Bool, orderedBy areInOrder: ((Key, Key) -> Bool)? = nil) {
        guard !entries.isEmpty else { return }
        var due = entries.filter { isDue($0.key) }
        guard !due.isEmpty else { return }
        entries.removeAll { isDue($0.key) }
        if let areInOrder { due.sort { areInOrder($0.key, $1.key) } }
        for entry in due { entry.continuation.resume() }
    }
}

/// Suspends the calling task in the ``Suspensions`` at `path` of `lock`'s state until the owner resumes it, or at
/// once if `isReady` holds when it registers.
///
/// - Parameters:
///   - isReady: Read under the lock when registering; if it holds, the task goes on without suspending.
///   - didChange: Runs under the lock after the suspension was registered or cancelled (to publish a count, say).
/// - Throws: `CancellationError` if the task is cancelled first, whenever that happens.
func suspend<State, Key>(
    in lock: Locked<State>, at path: any WritableKeyPath<State, Suspensions<Key>> & Sendable, key: Key,
    isReady: @escaping (State) -> Bool, didChange: @escaping @Sendable (inout State) -> Void = { _ in }
) async throws {
    let id = lock.withLock { $0[keyPath: path].reserveID() }
    try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            lock.withLock { state in
                let ready = isReady(state)
                if state[keyPath: path].register(id, key: key, continuation: continuation, ready: ready) {
                    didChange(&state)
                }
            }
        }
    } onCancel: {
        lock.withLock { state in
            state[keyPath: path].cancel(id)
            didChange(&state)
        }
    }
}
