import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The samples of the built-ins' guides (Docs/*.md), the README's "Built-ins together" and the DocC articles
/// WritingInterceptors and GettingStarted (its configuration from run-time values), kept compiling and true here; change both together. The swift-log and os.Logger bridges of
/// Docs/LoggingRetrier.md need packages Rebound does not depend on and are not compiled here.
@Suite("Built-ins documentation samples", .timeLimit(.minutes(5)))
struct BuiltInsDocumentationSamplesTests {
    // Docs/Authentication.md
    struct Token: AuthenticationCredential {
        let access: String
        let refresh: String
        let expiry: Date
        var requiresRefresh: Bool { expiry < Date().addingTimeInterval(60) }
    }

    struct TokenService: Sendable {
        func refresh(using refreshToken: String) async throws -> Token {
            Token(access: "fresh", refresh: refreshToken, expiry: Date().addingTimeInterval(3_600))
        }
    }

    struct OAuth: Authenticator {
        let tokens: TokenService

        func apply(_ credential: Token, to request: inout URLRequest) {
            request.setValue("Bearer \(credential.access)", forHTTPHeaderField: "Authorization")
        }
        func refresh(_ credential: Token) async throws -> Token {
            try await tokens.refresh(using: credential.refresh)
        }
        func isRequest(_ request: URLRequest, authenticatedWith credential: Token) -> Bool {
            request.value(forHTTPHeaderField: "Authorization") == "Bearer \(credential.access)"
        }
    }

    @Test func authenticationGuideAndReadmeBuiltInsTogether() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/items") { request, _ in
            request.value(forHeader: "Authorization") == "Bearer fresh"
                ? .json(#"{"items": []}"#) : .status(401)
        }
        let savedToken = Token(access: "stale", refresh: "r", expiry: Date().addingTimeInterval(3_600))
        let tokens = TokenService()
        let host = server.baseURL.host!

        let auth = AuthenticationInterceptor(
            authenticator: OAuth(tokens: tokens), credential: savedToken, hosts: [host])
        let breakers = CircuitBreakerRegistry()
        let budget = RetryBudget(ratio: .default)
        let session = Session(
            adapters: [breakers, budget, JSONBodyRetrier(values: ["RATE_LIMITED"])],
            retriers: [LoggingRetrier(wrapping: RetryPolicy(), sink: { _ in })],
            interceptor: auth, clock: FastForwardClock())

        let response = try await session.send(server.url("/items"))

