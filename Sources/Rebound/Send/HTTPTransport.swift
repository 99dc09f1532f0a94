import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Sends one request and returns the server's answer: the seam between a ``Session`` and the network.
///
/// ``URLSessionTransport`` is the default. Implement this protocol to run a session on another HTTP client, or use
/// `ScriptedTransport` from `ReboundTesting` in tests. A transport answers with whatever status the server sent
/// (validation is the session's job) and throws when no HTTP response arrived, preferably a `URLError` so that
/// retry policies recognise it. It must end promptly with `CancellationError` when the calling task is cancelled.
public protocol HTTPTransport: Sendable {
    /// Sends `request` once and returns the response body and the HTTP response.
    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse)
}
