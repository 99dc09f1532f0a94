#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Android)
    import Android
#elseif canImport(Darwin)
    import Darwin
#endif

/// A clock reduced to the two things the pipeline needs, so that `Session` need not be generic over its clock.
struct SessionClock: Sendable {
    /// The time elapsed since the clock was wrapped.
    let now: @Sendable () -> Duration
    /// Sleeps for a duration, at most ``RetryResult/longestDelay`` (a clock's arithmetic traps on a deadline past its
    /// range: a deadline, a hedging delay or a queue timeout of `Int64.max` seconds), throwing `CancellationError` if
    /// the task is cancelled.
    let sleep: @Sendable (Duration) async throws -> Void

    init<C: Clock>(_ clock: C) where C.Duration == Duration {
        // The default clock is read through code written for it: the generic path reaches `now` and `duration(to:)`
        // through witness tables, run cold between two round trips (two reads per request, more with a breaker or a
        // budget).
        if C.self == ContinuousClock.self {
            sleep = { duration in try await ContinuousClock().sleep(for: min(duration, RetryResult.longestDelay)) }
            #if os(Linux) || os(Android) || canImport(Darwin)
                // Read as nanoseconds from the system clock `ContinuousClock` reads, subtracted as integers: an
                // `Instant` is 128-bit attoseconds, whose making and subtraction are calls into the runtime.
                let origin = ContinuousNanoseconds.now()
                now = { .nanoseconds(Int64(bitPattern: ContinuousNanoseconds.now() &- origin)) }
            #else
                let origin = ContinuousClock.now
                now = { ContinuousClock.now - origin }
            #endif
            return
        }
        let origin = clock.now
        now = { origin.duration(to: clock.now) }
        sleep = { duration in try await clock.sleep(for: min(duration, RetryResult.longestDelay)) }
    }
}

#if os(Linux) || os(Android) || canImport(Darwin)
    /// `ContinuousClock`'s reading in nanoseconds, from the clock the Swift runtime reads for it: `CLOCK_BOOTTIME` on
    /// Linux, `CLOCK_MONOTONIC_RAW` on Apple platforms.
    enum ContinuousNanoseconds {
        static func now() -> UInt64 {
            #if canImport(Darwin)
                return clock_gettime_nsec_np(CLOCK_MONOTONIC_RAW)
            #else
                var time = timespec()
                clock_gettime(CLOCK_BOOTTIME, &time)
                return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
            #endif
        }
    }
#endif
