/// A retrier's answer after a failed attempt.
public enum RetryResult: Sendable {
    /// Retry at once.
    case retry
    /// Retry after the delay, slept on the session's clock; a delay of zero or less retries at once, and one longer
    /// than ``longestDelay`` is held there.
    case retryWithDelay(Duration)
    /// Do not retry: the next retrier in the chain is asked, and if none retries, the request fails.
    case doNotRetry
    /// Do not retry, and end the request with this error; the session keeps the attempt's own failure beside it.
    case doNotRetryWithError(any Error)

    /// Whether this answer retries.
    public var retryRequired: Bool {
        switch self {
        case .retry, .retryWithDelay: true
        case .doNotRetry, .doNotRetryWithError: false
        }
    }

    /// The longest delay a retry waits: 10^12 seconds (about 31,700 years), so in effect until the task is
    /// cancelled. Longer delays would overflow the clocks' arithmetic and trap.
    public static let longestDelay = Duration.seconds(1_000_000_000_000)

    /// The delay before the retry: `.zero` for ``retry``, held between zero and ``longestDelay``; `nil` when the
    /// answer does not retry.
    public var delay: Duration? {
        switch self {
        case .retry: .zero
        case .retryWithDelay(let delay): min(max(delay, .zero), Self.longestDelay)
        case .doNotRetry, .doNotRetryWithError: nil
        }
    }

    /// The error of ``doNotRetryWithError(_:)``; `nil` otherwise.
    public var error: (any Error)? {
        if case .doNotRetryWithError(let error) = self { return error }
        return nil
    }
}
