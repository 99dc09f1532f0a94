import Foundation
import Rebound
import SideBySide
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

private struct SoakToken: AuthenticationCredential {
    var requiresRefresh: Bool { false }
}

private struct SoakAuthenticator: Authenticator {
    func apply(_ credential: SoakToken, to request: inout URLRequest) {
        request.setValue("Bearer soak", forHTTPHeaderField: "Authorization")
    }
    func refresh(_ credential: SoakToken) async throws -> SoakToken { credential }
    func isRequest(_ request: URLRequest, authenticatedWith credential: SoakToken) -> Bool { true }
}

/// Answers 503 and 200 in turn without a network: the realistic chain's own memory, with nothing else growing.
private final class FlakyInMemoryTransport: HTTPTransport {
    private let count = Atomic<Int>(0)
    private let body = Data(#"{"id": 1, "name": "kettle"}"#.utf8)

    func exchange(_ request: URLRequest) async throws -> (Data, ResponseHead) {
        let number = count.add(1, ordering: .relaxed).newValue
        let status = number % 2 == 1 ? 503 : 200
        return (body, ResponseHead(url: request.url!, statusCode: status, headerFields: []))
    }
}

/// Section 7's contenders, on `/flaky-a`, which fails every other request once, so that retries, grants and permits
/// come and go: plain URLSession (two requests, as the chain sends two: a 503, then its retry), and a realistic chain
/// (five header adapters, an authenticator, a breaker registry, a retry budget, RetryPolicy wrapped in a
/// LoggingRetrier) over URLSession and in memory (Rebound alone: URLSession on Linux keeps about 112 bytes per
/// request for good, with or without Rebound).
func soakContender(_ name: String, base: URL) -> @Sendable () async throws -> Void {
    let url = base.appendingPathComponent("flaky-a")
    func realisticChain(over transport: any HTTPTransport) -> Session {
        Session(
            transport: transport, adapters: headerAdapters + [CircuitBreakerRegistry(), RetryBudget()],
            retriers: [LoggingRetrier(wrapping: RetryPolicy(backoff: .zero), sink: { _ in })],
            interceptor: AuthenticationInterceptor(authenticator: SoakAuthenticator(), credential: SoakToken()))
    }
    switch name {
    case "Soak_URLSession":
        let plain = URLSession(configuration: plainConfiguration())
        return {
            _ = try await plain.data(for: requestWithRealisticHeaders(to: url))
            _ = try await plain.data(for: requestWithRealisticHeaders(to: url))
        }
    case "Soak_RealisticChain":
        let chain = realisticChain(over: URLSessionHTTPTransport())
        return { _ = try await chain.send(url) }
    default:
        let inMemory = realisticChain(over: FlakyInMemoryTransport())
        return { _ = try await inMemory.send(url) }
    }
}

/// The names of section 7's benchmarks, one per contender of ``soakContender(_:base:)``.
let soakNames = ["Soak_URLSession", "Soak_RealisticChain", "Soak_RealisticChainInMemory"]
