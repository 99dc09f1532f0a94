import Rebound

/// A counter that tasks can wait on until it reaches a value, so that tests wait for an event instead of yielding
/// and hoping.
final class CountSignal: Sendable {
    private struct State {
        var count = 0
        /// Waiting tasks, filed under the count they wait for.
        var waiters = Suspensions<Int>()
    }

    private let state = Locked(State())

    /// The current value.
    var count: Int { state.withLock { $0.count } }

    /// Sets the value and wakes the waiters it satisfies.
    func set(_ count: Int) {
        let due = state.withLock { state in
            state.count = count
            return state.waiters.removeDue(through: count)
        }
        for waiter in due { waiter.resume() }
    }

    /// Adds one and wakes the waiters it satisfies.
    func increment() {
        let due = state.withLock { state in
            state.count += 1
            return state.waiters.removeDue(through: state.count)
        }
        for waiter in due { waiter.resume() }
    }

    /// Suspends until the value is at least `threshold`; throws `CancellationError` if the task is cancelled first.
    func wait(atLeast threshold: Int) async throws {
        try await suspend(in: state, at: \.waiters, key: threshold, isReady: { $0.count >= threshold })
    }
}
