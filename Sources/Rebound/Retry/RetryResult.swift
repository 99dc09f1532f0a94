import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A retrier's answer after a failed attempt.
///
/// A minor release may add a case: switch over it with `@unknown default` (<doc:APIStabilityGuide>).
public enum RetryResult: Sendable {
    /// Retry at once.
    case retry
    /// Retry after the delay, slept on the session's clock; a delay of zero or less retries at once, and one longer
    /// than ``longestDelay`` is held there.
    case retryWithDelay(Duration)
    /// Retry after the delay, starting the next attempts from `request` instead of the caller's request: to send
    /// them to a fallback host, say. Adapters run on `request` as they would on the caller's.
    case retryWithRequest(URLRequest, delay: Duration)
    /// Do not retry: the next retrier in the chain is asked, and if none retries, the request fails.
    case doNotRetry
    /// Do not retry, because of `reason`, a rule of the retrier's (its retry limit, a repeated failure): as with
    /// ``doNotRetry``, the next retrier in the chain is asked, and if none retries, the request fails with `reason` as
    /// its ``ReboundError/stopReason`` (the first reason a retrier of the chain gave).
    case doNotRetryBecause(StopReason)
    /// Do not retry, and end the request with this error; no later retrier is asked. The request ends with
    /// ``ReboundError/Reason/retryAborted(error:original:)``, which keeps the attempt's own failure beside it; given the
    /// very ``ReboundError`` the retrier was asked about, the request ends with that failure, unwrapped.
    case doNotRetryWithError(any Error)

    /// Whether this answer retries.
    public var retryRequired: Bool {
        switch self {
        case .retry, .retryWithDelay, .retryWithRequest: true
        case .doNotRetry, .doNotRetryBecause, .doNotRetryWithError: false
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
        case .retryWithDelay(let delay), .retryWithRequest(_, let delay): min(max(delay, .zero), Self.longestDelay)
        case .doNotRetry, .doNotRetryBecause, .doNotRetryWithError: nil
        }
    }

    /// The request the next attempts start from, for ``retryWithRequest(_:delay:)``; `nil` otherwise.
    public var request: URLRequest? {
        if case .retryWithRequest(let request, _) = self { return request }
        return nil
    }

    /// The error of ``doNotRetryWithError(_:)``; `nil` otherwise.
    public var error: (any Error)? {
        if case .doNotRetryWithError(let error) = self { return error }
        return nil
    }

    /// Whether the answer leaves the decision to the next retrier of a chain: ``doNotRetry`` or
    /// ``doNotRetryBecause(_:)``.
    public var passesOn: Bool {
        switch self {
        case .doNotRetry, .doNotRetryBecause: true
        case .retry, .retryWithDelay, .retryWithRequest, .doNotRetryWithError: false
        }
    }
}

extension RetryResult: CustomStringConvertible {
    /// For example `retry`, `retry in 500 ms`, `retry in 1 s with another request`, `do not retry`,
    /// `do not retry: retry limit reached`, `do not retry: <the error>`.
    public var description: String {
        switch self {
        case .retry: "retry"
        case .retryWithDelay(let delay): "retry in \(delay.logDescription)"
        case .retryWithRequest(_, let delay): "retry in \(delay.logDescription) with another request"
        case .doNotRetry: "do not retry"
        case .doNotRetryBecause(let reason): "do not retry: \(reason)"
        case .doNotRetryWithError(let error): "do not retry: \(Redaction.describe(error))"
        }
    }
}
