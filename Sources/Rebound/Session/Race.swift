/// How a raced operation ended.
enum RaceOutcome<Value: Sendable>: Sendable {
    /// The operation finished first.
    case finished(Value)
    /// The time limit came first; the operation was cancelled and its result, if it ever comes, is dropped.
    case limitReached
    /// The calling task was cancelled first.
    case cancelled
}

/// Runs an operation against a time limit in a task of its own, so that the caller resumes at the limit (or at its
/// own cancellation) even if the operation ignores cancellation: the operation then finishes in the background and
/// its result is dropped.
///
/// The limit is a timer of the race's own (an attempt timeout, the offline retrier's wait) or the request's deadline
/// (``DeadlineTimer``), which every step the request awaits under it shares. Task-local values and priority carry over
/// to the operation, as with any unstructured task. Exactly one of the three ends resumes the caller; the others find
/// the race decided and do nothing.
final class Race<Value: Sendable>: Sendable {
    /// What ends the race when its time is up.
    private enum Limit: Sendable {
        /// A timer of the race's own.
        case timer(Task<Void, Never>)
        /// The request's deadline, which the race watches under `key`.
        case deadline(DeadlineTimer, key: Int)
    }

    private struct State: Sendable {
        var continuation: CheckedContinuation<Void, Never>?
        /// How the race ended, once it is decided.
        var outcome: RaceOutcome<Value>?
        var work: Task<Void, Never>?
        var limit: Limit?
    }

    private let state = Locked(State())

    /// Runs `operation`, giving up after `limit` on `clock`.
    static func run(
        _ limit: Duration, clock: SessionClock, _ operation: @escaping @Sendable () async -> Value
    ) async -> RaceOutcome<Value> {
        guard limit > .zero else { return .limitReached }
        return await run(operation) { race in
            .timer(
                Spawn.task {
                    do {
                        try await clock.sleep(limit)
                    } catch {
                        return  // Cancelled: the race was decided otherwise.
                    }
                    race.decide(.limitReached)
                })
        }
    }

    /// Runs `operation`, giving up when `deadline` passes.
    static func run(
        until deadline: DeadlineTimer, _ operation: @escaping @Sendable () async -> Value
    ) async -> RaceOutcome<Value> {
        await run(operation) { race in
            deadline.watch { race.decide(.limitReached) }.map { .deadline(deadline, key: $0) }
        }
    }

    /// Runs `operation` against the limit `startLimit` starts for the race; a limit that is already over (`nil`)
    /// decides the race before the operation starts.
    private static func run(
        _ operation: @escaping @Sendable () async -> Value, limitedBy startLimit: (Race) -> Limit?
    ) async -> RaceOutcome<Value> {
        let race = Race()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                // The task and the limit start under the lock, so that whatever decides the race finds them and stops
                // them before the caller resumes: an attempt cut short is cancelled before the session settles it,
                // which is what keeps a limiter's place or a breaker's permit from being taken after its attempt was
                // settled.
                let decidedEarly = race.state.withLock { state -> Bool in
                    // Cancelled before this point, the race is decided with nobody to resume: resume here.
                    if state.outcome != nil { return true }
                    guard let limit = startLimit(race) else {
                        state.outcome = .limitReached
                        return true
                    }
                    state.continuation = continuation
                    state.limit = limit
                    state.work = Spawn.task { race.decide(.finished(await operation())) }
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

    /// Decides the race with `outcome` unless it is decided already, stops what still runs and resumes the caller.
    private func decide(_ outcome: RaceOutcome<Value>) {
        let won = state.withLock { state -> (CheckedContinuation<Void, Never>?, Task<Void, Never>?, Limit?)? in
            guard state.outcome == nil else { return nil }
            state.outcome = outcome
            defer { state.continuation = nil }
            return (state.continuation, state.work, state.limit)
        }
        guard let (continuation, work, limit) = won else { return }
        work?.cancel()
        switch limit {
        case .timer(let timer): timer.cancel()
        case .deadline(let deadline, let key): deadline.stopWatching(key)
        case nil: break
        }
        continuation?.resume()
    }
}

/// A request's deadline and the one timer that keeps it: every step the request awaits under its deadline (an attempt,
/// the retriers' decision, each attempt of a hedged round) races this timer, not one of its own.
///
/// The timer starts with the first step that watches it and sleeps until the deadline; when it fires, it cuts every
/// step watching it, in the order they began to watch, and a step that watches later is cut at once. The request's
/// end stops it (``stop()``), so that no timer outlives its request. Safe to use from any task.
final class DeadlineTimer: Sendable {
    /// When the request must end, on the session's clock.
    let end: Duration
    let clock: SessionClock

    private struct State: Sendable {
        var timer: Task<Void, Never>?
        /// Whether the deadline has passed or the request has ended: no step is watched any more.
        var isOver = false
        /// What cuts each step watching, by key, in the order they began to watch.
        var watching: [(key: Int, cut: @Sendable () -> Void)] = []
        var nextKey = 0
    }

    private let state = Locked(State())

    /// The deadline of a request that must end at `end` on `clock`.
    init(end: Duration, clock: SessionClock) {
        self.end = end
        self.clock = clock
    }

    /// The time left before the deadline, read now.
    func remaining() -> Duration {
        end - clock.now()
    }

    /// Has `cut` called once when the deadline passes, starting the timer if nothing watched it yet; returns the key
    /// to stop watching with, or `nil` (and never calls `cut`) when the deadline has passed or the timer was stopped.
    func watch(_ cut: @escaping @Sendable () -> Void) -> Int? {
        state.withLock { state -> Int? in
            if state.timer == nil, !state.isOver {
                if end > clock.now() {
                    state.timer = Spawn.task { [end, clock] in
                        // The time left is read when the task runs, so that a task that starts late does not cut late.
                        let wait = end - clock.now()
                        if wait > .zero {
                            do {
                                try await clock.sleep(wait)
                            } catch {
                                return  // Cancelled: the request ended first.
                            }
                        }
                        self.pass()
                    }
                } else {
                    state.isOver = true
                }
            }
            guard !state.isOver else { return nil }
            state.nextKey += 1
            state.watching.append((state.nextKey, cut))
            return state.nextKey
        }
    }

    /// Stops watching for the step that watched under `key`.
    func stopWatching(_ key: Int) {
        state.withLock { state in state.watching.removeAll { $0.key == key } }
    }

    /// Stops the timer with the request: a step that watches from now on is cut at once.
    func stop() {
        let timer = state.withLock { state -> Task<Void, Never>? in
            state.isOver = true
            state.watching = []
            defer { state.timer = nil }
            return state.timer
        }
        timer?.cancel()
    }

    /// The deadline passed: cuts every step watching, outside the lock (each cut takes its race's lock).
    private func pass() {
        let cuts = state.withLock { state -> [@Sendable () -> Void] in
            state.isOver = true
            state.timer = nil
            defer { state.watching = [] }
            return state.watching.map(\.cut)
        }
        for cut in cuts { cut() }
    }
}
