import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Sends one request and returns the server's answer: the seam between a ``Session`` and the network.
///
/// ``URLSessionHTTPTransport`` is the default. Implement this protocol to run a session on another HTTP client, or use
/// `ScriptedTransport` from `ReboundTesting` in tests. A transport answers with whatever status the server sent
/// (validation is the session's job) and throws when no HTTP response arrived, preferably a `URLError` so that
/// retry policies recognise it. It must end promptly with `CancellationError` when the calling task is cancelled.
///
/// A transport sends exactly the request it is given, once, and answers nothing on the caller's behalf:
/// - A redirect (3xx) is returned as is, with its `Location` header and its body, and never followed: the session
///   follows redirects, so that it can strip credentials on the way to another origin and run its adapters for each
///   hop.
/// - An authentication challenge (a 401 with `WWW-Authenticate`) is returned as the 401, with its body, within the
///   round trip: credentials are the interceptors' job (``AuthenticationInterceptor``).
///
/// (``URLSessionHTTPTransport`` on Linux returns two of these bodies empty, where swift-corelibs-foundation drops them:
/// see its documentation.)
///
/// A transport implements one method, ``exchange(_:)``, answering with a ``ResponseHead``: made of an
/// `HTTPURLResponse` (`ResponseHead(response)`) on Foundation, or of the client's status and fields on another client,
/// so that no Foundation response is built unless code asks for one. ``send(_:)`` is the same call with the head's
/// `HTTPURLResponse`, for callers that want one.
///
/// ```swift
/// struct OtherClientTransport: HTTPTransport {
///     let client: OtherClient
///
///     func exchange(_ request: URLRequest) async throws -> (Data, ResponseHead) {
///         let answer = try await client.fetch(request)
///         let head = ResponseHead(url: request.url!, statusCode: answer.status, headerFields: answer.fields)
///         return (answer.body, head)
///     }
/// }
/// ```
public protocol HTTPTransport: Sendable {
    /// Sends `request` once and returns the response body and the response's head; a 3xx is returned, not followed.
    /// The call the session makes for every attempt and every redirect hop.
    func exchange(_ request: URLRequest) async throws -> (Data, ResponseHead)

    /// Whether `error`, which ``exchange(_:)`` threw, means that no byte of the request reached the server: the
    /// host could not be resolved or connected to, or the TLS handshake failed before the request was written. A
    /// retry policy may then send it again whatever its method (``RetryPolicy/unsentRetryLimit``), since the server
    /// did nothing. Asked once per failed attempt, from the attempt's task.
    ///
    /// By default `false`: a failure is taken as "the request may have been sent". ``URLSessionHTTPTransport`` says
    /// which of its `URLError` codes mean "not sent"; a transport that wraps another should ask the one it wraps.
    func failedBeforeSending(_ error: any Error) -> Bool
}

extension HTTPTransport {
    /// `false`: a transport that does not say is taken as one whose failed request may have been sent.
    public func failedBeforeSending(_ error: any Error) -> Bool { false }

    /// Sends `request` once through ``exchange(_:)`` and returns the body and the head's `HTTPURLResponse`.
    public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let (data, head) = try await exchange(request)
        return (data, head.httpURLResponse)
    }
}
