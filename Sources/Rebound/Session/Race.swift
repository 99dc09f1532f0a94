/// How a raced operation ended.
enum RaceOutcome<Value: Sendable>: Sendable {
    /// The operation finished first.
    case finished(Value)
    /// The time limit came first; the operation was cancelled and its result, if it ever comes, is dropped.
    case limitReached
    /// The calling task was cancelled first.
    case cancelled
}

/// Runs an operation against a time limit in tasks of their own, so that the caller resumes at the limit (or at its
/// own cancellation) even if the operation ignores cancellation: the operation then finishes in the background and
/// its result is dropped.
///
/// Task-local values and priority carry over to the operation, as with any unstructured task. Exactly one of the three
/// ends resumes the caller; the others find the race decided and do nothing.
final class Race<Value: Sendable>: Sendable {
    private struct State: Sendable {
        var continuation: CheckedContinuation<Void, Never>?
        /// How the race ended, once it is decided.
        var outcome: RaceOutcome<Value>?
        var work: Task<Void, Never>?
        var timer: Task<Void, Never>?
    }

    private let state = Locked(State())

    /// Runs `operation`, giving up after `limit` on `clock`.
    static func run(
        _ limit: Duration, clock: SessionClock, _ operation: @escaping @Sendable () async -> Value
    ) async -> RaceOutcome<Value> {
        guard limit > .zero else { return .limitReached }
        let race = Race()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                // The tasks start under the lock, so that whatever decides the race finds them and cancels them before
                // the caller resumes: an attempt cut short is cancelled before the session settles it, which is what
                // keeps a limiter's place or a breaker's permit from being taken after its attempt was settled.
                let decidedEarly = race.state.withLock { state -> Bool in
                    // Cancelled before this point, the race is decided with nobody to resume: resume here.
                    if state.outcome != nil { return true }
                    state.continuation = continuation
                    state.work = Spawn.task { race.decide(.finished(await operation())) }
                    state.timer = Spawn.task {
                        do {
                            try await clock.sleep(limit)
                        } catch {
                            return  // Cancelled: the race was decided otherwise.
                        }
                        race.decide(.limitReached)
                    }
                    return false
                }
                if decidedEarly { continuation.resume() }
            }
        } onCancel: {
            race.decide(.cancelled)
        }
        // The outcome is handed over through the lock it was stored under, not through the continuation: what the
        // operation's task made is then visibly published to this task, also when the continuation was resumed
        // before this task suspended (the runtime's own synchronisation in that case is invisible to the thread
        // sanitizer).
        return race.state.withLock { $0.outcome } ?? .cancelled
    }

    /// Decides the race with `outcome` unless it is decided already, cancels what still runs and resumes the caller.
    private func decide(_ outcome: RaceOutcome<Value>) {
        let won = state.withLock { state -> (CheckedContinuation<Void, Never>?, [Task<Void, Never>])? in
            guard state.outcome == nil else { return nil }
            state.outcome = outcome
            defer { state.continuation = nil }
            return (state.continuation, [state.work, state.timer].compactMap { $0 })
        }
        guard let (continuation, tasks) = won else { return }
        for task in tasks { task.cancel() }
        continuation?.resume()
    }
}
