import Foundation

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

/// The signature of a retrier's closure, as in Alamofire: the failed request and its error in, the decision out.
public typealias RetryHandler = @Sendable (RetryRequest, ReboundError) async -> RetryResult

/// A retrier made from a closure, for one-off behaviour.
///
/// ```swift
/// let retryValidationFailures = Retrier { request, error in
///     guard case .validationFailed = error.reason, request.retryCount < 3 else { return .doNotRetry }
///     return .retryWithDelay(.seconds(1))
/// }
/// ```
public struct Retrier: RequestRetrier {
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
    public static func retrier(_ handler: @escaping RetryHandler) -> Retrier {
        Retrier(handler)
    }

    /// The media-player default: any failure is retried up to ``Retrier/mediaPlayerRetryLimit`` (3) times, after
    /// e^(0.25 × retry count) seconds (1 s, 1.28 s, 1.65 s) held at ``Retrier/mediaPlayerMaximumDelay`` (5 s); then
    /// the request ends with its last failure and no later retrier is asked.
    ///
    /// It retries whatever failed, whatever the method, as a player fetching segments does; for an API client prefer
    /// ``RetryPolicy``, which retries only idempotent requests and transient failures.
    public static var mediaPlayerDefault: Retrier {
        Retrier { request, error in
            guard request.retryCount < Retrier.mediaPlayerRetryLimit else { return .doNotRetryWithError(error) }
            return .retryWithDelay(Retrier.mediaPlayerDelay(forRetryCount: request.retryCount))
        }
    }
}

extension Retrier {
    /// How many retries ``RequestRetrier/mediaPlayerDefault`` makes: `3`.
    public static let mediaPlayerRetryLimit = 3
    /// The longest delay of ``RequestRetrier/mediaPlayerDefault``: 5 seconds.
    public static let mediaPlayerMaximumDelay = Duration.seconds(5)

    /// The delay of ``RequestRetrier/mediaPlayerDefault`` before retry number `retryCount + 1`: e^(0.25 × retryCount)
    /// seconds, at most ``mediaPlayerMaximumDelay``.
    public static func mediaPlayerDelay(forRetryCount retryCount: Int) -> Duration {
        // Capped before it becomes a Duration, which infinity would trap.
        .seconds(min(Foundation.exp(0.25 * Double(max(retryCount, 0))), mediaPlayerMaximumDelay.seconds))
    }
}
