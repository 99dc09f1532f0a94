import Foundation
import Rebound
import SideBySide

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A transport that answers every request with one response captured from a real server: in-memory cost, real URLs
/// and headers.
struct CannedTransport: HTTPTransport {
    let answer: (Data, ResponseHead)

    /// Sends `request` once with a fresh URLSession and keeps the answer.
    init(answeringLike request: URLRequest) async throws {
        let (data, response) = try await URLSession(configuration: .ephemeral).data(for: request)
        guard let response = response as? HTTPURLResponse else { throw BenchmarkError("not HTTP: \(response)") }
        answer = (data, ResponseHead(response))
    }

    func exchange(_ request: URLRequest) async throws -> (Data, ResponseHead) { answer }
}

/// What `interceptor` costs per request over setting the realistic headers directly, measured in memory against a
/// real response from `url`'s server: medians of interleaved rounds, in nanoseconds.
func inMemoryCost(of interceptor: any RequestInterceptor, url: URL, rounds: Int, count: Int) async throws -> Double {
    let transport = try await CannedTransport(answeringLike: URLRequest(url: url))
    let session = Session(transport: transport, interceptor: interceptor)
    return try await extraWallPerCall(
        of: { _ = try await session.send(url) },
        over: { _ = try await transport.send(requestWithRealisticHeaders(to: url)) }, rounds: rounds, count: count)
}
