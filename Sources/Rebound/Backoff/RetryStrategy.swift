/// What the free ``retry(maxAttempts:tolerance:clock:isolation:operation:strategy:)`` function does after a
/// failure: back off and try again, or stop and rethrow.
public enum RetryStrategy: Sendable {
    /// Sleep the strategy's delay for this retry, then call the operation again.
    case backoff(BackoffStrategy)
    /// Stop and rethrow the error.
    case stop
}
