import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A credential an ``AuthenticationInterceptor`` applies to requests, such as an OAuth access token.
public protocol AuthenticationCredential: Sendable {
    /// Whether the credential must be refreshed before its next use, for example because it expires within a minute.
    var requiresRefresh: Bool { get }
}

/// Knows how to apply, refresh and check one kind of credential; an ``AuthenticationInterceptor`` does the rest.
///
/// ```swift
/// struct OAuth: Authenticator {
///     let tokens: TokenService
///     func apply(_ credential: Token, to request: inout URLRequest) {
///         request.setValue("Bearer \(credential.access)", forHTTPHeaderField: "Authorization")
///     }
///     func refresh(_ credential: Token) async throws -> Token {
///         try await tokens.refresh(using: credential.refresh)
///     }
///     func isRequest(_ request: URLRequest, authenticatedWith credential: Token) -> Bool {
///         request.value(forHTTPHeaderField: "Authorization") == "Bearer \(credential.access)"
///     }
/// }
/// ```
public protocol Authenticator: Sendable {
    /// The credential type.
    associatedtype Credential: AuthenticationCredential

    /// Adds the credential to a request, usually as an `Authorization` header.
    func apply(_ credential: Credential, to request: inout URLRequest)

    /// Returns a fresh credential in place of `credential`; the interceptor runs at most one refresh at a time.
    ///
    /// The refresh runs in a task of its own: it goes on when the requests waiting for it are cancelled, so that its
    /// result is not lost. Throwing fails every request waiting for it with the error thrown.
    func refresh(_ credential: Credential) async throws -> Credential

    /// Whether a failed attempt failed because of its credential; by default, whether the status is 401.
    func didRequest(
        _ request: URLRequest, with response: HTTPURLResponse, failDueToAuthenticationError error: ReboundError
    )
        -> Bool

    /// Whether `request` was sent with `credential` (and not an older one), usually by comparing a header.
    func isRequest(_ request: URLRequest, authenticatedWith credential: Credential) -> Bool
}

extension Authenticator {
    /// Answers whether the response's status is 401 Unauthorized.
    public func didRequest(
        _ request: URLRequest, with response: HTTPURLResponse, failDueToAuthenticationError error: ReboundError
    ) -> Bool {
        response.statusCode == 401
    }
}
