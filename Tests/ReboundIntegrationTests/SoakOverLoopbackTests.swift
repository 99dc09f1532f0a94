import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

private struct SoakToken: AuthenticationCredential {
    let value: Int
    var requiresRefresh: Bool { false }
}

/// Sends `Bearer <n>`; a refresh moves to the next number after a yield.
private struct SoakAuthenticator: Authenticator {
    func apply(_ credential: SoakToken, to request: inout URLRequest) {
        request.setValue("Bearer \(credential.value)", forHTTPHeaderField: "Authorization")
    }
    func refresh(_ credential: SoakToken) async throws -> SoakToken {
        await Task.yield()
        return SoakToken(value: credential.value + 1)
    }
    func isRequest(_ request: URLRequest, authenticatedWith credential: SoakToken) -> Bool {
        request.value(forHTTPHeaderField: "Authorization") == "Bearer \(credential.value)"
    }
}

/// Counts, per request, the attempts observers were told about and the ends.
private final class Ledger: AttemptObserver {
    private struct Entry {
        var attemptsReported = 0
        var ends = 0
        var attemptsAtEnd = 0
    }
    private let entries = Locked<[UUID: Entry]>([:])

    func attemptDidFinish(_ outcome: AttemptOutcome) async {
        entries.withLock { $0[outcome.requestID, default: Entry()].attemptsReported += 1 }
    }

    func requestDidFinish(_ outcome: RequestOutcome) async {
        entries.withLock {
            $0[outcome.requestID, default: Entry()].ends += 1
            $0[outcome.requestID, default: Entry()].attemptsAtEnd = outcome.attempts.count
        }
    }

    var all: [(reported: Int, ends: Int, attempts: Int)] {
        entries.withLock { $0.values.map { ($0.attemptsReported, $0.ends, $0.attemptsAtEnd) } }
    }
}

/// Many concurrent requests over real HTTP, with faults and cancellations at random points, through a
/// breaker registry, a budget, an authenticator and a retry policy. Whatever the interleaving, every request ends once,
/// none is attempted beyond its limit, and the shared state is empty afterwards.
@Suite("Soak over loopback", .timeLimit(.minutes(5)))
struct SoakOverLoopbackTests {
    static let requests = 10_000

    @Test("10,000 concurrent requests with 503s, drops, stalls, 401s and cancellations each end exactly once")
    func soak() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        // The reply to the server's n-th request, from a seeded sequence: 15% 503, 8% dropped connections, 2% stalls
        // that never answer (ended by the attempt timeout), and a 401 for every request still carrying the first token.
        let faults = Locked(SplitMix64(seed: 12))
        server.route("/soak") { request, _ in
            if request.value(forHeader: "Authorization") == "Bearer 1" { return .status(401) }
            let roll = faults.withLock { $0.next() } % 100
            switch roll {
            case 0..<15: return .status(503)
            case 15..<23: return .drop
            case 23..<25: return .stall
            default: return .status(200, body: "ok")
            }
        }

        // Trips after 5 failures in a row and tries again after 50 ms: it opens, half-opens and closes during the run.
        let registry = CircuitBreakerRegistry(
            configuration: CircuitBreaker.Configuration(openDuration: .milliseconds(50)))
        // Room for about 4,000 retries, so that most are granted and the last ones are denied.
        let budget = RetryBudget(configuration: .init(initialTokens: 20_000, maximumTokens: 20_000))
        let auth = AuthenticationInterceptor(authenticator: SoakAuthenticator(), credential: SoakToken(value: 1))
        let ledger = Ledger()
        // Up to 64 connections, so that a stalled one holds up few requests.
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 64
        let session = Session(
            transport: URLSessionHTTPTransport(configuration: configuration),
            adapters: [registry, budget],
            retriers: [
                RetryPolicy(
                    retryLimit: 2, backoff: .exponential(a: .milliseconds(5), b: 2).max(.milliseconds(20)).fullJitter())
            ],
            interceptor: auth, observers: [ledger], deadline: .seconds(10), attemptTimeout: .seconds(1))

        let url = server.url("/soak")
        var cancels = SplitMix64(seed: 34)
        let plan = (0..<Self.requests).map { _ -> Duration? in
            // One request in ten is cancelled by its caller after 0 to 30 ms.
            cancels.next() % 10 == 0 ? .milliseconds(Int(cancels.next() % 30)) : nil
        }
        let endings = await withTaskGroup(of: String.self) { group in
            for cancelAfter in plan {
                group.addTask {
                    let request = Task { try await session.send(url) }
                    if let cancelAfter {
                        try? await Task.sleep(for: cancelAfter)
                        request.cancel()
                    }
                    switch await request.result {
                    case .success(let response): return response.statusCode == 200 ? "success" : "odd success"
                    case .failure(is CancellationError): return "cancelled"
                    case .failure(let error as ReboundError): return error.attempts.count <= 4 ? "failure" : "overrun"
                    case .failure: return "other error"
                    }
                }
            }
            return await group.reduce(into: [String: Int]()) { $0[$1, default: 0] += 1 }
        }

        #expect(endings.values.reduce(0, +) == Self.requests)
        // How the ends split between success, failure and cancellation depends on the machine's speed (under the thread
        // sanitizer most run out of time), so only what must hold on any machine is asserted.
        #expect(endings["odd success"] == nil && endings["overrun"] == nil && endings["other error"] == nil)
        let ledgers = ledger.all
        #expect(ledgers.count == Self.requests, "a request ended without telling its observers")
        #expect(ledgers.allSatisfy { $0.ends == 1 }, "a request ended twice")
        #expect(ledgers.allSatisfy { $0.reported == $0.attempts }, "an attempt was not reported once")
        // At most 3 attempts from the policy, and one more after the single refresh.
        #expect(ledgers.allSatisfy { $0.attempts <= 4 }, "a request was attempted beyond its limit")
        #expect(server.totalHits <= ledgers.map(\.attempts).reduce(0, +))

        // Nothing is held for good: no permit, no grant, no waiter, no refresh.
        #expect(registry.breakers.values.allSatisfy { $0.permitsInFlight == 0 })
        #expect(budget.requestsWithGrants == 0)
        #expect(auth.pendingRefresh.waiters == 0 && !auth.pendingRefresh.refreshing)
        // At most one refresh: after it, no request carries the first token (none, if every request ended first).
        #expect(auth.refreshCount <= 1)
    }
}
