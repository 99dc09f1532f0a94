import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A retrier made of one closure that sees the kind of request, the retry count and the last response or error, and
/// answers "retry after this delay, optionally with this request" or "abort": the shape media players use.
///
/// The label the caller gave the request is its kind, so one handler can be patient with critical requests and
/// quick to give up on others; answering with a request sends the next attempts elsewhere, to a fallback host say.
/// Adapters run on that request as they would on the caller's.
///
/// ```swift
/// let handler = RetryHandler { failure in
///     let patience = failure.label == "manifest" ? 5 : 1
///     guard failure.retryCount < patience else { return .abort }
///     var fallback = failure.originalRequest
///     fallback.url = fallbackURL(for: fallback.url)
///     return .retry(after: .milliseconds(250 << failure.retryCount), request: fallback)
/// }
/// ```
public struct RetryHandler: RequestRetrier {
    /// What failed.
    public enum Last: Sendable {
        /// The attempt got a response that failed validation, with its body.
        case response(HTTPURLResponse, Data)
        /// The attempt got no response: an adapter or the transport failed.
        case error(any Error)
    }

    /// What the handler knows about the failed attempt.
    public struct Failure: Sendable {
        /// The request's label: its kind; `nil` if the caller gave none.
        public let label: String?
        /// How many retries came before the attempt that failed: `0` after the first attempt.
        public let retryCount: Int
        /// The last response or error.
        public let last: Last
        /// The request as the caller gave it, the usual starting point for a modified request.
        public let originalRequest: URLRequest
        /// The request sent in the failed attempt, after adaptation; `nil` if an adapter failed.
        public let lastRequest: URLRequest?
        /// The session's error for the failed attempt.
        public let error: ReboundError
    }

    /// The handler's answer.
    public enum Decision: Sendable {
        /// Retry after `delay`; from `request` instead of the request so far, when one is given.
        case retry(after: Duration, request: URLRequest? = nil)
        /// Do not retry: the next retrier in the chain is asked, and if none retries, the request fails.
        case abort
    }

    /// The closure's signature.
    public typealias Handler = @Sendable (Failure) async -> Decision

    private let handler: Handler

    /// Creates a retrier that calls `handler` for every failed attempt.
    public init(_ handler: @escaping Handler) {
        self.handler = handler
    }

    /// Calls the handler and translates its decision into a ``RetryResult``.
    public func retry(_ request: RetryRequest, dueTo error: ReboundError) async -> RetryResult {
        let last: Last =
            if let response = request.response {
                .response(response, request.data ?? Data())
            } else {
                .error(error.underlyingError ?? error)
            }
        let failure = Failure(
            label: request.label, retryCount: request.retryCount, last: last, originalRequest: request.originalRequest,
            lastRequest: request.lastRequest, error: error)
        switch await handler(failure) {
        case .retry(let delay, nil):
            return .retryWithDelay(delay)
        case .retry(let delay, let modified?):
            return .retryWithRequest(modified, delay: delay)
        case .abort:
            return .doNotRetry
        }
    }
}

extension RequestRetrier where Self == RetryHandler {
    /// A ``RetryHandler`` that calls `handler` for every failed attempt.
    public static func retryHandler(_ handler: @escaping RetryHandler.Handler) -> RetryHandler {
        RetryHandler(handler)
    }
}
