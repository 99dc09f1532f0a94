/// A clock reduced to the two things the pipeline needs, so that `Session` need not be generic over its clock.
struct SessionClock: Sendable {
    /// The time elapsed since the clock was wrapped.
    let now: @Sendable () -> Duration
    /// Sleeps for a duration, throwing `CancellationError` if the task is cancelled.
    let sleep: @Sendable (Duration) async throws -> Void

    init<C: Clock>(_ clock: C) where C.Duration == Duration {
        // The default clock is read through code written for it: the generic path reaches `now` and `duration(to:)`
        // through witness tables, a few hundred nanoseconds per request with cold caches (two reads per request, more
        // with a breaker or a budget).
        if C.self == ContinuousClock.self {
            let origin = ContinuousClock.now
            now = { ContinuousClock.now - origin }
            sleep = { duration in try await ContinuousClock().sleep(for: duration) }
            return
        }
        let origin = clock.now
        now = { origin.duration(to: clock.now) }
        sleep = { duration in try await clock.sleep(for: duration) }
    }
}
