import Rebound

/// Tasks suspended until their owner resumes them, each filed under a key (a threshold, a deadline), with the
/// bookkeeping that lets a cancellation arrive before the suspension is registered.
///
/// Kept in key order (and, for equal keys, in the order their suspensions began), so that the earliest key, and the
/// suspensions a key up to some limit, are found without reading the others: a simulation with thousands of sleepers
/// advances its clock in time proportional to the sleeps it ends.
///
/// Lives inside an owner's `Locked` state; `suspend(in:at:key:isReady:didChange:)` does the suspending.
struct Suspensions<Key: Comparable & Sendable>: Sendable {
    /// The registered suspensions, ascending by key, then by id.
    private var entries: [(id: Int, key: Key, continuation: CheckedContinuation<Void, any Error>)] = []
    /// The key of each registered suspension, by id, to find it when its task is cancelled.
    private var keys: [Int: Key] = [:]
    private var nextID = 0
    /// Suspensions that have an id but are not registered yet.
    private var unregistered: Set<Int> = []
    /// Unregistered suspensions whose task was cancelled.
    private var cancelled: Set<Int> = []

    /// How many tasks are suspended.
    var count: Int { entries.count }

    /// The smallest key of the waiting suspensions; `nil` when none waits.
    var smallestKey: Key? { entries.first?.key }

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
            entries.insert((id, key, continuation), at: index(before: (key, id)))
            keys[id] = key
            return true
        }
        return false
    }

    /// Resumes a registered suspension with `CancellationError`, or makes its registration fail at once.
    fileprivate mutating func cancel(_ id: Int) {
        if let key = keys.removeValue(forKey: id) {
            let index = index(before: (key, id))
            entries.remove(at: index).continuation.resume(throwing: CancellationError())
        } else if unregistered.contains(id) {
            cancelled.insert(id)
        }
    }

    /// Removes every suspension whose key is at most `limit` and returns them, in key order (for equal keys, the
    /// earliest first), for the caller to resume once it has let go of its lock: a task being cancelled holds its own
    /// lock while its cancellation handler waits for ours, and resuming it under ours would wait for its.
    mutating func removeDue(through limit: Key) -> [CheckedContinuation<Void, any Error>] {
        var end = 0
        while end < entries.count, entries[end].key <= limit { end += 1 }
        guard end > 0 else { return [] }
        let due = entries[..<end]
        entries.removeSubrange(..<end)
        for entry in due { keys[entry.id] = nil }
        return due.map(\.continuation)
    }

    /// The position of the first registered suspension that does not come before `(key, id)`, found by bisection.
    private func index(before position: (key: Key, id: Int)) -> Int {
        var low = 0
        var high = entries.count
        while low < high {
            let middle = (low + high) / 2
            let entry = entries[middle]
            if entry.key < position.key || (entry.key == position.key && entry.id < position.id) {
                low = middle + 1
            } else {
                high = middle
            }
        }
        return low
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
