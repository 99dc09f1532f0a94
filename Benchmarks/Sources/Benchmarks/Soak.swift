import CAllocationCounter
import Foundation
import Rebound
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

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let number = count.add(1, ordering: .relaxed).newValue
        let status = number % 2 == 1 ? 503 : 200
        return (
            body, HTTPURLResponse(url: request.url!, statusCode: status, httpVersion: "HTTP/1.1", headerFields: [:])!
        )
    }
}

/// Section 7: whether memory stays flat over a long run. Resident memory after `count` sequential requests against
/// after `count / 10`, for plain URLSession and for a realistic chain (five header adapters, an authenticator, a
/// breaker registry, a retry budget, RetryPolicy wrapped in a LoggingRetrier) on `/flaky-a`, which fails every other
/// request once, so that retries, grants and permits come and go. Each contender runs in its turn, after a warm-up,
/// and is compared with itself: the ratio is what the issue's target (≤ 1.10) is about.
func soak(base: URL, count: Int) async throws -> Section {
    let url = base.appendingPathComponent("flaky-a")
    let plain = URLSession(configuration: .default)
    func realisticChain(over transport: any HTTPTransport) -> Session {
        Session(
            transport: transport, adapters: headerAdapters + [CircuitBreakerRegistry(), RetryBudget()],
            retriers: [LoggingRetrier(wrapping: RetryPolicy(backoff: .none), sink: { _ in })],
            interceptor: AuthenticationInterceptor(authenticator: SoakAuthenticator(), credential: SoakToken()))
    }
    let chain = realisticChain(over: URLSessionTransport())
    let inMemory = realisticChain(over: FlakyInMemoryTransport())

    let contenders: [(name: String, send: @Sendable () async throws -> Void)] = [
        (
            // Two requests, as the chain sends two (a 503, then its retry): the same work for URLSession.
            "plain URLSession, two requests",
            {
                _ = try await plain.data(for: requestWithRealisticHeaders(to: url))
                _ = try await plain.data(for: requestWithRealisticHeaders(to: url))
            }
        ),
        ("Session, realistic chain, over URLSession", { _ = try await chain.send(url) }),
        ("Session, realistic chain, in memory (Rebound alone)", { _ = try await inMemory.send(url) }),
    ]
    var rows: [Row] = []
    var met = true
    for contender in contenders {
        for _ in 0..<min(1_000, count / 10) { try await contender.send() }
        let start = residentBytes()
        for _ in 0..<(count / 10) { try await contender.send() }
        let early = residentBytes()
        let earlyHeap = Double(rebound_live_bytes())
        for _ in (count / 10)..<count { try await contender.send() }
        let late = residentBytes()
        let lateHeap = Double(rebound_live_bytes())
        let ratio = late / max(early, 1)
        if contender.name.hasSuffix("(Rebound alone)") { met = ratio <= 1.10 }
        rows.append(
            Row(
                name: contender.name,
                figures: [
                    "RSS MiB at start": start / 1_048_576, "RSS after \(count / 10)": early / 1_048_576,
                    "RSS after \(count)": late / 1_048_576, "RSS late/early": ratio,
                    "heap growth B/request": (lateHeap - earlyHeap) / Double(count - count / 10),
                ]))
    }
    return Section(
        title: "7. Resident memory over \(count) sequential requests (retries, grants and permits come and go)",
        target: "Rebound's resident memory after \(count) requests within 10% of what it was after \(count / 10)",
        met: met,
        note: "each contender against itself; URLSession on Linux keeps about 112 bytes per request for good, with or "
            + "without Rebound (the heap growth of the first two rows), so Rebound's own is measured in memory",
        columns: [
            "RSS MiB at start", "RSS after \(count / 10)", "RSS after \(count)", "RSS late/early",
            "heap growth B/request",
        ], rows: rows)
}
