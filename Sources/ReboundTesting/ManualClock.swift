import Rebound

/// A clock whose time moves only when the test advances it: sleeps are recorded and finish when time reaches them.
///
/// Inject it into a `Session` (or any policy that takes a clock), start the work in a task, wait for it to sleep,
/// check what it asked for, and advance:
///
/// ```swift
/// let clock = ManualClock()
/// let session = Session(transport: transport, retriers: [RetryPolicy()], clock: clock)
/// let task = Task { try await session.send(request) }
/// try await clock.waitForSleepers(1)          // the first backoff has started
/// #expect(clock.sleeps == [.milliseconds(500)])
/// clock.advance(by: .milliseconds(500))       // and now it ends
/// ```
///
/// Nothing here sleeps for real or depends on scheduling luck: ``waitForSleepers(_:)`` suspends until the sleep is
/// registered. A cancelled sleep throws `CancellationError` at once. All methods are thread-safe.
public final class ManualClock: Clock, Sendable {
    /// The clock's instants: offsets from its start.
    public typealias Instant = TestInstant

    private struct State {
        var now: TestInstant
        /// Sleeping tasks, filed under their deadline.
        var sleepers = Suspensions<TestInstant>()
        var sleeps: [Duration] = []
    }

    private let state: Locked<State>
    private let pendingSignal = CountSignal()
    private let startedSignal = CountSignal()

    /// Creates a clock that reads `now`, the start (offset zero) by default.
    public init(now: TestInstant = TestInstant(offset: .zero)) {
        state = Locked(State(now: now))
    }

    /// The current time, which changes only through ``advance(by:)`` and ``advance(to:)``.
    public var now: TestInstant { state.withLock { $0.now } }

    /// Zero: the clock has no resolution limit.
    public var minimumResolution: Duration { .zero }

    /// Every sleep asked of this clock so far, as the duration from the time of the call to its deadline, in order;
    /// a sleep asked by a task already cancelled (which throws at once) included.
    public var sleeps: [Duration] { state.withLock { $0.sleeps } }

    /// How many sleeps are waiting for time to reach them.
    public var pendingSleepCount: Int { state.withLock { $0.sleepers.count } }

    /// The earliest deadline of the sleeps waiting for time to reach them; `nil` when none waits. A simulation
    /// advances to it to run its events one instant at a time.
    public var nextDeadline: TestInstant? { state.withLock { $0.sleepers.smallestKey } }

    /// Suspends until the clock is advanced to `deadline`; returns at once if it is already there.
    ///
    /// - Throws: `CancellationError` when the task is cancelled, at once, whatever the clock's time.
    public func sleep(until deadline: TestInstant, tolerance: Duration? = nil) async throws {
        // Recorded even when the task is already cancelled, so that the count of sleeps asked does not depend on
        // when a task that was cancelled got to run.
        let isDue = state.withLock { state in
            state.sleeps.append(state.now.duration(to: deadline))
            startedSignal.set(state.sleeps.count)
            return deadline <= state.now
        }
        try Task.checkCancellation()
        guard !isDue else { return }
        try await suspend(
            in: state, at: \.sleepers, key: deadline, isReady: { deadline <= $0.now },
            didChange: { [pendingSignal] in pendingSignal.set($0.sleepers.count) })
    }

    /// Moves time forward by `duration` and ends every sleep whose deadline it reaches, earliest first (sleeps with the
    /// same deadline in the order they began).
    public func advance(by duration: Duration = .zero) {
        let due = state.withLock { state in
            defer { pendingSignal.set(state.sleepers.count) }
            return Self.move(&state, to: state.now.advanced(by: duration))
        }
        // Outside the lock: a sleeper being cancelled holds its task's lock while its handler waits for the clock's.
        for sleeper in due { sleeper.resume() }
    }

    /// Moves time forward to `instant` (never back) and ends every sleep whose deadline it reaches, earliest first
    /// (sleeps with the same deadline in the order they began).
    public func advance(to instant: TestInstant) {
        let due = state.withLock { state in
            defer { pendingSignal.set(state.sleepers.count) }
            return Self.move(&state, to: max(instant, state.now))
        }
        for sleeper in due { sleeper.resume() }
    }

    /// Suspends until at least `count` sleeps are waiting on this clock.
    ///
    /// - Throws: `CancellationError` if the waiting task is cancelled first.
    public func waitForSleepers(_ count: Int = 1) async throws {
        try await pendingSignal.wait(atLeast: count)
    }

    /// Suspends until at least `count` sleeps in all have been asked of this clock, including those already over.
    ///
    /// - Throws: `CancellationError` if the waiting task is cancelled first.
    public func waitForSleeps(_ count: Int) async throws {
        try await startedSignal.wait(atLeast: count)
    }

    /// Moves the time to `instant` and returns the sleeps it ends, to resume outside the lock, earliest first.
    private static func move(
        _ state: inout State, to instant: TestInstant
    ) -> [CheckedContinuation<Void, any Error>] {
        state.now = instant
        return state.sleepers.removeDue(through: instant)
    }
}
