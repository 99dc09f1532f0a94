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
        policy = RetryPolicy(retryableHTTPStatusCodes: [], retryableURLErrorCodes: Self.connectionLostURLErrorCodes)
    }

    /// Creates a policy from settings written in code; an invalid one traps.
    ///
    /// An invalid setting is a programming error; the trap's message names it, for example
    /// `ConnectionLostRetryPolicy.retryLimit must be 0 or more, got -1`. For settings that arrive at run time, use
    /// ``validated(retryLimit:exponentialBackoffBase:exponentialBackoffScale:retryableHTTPMethods:)``, which throws
    /// instead.
    ///
    /// - Parameters:
    ///   - retryLimit: How many times a request is retried at most, `0` or more; `2` by default.
    ///   - exponentialBackoffBase: The base of the backoff, `2` or more; `2` by default.
    ///   - exponentialBackoffScale: The factor of the backoff in seconds, from `0` to 10¹²
    ///     (``RetryResult/longestDelay``); `0.5` by default.
    ///   - retryableHTTPMethods: The methods that may be retried; ``RetryPolicy/defaultRetryableHTTPMethods`` by default.
    public init(
        retryLimit: Int = RetryPolicy.defaultRetryLimit,
        exponentialBackoffBase: Int = RetryPolicy.defaultExponentialBackoffBase,
        exponentialBackoffScale: Double = RetryPolicy.defaultExponentialBackoffScale,
        retryableHTTPMethods: Set<HTTPMethod> = RetryPolicy.defaultRetryableHTTPMethods
    ) {
        ConfigurationError.trapIfInvalid { () throws(ConfigurationError) in
            try Self.check(
                retryLimit: retryLimit, exponentialBackoffBase: exponentialBackoffBase,
                exponentialBackoffScale: exponentialBackoffScale)
        }
        self.init(
            checkedRetryLimit: retryLimit, exponentialBackoffBase: exponentialBackoffBase,
            exponentialBackoffScale: exponentialBackoffScale, retryableHTTPMethods: retryableHTTPMethods)
    }

    /// Creates a policy from settings that arrive at run time, throwing when one is invalid.
    ///
    /// The parameters, their defaults and what is valid are those of
    /// ``init(retryLimit:exponentialBackoffBase:exponentialBackoffScale:retryableHTTPMethods:)``.
    ///
    /// - Throws: ``ConfigurationError`` naming the first invalid setting.
    public static func validated(
        retryLimit: Int = RetryPolicy.defaultRetryLimit,
        exponentialBackoffBase: Int = RetryPolicy.defaultExponentialBackoffBase,
        exponentialBackoffScale: Double = RetryPolicy.defaultExponentialBackoffScale,
        retryableHTTPMethods: Set<HTTPMethod> = RetryPolicy.defaultRetryableHTTPMethods
    ) throws(ConfigurationError) -> ConnectionLostRetryPolicy {
        try check(
            retryLimit: retryLimit, exponentialBackoffBase: exponentialBackoffBase,
            exponentialBackoffScale: exponentialBackoffScale)
        return ConnectionLostRetryPolicy(
            checkedRetryLimit: retryLimit, exponentialBackoffBase: exponentialBackoffBase,
            exponentialBackoffScale: exponentialBackoffScale, retryableHTTPMethods: retryableHTTPMethods)
    }

    /// Throws a ``ConfigurationError`` for the first invalid setting: ``RetryPolicy``'s checks, under this type's name.
    private static func check(
        retryLimit: Int, exponentialBackoffBase: Int, exponentialBackoffScale: Double
    ) throws(ConfigurationError) {
        try RetryPolicy.check(
            retryLimit: retryLimit, exponentialBackoffBase: exponentialBackoffBase,
            exponentialBackoffScale: exponentialBackoffScale, owner: "ConnectionLostRetryPolicy")
    }

    private init(
        checkedRetryLimit retryLimit: Int, exponentialBackoffBase: Int, exponentialBackoffScale: Double,
        retryableHTTPMethods: Set<HTTPMethod>
    ) {
        policy = RetryPolicy(
            checkedRetryLimit: retryLimit, exponentialBackoffBase: exponentialBackoffBase,
            exponentialBackoffScale: exponentialBackoffScale, retryableHTTPMethods: retryableHTTPMethods,
            retryableHTTPStatusCodes: [], retryableURLErrorCodes: Self.connectionLostURLErrorCodes,
            backoff: nil, retryAfter: .default, throttlingBackoff: nil, stopsAfterRepeatedFailure: false,
            unsentRetryLimit: 0)
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
