/// An error that ends a request at once: when an attempt fails with it, no retrier is asked.
///
/// The session looks for it behind an adapter's, the transport's or a validator's failure. Rebound's own
/// fail-fast errors conform, such as ``CircuitBreakerOpenError`` (an open breaker must not be retried around) and
/// ``AuthenticationError/excessiveRefresh(count:window:)``. Conform your own errors to get the same treatment.
public protocol NonRetryableError: Error {}

extension ReboundError.Reason {
    /// Whether this failure carries a ``NonRetryableError``, so that the session asks no retrier about it.
    public var isNonRetryable: Bool {
        switch self {
        case .adaptationFailed(let error), .transportFailed(let error), .validationFailed(let error):
            error is any NonRetryableError
        case .circuitOpen:
            true
        case .unacceptableStatusCode, .retryAborted, .decodingFailed, .deadlineExceeded:
            false
        }
    }
}
