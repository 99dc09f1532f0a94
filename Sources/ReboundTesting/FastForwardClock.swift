import Rebound

/// A clock on which every sleep ends at once, moving the clock's time to its deadline: for tests that check
/// which delays were asked for without waiting for them.
///
/// ```swift
/// let clock = FastForwardClock()
/// let session = Session(retriers: [RetryPolicy()], clock: clock)
/// _ = try await session.send(url)          // against a route that answers 503, 503, 200
/// #expect(clock.sleeps == [.milliseconds(500), .seconds(1)])
/// ```
///
/// A cancelled task's sleep throws `CancellationError`. All methods are thread-safe.
///
/// Not for sessions with a deadline: each request races its attempts against one sleep until the deadline, and on this
/// clock that sleep ends at once, so every request would time out. Test deadlines on a `ManualClock`.
public final class FastForwardClock: Clock, Sendable {
    /// The clock's instants: offsets from its start.
    public typealias Instant = TestInstant

    private struct State {
        var now: TestInstant
        var sleeps: [Duration] = []
    }

    private let state: Locked<State>

    /// Creates a clock that reads `now`, the start (offset zero) by default.
    public init(now: TestInstant = TestInstant(offset: .zero)) {
        state = Locked(State(now: now))
    }

    /// The current time: the start, moved forward by every sleep.
    public var now: TestInstant { state.withLock { $0.now } }

    /// Zero: the clock has no resolution limit.
    public var minimumResolution: Duration { .zero }

    /// Every sleep asked of this clock so far, as the duration from the time of the call to its deadline, in order.
    public var sleeps: [Duration] { state.withLock { $0.sleeps } }

    /// Records the sleep and moves the time to `deadline` if it is later, without suspending.
    ///
    /// - Throws: `CancellationError` when the task is cancelled.
    public func sleep(until deadline: TestInstant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        state.withLock { state in
            state.sleeps.append(state.now.duration(to: deadline))
            state.now = max(state.now, deadline)
        }
    }
}
