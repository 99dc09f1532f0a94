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
        var continuation: CheckedContinuation<RaceOutcome<Value>, Never>?
        var decided = false
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
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                // Cancelled before this point, the race is decided with nobody to resume: resume here.
                let cancelledEarly = race.state.withLock { state -> Bool in
                    if state.decided { return true }
                    state.continuation = continuation
                    return false
                }
                if cancelledEarly {
                    continuation.resume(returning: .cancelled)
                    return
                }
                let work = Spawn.task { race.decide(.finished(await operation())) }
                let timer = Spawn.task {
                    do {
                        try await clock.sleep(limit)
                    } catch {
                        return  // Cancelled: the race was decided otherwise.
                    }
                    race.decide(.limitReached)
                }
                race.keep(work: work, timer: timer)
            }
        } onCancel: {
            race.decide(.cancelled)
        }
    }

    /// Keeps the tasks, so that deciding can cancel them; cancels them at once if the race is already decided.
    private func keep(work: Task<Void, Never>, timer: Task<Void, Never>) {
        let decided = state.withLock { state -> Bool in
            state.work = work
            state.timer = timer
            return state.decided
        }
        if decided {
            work.cancel()
            timer.cancel()
        }
    }

    /// Resumes the caller with `outcome` unless the race is decided already, and cancels what still runs.
    private func decide(_ outcome: RaceOutcome<Value>) {
        let won = state.withLock { state -> (CheckedContinuation<RaceOutcome<Value>, Never>?, [Task<Void, Never>])? in
            guard !state.decided else { return nil }
            state.decided = true
            defer { state.continuation = nil }
            return (state.continuation, [state.work, state.timer].compactMap { $0 })
        }
        guard let (continuation, tasks) = won else { return }
        for task in tasks { task.cancel() }
        continuation?.resume(returning: outcome)
    }
}
