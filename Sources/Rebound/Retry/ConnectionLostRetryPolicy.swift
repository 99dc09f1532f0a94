import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Retries idempotent requests whose connection was lost, and nothing else, with exponential backoff.
///
/// "Connection lost" means the connection was made and then dropped before a whole response arrived. The
/// platforms report that differently:
/// - Apple platforms: `URLError.networkConnectionLost`.
/// - Linux (FoundationNetworking, on libcurl), as measured against a loopback server: `URLError.badServerResponse`
///   when the server closes the connection before answering, and `URLError.unknown` when it closes it in the middle
///   of the body; `.networkConnectionLost` is kept for other causes. Both codes are broader on Linux (a reply that is
///   not HTTP is also `.badServerResponse`, an unmapped libcurl failure is also `.unknown`), so such failures are
///   retried too, within the same limit. libcurl itself re-sends a request once when a kept-alive connection turns
///   out to be closed before anything was sent back, so that case never reaches a retrier.
///
/// A connection that was never made (`.cannotConnectToHost`, a refused connection) is not a lost one and is not
/// retried. ``connectionLostURLErrorCodes`` holds this platform's codes. The other settings and their defaults are
/// ``RetryPolicy``'s: 2 retries, a backoff of 0.5 s then 1 s, the idempotent methods.
public struct ConnectionLostRetryPolicy: RequestRetrier {
    #if canImport(FoundationNetworking)
        /// The `URLError` codes that mean a lost connection on Linux: `.networkConnectionLost`, `.badServerResponse`
        /// and `.unknown` (see the type's discussion).
        public static let connectionLostURLErrorCodes: Set<URLError.Code> = [
            .networkConnectionLost, .badServerResponse, .unknown,
        ]
    #else
        /// The `URLError` codes that mean a lost connection on Apple platforms: `.networkConnectionLost`.
        public static let connectionLostURLErrorCodes: Set<URLError.Code> = [.networkConnectionLost]
    #endif

    /// The policy that decides, retrying only ``connectionLostURLErrorCodes`` and no status code.
    public let policy: RetryPolicy

    /// Creates a policy with every default.
    public init() {
        // The defaults are valid, so this cannot throw.
        policy = try! RetryPolicy(
            retryableHTTPStatusCodes: [], retryableURLErrorCodes: Self.connectionLostURLErrorCodes)
    }

    /// Creates a policy, checking its configuration as ``RetryPolicy`` does.
    ///
    /// - Parameters:
    ///   - retryLimit: How many times a request is retried at most; `2` by default.
    ///   - exponentialBackoffBase: The base of the backoff, `2` or more; `2` by default.
    ///   - exponentialBackoffScale: The factor of the backoff in seconds; `0.5` by default.
    ///   - retryableHTTPMethods: The methods that may be retried; ``RetryPolicy/defaultRetryableHTTPMethods`` by default.
    /// - Throws: ``ConfigurationError`` naming the first invalid setting.
    public init(
        retryLimit: Int = RetryPolicy.defaultRetryLimit,
        exponentialBackoffBase: Int = RetryPolicy.defaultExponentialBackoffBase,
        exponentialBackoffScale: Double = RetryPolicy.defaultExponentialBackoffScale,
        retryableHTTPMethods: Set<HTTPMethod> = RetryPolicy.defaultRetryableHTTPMethods
    ) throws(ConfigurationError) {
        policy = try RetryPolicy(
            retryLimit: retryLimit, exponentialBackoffBase: exponentialBackoffBase,
            exponentialBackoffScale: exponentialBackoffScale, retryableHTTPMethods: retryableHTTPMethods,
            retryableHTTPStatusCodes: [], retryableURLErrorCodes: Self.connectionLostURLErrorCodes)
    }

    /// Retries as ``policy`` decides.
    public func retry(_ request: RetryRequest, dueTo error: ReboundError) async -> RetryResult {
        await policy.retry(request, dueTo: error)
    }
}

extension RequestRetrier where Self == ConnectionLostRetryPolicy {
    /// A ``ConnectionLostRetryPolicy`` with every default.
    public static var connectionLostRetryPolicy: ConnectionLostRetryPolicy { ConnectionLostRetryPolicy() }
}
