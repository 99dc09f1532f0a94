import Foundation

/// Why an ``AuthenticationInterceptor`` could not authenticate a request.
///
/// A minor release may add a case: switch over it with `@unknown default` (<doc:APIStabilityGuide>).
public enum AuthenticationError: NonRetryableError, Sendable, Equatable, CustomStringConvertible {
    /// The interceptor has no credential to apply.
    case missingCredential
    /// More refreshes were needed than the limit allows (`count` in `window`); the credential is likely rejected for
    /// good, so the request ends instead of refreshing again.
    case excessiveRefresh(count: Int, window: Duration)
    /// The refresh did not finish within the interceptor's ``AuthenticationInterceptor/refreshTimeout``; its result, if
    /// it ever comes, is dropped, and the next request may refresh again.
    case refreshTimedOut(after: Duration)
    /// The authenticator's refresh threw `CancellationError` though nothing cancelled it (no request waiting for a
    /// refresh can cancel it: it runs in a task of its own), so the requests waiting for it fail with this error rather
    /// than end as if their callers had cancelled them; the next request that needs a refresh starts a new one.
    case refreshCancelled
    /// The interceptor was asked to retry a request it never adapted, so it could not have applied its credential: it
    /// sits where only `retry(_:dueTo:)` is called (in `retriers:`, or behind a wrapper that forwards only that). Give
    /// it as `interceptor:`, where it both applies the credential and retries (or in `adapters:` as well as
    /// `retriers:`).
    case neverAdapted

    /// A readable description of the error.
    public var description: String {
        switch self {
        case .missingCredential:
            "no credential to authenticate the request with"
        case .excessiveRefresh(let count, let window):
            "the credential was refreshed \(count) times in \(window.logDescription), the most allowed; "
                + "not refreshing again"
        case .refreshTimedOut(let limit):
            "the credential's refresh did not finish within \(limit.logDescription); the next request refreshes again"
        case .refreshCancelled:
            "the credential's refresh was cancelled by the authenticator; the next request refreshes again"
        case .neverAdapted:
            "the AuthenticationInterceptor was asked to retry a request it never adapted, "
                + "so no credential was applied: give it as `interceptor:` (or in `adapters:` as well), "
                + "not in `retriers:` alone"
        }
    }
}
