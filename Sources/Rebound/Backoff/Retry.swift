/// Calls `operation` until it succeeds, up to `maxAttempts` times, backing off between attempts as `strategy` says
/// for each error: the `retry` of swift-concurrency-retry, with the same behaviour, so that moving over is a change of
/// import.
///
/// - `maxAttempts` counts the first call: 3 (the default) means one call and at most two retries. Fewer than 1 traps
///   with a message naming the setting, as swift-concurrency-retry's precondition does; check a value read at run time
///   before passing it.
/// - After a failure, `strategy(error)` decides: ``RetryStrategy/backoff(_:)`` sleeps that strategy's delay for the
///   retry count (0 before the first retry) on `clock`, then calls again; ``RetryStrategy/stop`` rethrows the error.
///   The default, `.backoff(.zero)`, sleeps `.zero` on the clock and calls again.
///   The last attempt's error is rethrown without asking `strategy`.
/// - Every error the operation throws is rethrown as it was thrown, never wrapped.
/// - Cancellation: the operation is called at least once, even in a task already cancelled (it decides what that
///   means). An attempt that fails while the task is cancelled ends the retries with the operation's own error. A
///   `CancellationError` thrown by the operation while the task is not cancelled is an error like any other, for
///   `strategy` to judge. The clock's sleep ends a cancelled task's backoff with the clock's error, rethrown as it is
///   (`CancellationError` for the standard clocks), and so does any other error the clock throws.
///
/// ``Session`` keeps its own rules (see ``RequestRetrier``): there, cancellation always ends the request with
/// `CancellationError` and is never offered to retriers.
///
/// ```swift
/// let (data, _) = try await retry(maxAttempts: 5) {
///     try await URLSession.shared.data(from: url)
/// } strategy: { error in
///     (error as? URLError)?.code == .timedOut ? .backoff(.exponential(a: .seconds(1), b: 2).jitter()) : .stop
/// }
/// ```
///
/// - Parameters:
///   - maxAttempts: How many times the operation is called at most, counting the first; at least 1; 3 by default.
///   - tolerance: The tolerance the backoff sleeps allow the clock; none by default.
///   - clock: The clock the backoff sleeps on.
///   - isolation: The actor the operation runs on; the caller's by default.
///   - operation: The operation to run.
///   - strategy: Decides per error whether and how to back off; retry at once by default.
/// - Returns: The operation's first successful result.
/// - Throws: The operation's last error, or the clock's error.
public func retry<R, E: Error, C: Clock>(
    maxAttempts: Int = 3,
    tolerance: C.Duration? = nil,
    clock: C,
    isolation: isolated (any Actor)? = #isolation,
    operation: () async throws(E) -> sending R,
    strategy: (E) -> RetryStrategy = { _ in .backoff(.zero) }
) async throws -> R where C.Duration == Duration {
    ConfigurationError.trapIfInvalid { () throws(ConfigurationError) in
        guard maxAttempts > 0 else {
            throw ConfigurationError(field: "retry(maxAttempts:)", problem: "must be at least 1, got \(maxAttempts)")
        }
    }
    var previousDelay: Duration?
    for retryCount in 0..<(maxAttempts - 1) {
        do {
            return try await operation()
        } catch  where Task.isCancelled {
            throw error
        } catch {
            guard case .backoff(let backoff) = strategy(error) else { throw error }
            let delay = backoff.delay(forRetryCount: retryCount, previousDelay: previousDelay)
            try await clock.sleep(for: delay, tolerance: tolerance)
            previousDelay = delay
        }
    }
    return try await operation()
}

/// Calls `operation` until it succeeds, backing off on the `ContinuousClock`; see
/// ``retry(maxAttempts:tolerance:clock:isolation:operation:strategy:)``.
///
/// - Parameters:
///   - maxAttempts: How many times the operation is called at most, counting the first; at least 1; 3 by default.
///   - tolerance: The tolerance the backoff sleeps allow the clock; none by default.
///   - isolation: The actor the operation runs on; the caller's by default.
///   - operation: The operation to run.
///   - strategy: Decides per error whether and how to back off; retry at once by default.
public func retry<R, E: Error>(
    maxAttempts: Int = 3,
    tolerance: ContinuousClock.Duration? = nil,
    isolation: isolated (any Actor)? = #isolation,
    operation: () async throws(E) -> sending R,
    strategy: (E) -> RetryStrategy = { _ in .backoff(.zero) }
) async throws -> R {
    try await retry(
        maxAttempts: maxAttempts, tolerance: tolerance, clock: ContinuousClock(), isolation: isolation,
        operation: operation, strategy: strategy)
}
