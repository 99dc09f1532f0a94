/// Decides, after a failed attempt, whether and when to try again.
///
/// The session asks its retriers exactly once per failed attempt, in order: the session's interceptor first,
/// then the request's own. ``RetryResult/doNotRetry`` passes the question to the next retrier; any other answer
/// wins and later retriers are not asked. Failures of every kind reach retriers: adapter errors, transport
/// errors, unacceptable status codes and validator errors. Cancellation never does.
///
/// Retriers are shared by concurrent requests, hence `Sendable`.
public protocol RequestRetrier: Sendable {
    /// Answers whether to retry `request`, whose last attempt failed with `error`.
    func retry(_ request: RetryRequest, dueTo error: ReboundError) async -> RetryResult
}

/// A retrier made from a closure, for one-off behaviour.
///
/// ```swift
/// let retryValidationFailures = Retrier { request, error in
///     guard case .validationFailed = error.reason, request.retryCount < 3 else { return .doNotRetry }
///     return .retryWithDelay(.seconds(1))
/// }
/// ```
public struct Retrier: RequestRetrier {
    /// The closure's signature: the failed request and its error in, the decision out.
    public typealias RetryHandler = @Sendable (RetryRequest, ReboundError) async -> RetryResult

    private let handler: RetryHandler

    /// Creates a retrier that calls `handler` for every failed attempt.
    public init(_ handler: @escaping RetryHandler) {
        self.handler = handler
    }

    /// Calls the closure.
    public func retry(_ request: RetryRequest, dueTo error: ReboundError) async -> RetryResult {
        await handler(request, error)
    }
}

extension RequestRetrier where Self == Retrier {
    /// A retrier that calls `handler` for every failed attempt.
    public static func retrier(_ handler: @escaping Retrier.RetryHandler) -> Retrier {
        Retrier(handler)
    }
}