        #expect(response.attempts.map(\.statusCode) == [401, 200])
        #expect(
            server.requests("/items").map { $0.value(forHeader: "Authorization") } == ["Bearer stale", "Bearer fresh"])
        #expect(breakers.breakers.values.map(\.state) == [.closed])
        // The floor's 10 less the 401's retry (10 again if the 10 s window slid past it on a slow machine).
        #expect((9...10).contains(budget.tokens(for: server.url("/items")) ?? -1))
    }

    @Test func jsonBodyGuidePredicate() async throws {
        let busy = JSONBodyRetrier(retryLimit: 5, delay: .seconds(1)) { body in
            body["status"] == "busy" && (body["retry_in"]?.numberValue ?? 0) > 0
        }
        #expect(busy.signal(in: Data(#"{"status": "busy", "retry_in": 2}"#.utf8)) != nil)
        #expect(busy.signal(in: Data(#"{"status": "busy", "retry_in": 0}"#.utf8)) == nil)
    }

    @Test func circuitBreakerGuideClassifier() async throws {
        let configuration = CircuitBreaker.Configuration(classify: { outcome in
            outcome.statusCode == 404 ? .failure : CircuitBreaker.defaultVerdict(for: outcome)
        })
        let breaker = CircuitBreaker(configuration: configuration, clock: ManualClock())
        let session = Session(
            transport: ScriptedTransport { _, _ in .status(404) }, adapters: [breaker], clock: FastForwardClock())

        for _ in 0..<5 { _ = try? await session.send(URL(string: "https://example.com/gone")!) }

        #expect(breaker.state == .open)
    }

    // WritingInterceptors.md: "Learning how attempts end"
    actor SuccessCounter: AttemptObserver {
        private(set) var successes = 0
        func attemptDidFinish(_ outcome: AttemptOutcome) async {
            if case .succeeded = outcome.decision { successes += 1 }
        }
    }

    @Test func writingInterceptorsObserver() async throws {
        let counter = SuccessCounter()
        let session = Session(
            transport: ScriptedTransport([.status(503), .status(200), .status(204)]),
            interceptor: Interceptor(retriers: [RetryPolicy()], observers: [counter]), clock: FastForwardClock())

        _ = try await session.send(URL(string: "https://example.com/a")!)
        _ = try await session.send(URL(string: "https://example.com/b")!)

        #expect(await counter.successes == 2)
    }

    // GettingStarted.md: "Retry with backoff"
    @Test func gettingStartedValidatedRemoteConfiguration() {
        var printed: [String] = []
        func print(_ line: String) { printed.append(line) }  // the sample's print, recorded

        func retryPolicy(retryLimit: Int) -> RetryPolicy {  // a number from remote configuration
            do {
                return try RetryPolicy.validated(retryLimit: retryLimit)
            } catch {
                print("ignoring \(error.field)")  // error.message: RetryPolicy.retryLimit must be 0 or more, got -1
                return RetryPolicy()
            }
        }

        #expect(retryPolicy(retryLimit: 4).retryLimit == 4)
        #expect(retryPolicy(retryLimit: -1).retryLimit == RetryPolicy.defaultRetryLimit)
        #expect(printed == ["ignoring RetryPolicy.retryLimit"])
    }

    // Docs/RetrySafety.md

    @Test func retrySafetyBackoffAndPolicy() throws {
        let backoff = BackoffStrategy.exponential(a: .milliseconds(500), b: 2).max(.seconds(30)).fullJitter()
        let policy = RetryPolicy(retryLimit: 5, backoff: backoff)
        #expect((0..<10).allSatisfy { policy.delay(forRetryCount: $0) < .seconds(30) })
    }

    @Test func retrySafetyRetryFunction() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/data", [.status(200, body: "ok")])
        let url = server.url("/data")

        let (data, _) = try await retry(maxAttempts: 5) {
            try await URLSession.shared.data(from: url)
        } strategy: { error in
            (error as? URLError)?.code == .timedOut ? .backoff(.exponential(a: .seconds(1), b: 2).jitter()) : .stop
        }

        #expect(data == Data("ok".utf8))
    }

    @Test func retrySafetyBudgetIdempotencyAndHandler() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/pay", [.status(503), .status(201)])
        let budget = RetryBudget()
        let session = Session(
            adapters: [budget, IdempotencyKeyAdapter()], retriers: [RetryPolicy()], clock: FastForwardClock())
        _ = try await session.send(server.url("/pay"), method: .post)
        #expect(server.hits("/pay") == 2)

        let handler = Retrier { request, error in
            let patience = request.label == "manifest" ? 5 : 1
            guard request.retryCount < patience else { return .doNotRetryWithError(error) }
            var fallback = request.originalRequest
            fallback.url = URL(string: "https://cdn2.example.com")!.appending(path: fallback.url!.path)
            return .retryWithRequest(fallback, delay: .milliseconds(250 << request.retryCount))
        }
        let transport = ScriptedTransport([.status(503), .status(200)])
        let moved = try await Session(transport: transport, retriers: [handler], clock: FastForwardClock())
            .send(URL(string: "https://cdn1.example.com/v/manifest.m3u8")!, label: "manifest")
        #expect(moved.request.url?.absoluteString == "https://cdn2.example.com/v/manifest.m3u8")
    }
}
