import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An adapter and a retrier in one type, each half defaulting to pass-through.
///
/// Conform and implement either method, or both: the default ``RequestAdapter/adapt(_:context:)`` returns the
/// request unchanged and the default ``RequestRetrier/retry(_:dueTo:)`` answers ``RetryResult/doNotRetry``.
public protocol RequestInterceptor: RequestAdapter, RequestRetrier {}

extension RequestInterceptor {
    /// Returns `request` unchanged.
    public func adapt(_ request: consuming URLRequest, context: RequestContext) async throws -> URLRequest {
        request
    }

    /// Answers ``RetryResult/doNotRetry``.
    public func retry(_ request: RetryRequest, dueTo error: ReboundError) async -> RetryResult {
        .doNotRetry
    }
}
