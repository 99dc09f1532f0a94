import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Holds tasks until `count` of them have arrived, then lets them all go.
private final class Barrier: Sendable {
    private struct State {
        var arrived = 0
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let count: Int
    private let state = Locked(State())

    init(count: Int) { self.count = count }

    func arrive() async {
        await withCheckedContinuation { continuation in
            let released = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.arrived += 1
                state.waiting.append(continuation)
                guard state.arrived >= count else { return [] }
                defer { state.waiting = [] }
                return state.waiting
            }
            for waiter in released { waiter.resume() }
        }
    }
}

private struct Token: AuthenticationCredential {
    let value: Int
    var requiresRefresh: Bool { false }
}

private struct Bearer: Authenticator {
    let refreshes = Locked(0)

    func apply(_ credential: Token, to request: inout URLRequest) {
        request.setValue("Bearer \(credential.value)", forHTTPHeaderField: "Authorization")
    }

    func refresh(_ credential: Token) async throws -> Token {
        refreshes.withLock { $0 += 1 }
        return Token(value: credential.value + 1)
    }

    func isRequest(_ request: URLRequest, authenticatedWith credential: Token) -> Bool {
        request.value(forHTTPHeaderField: "Authorization") == "Bearer \(credential.value)"
    }
}

@Suite("Built-in interceptors over loopback", .timeLimit(.minutes(5)))
struct BuiltInsOverLoopbackTests {
    @Test func loggingRetrierLogsRealFailuresWithSecretsRedacted() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/items", [.status(503), .status(200, body: "ok")])
        let lines = Locked<[String]>([])
        let session = Session(
            interceptor: LoggingRetrier(wrapping: RetryPolicy()) { event in lines.withLock { $0.append(event.message) }
            },
            clock: FastForwardClock())
        var components = URLComponents(url: server.url("/items"), resolvingAgainstBaseURL: false)!
        components.queryItems = [
            URLQueryItem(name: "access_token", value: "abc123"), URLQueryItem(name: "page", value: "2"),
        ]

        _ = try await session.send(components.url!)

        let logged = lines.withLock { $0 }
        #expect(logged.count == 2)
        #expect(logged[0].contains("GET http://127.0.0.1:\(server.port)/items?access_token=<redacted>&page=<redacted>"))
        #expect(logged[0].contains("attempt 1 failed with status 503; retry in 500 ms"))
        #expect(logged[1].contains("succeeded with status 200 after 2 attempts"))
        #expect(!logged.joined().contains("abc123"))
        #expect(server.requests("/items").first?.query == "access_token=abc123&page=2")
    }

    @Test func jsonBodyRetrierRetriesA200ThatSaysRateLimitedUntilItClears() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route(
            "/quote",
            [
                .json(#"{"error_code": "RATE_LIMITED"}"#), .json(#"{"error_code": "TEMPORARY_ERROR"}"#),
                .json(#"{"price": 3}"#),
            ])
        server.route("/stuck", [.json(#"{"error_code": "RATE_LIMITED"}"#)])
        let clock = FastForwardClock()
        let session = Session(
            adapters: [JSONBodyRetrier(values: ["RATE_LIMITED", "TEMPORARY_ERROR"])], clock: clock)

        let response = try await session.send(server.url("/quote"))
        let error = try await #require(throws: ReboundError.self) { try await session.send(server.url("/stuck")) }

        #expect(String(decoding: response.data, as: UTF8.self) == #"{"price": 3}"#)
        #expect(server.hits("/quote") == 3)
        #expect(server.hits("/stuck") == 4)
        #expect(clock.sleeps == Array(repeating: .seconds(5), count: 5))
        #expect("\(error.underlyingError!)".contains("kept signalling error_code = \"RATE_LIMITED\" after 3 retries"))
    }

    @Test func fiftyConcurrent401sRefreshOnceAndEachRequestIsRetriedOnce() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/me") { request, _ in
            request.value(forHeader: "Authorization") == "Bearer 2" ? .status(200, body: "me") : .status(401)
        }
        let authenticator = Bearer()
        let auth = AuthenticationInterceptor(authenticator: authenticator, credential: Token(value: 1))
        // Every first attempt is adapted (with Bearer 1) before any is sent, so that each one meets a 401: the barrier
        // comes after the credential is applied (an attempt adapted once a refresh runs would wait for its result).
        let barrier = Barrier(count: 50)
        let holdFirstAttempts = Adapter { request, context in
            if context.attempt == 1 { await barrier.arrive() }
            return request
        }
        let session = Session(interceptor: Interceptor(adapters: [auth, holdFirstAttempts], retriers: [auth]))

        let responses = try await withThrowingTaskGroup(of: Response.self) { group in
            for _ in 0..<50 { group.addTask { try await session.send(server.url("/me")) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }

        #expect(responses.count == 50)
        #expect(responses.allSatisfy { $0.attempts.map(\.statusCode) == [401, 200] })
        #expect(authenticator.refreshes.withLock { $0 } == 1)
        #expect(server.hits("/me") == 100)
    }

    @Test func aBasicChallengeLeadsToARefreshAndASuccessfulRetry() async throws {
        // Given a server that challenges with Basic, which hangs plain URLSession on Linux with Swift 6.3.1.
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/me") { request, _ in
            request.value(forHeader: "Authorization") == "Bearer 2"
                ? .status(200, body: "me")
                : .status(401, headers: ["WWW-Authenticate": "Basic realm=\"api\""], body: "expired")
        }
        let authenticator = Bearer()
        let session = Session(
            interceptor: AuthenticationInterceptor(authenticator: authenticator, credential: Token(value: 1)))

        // When a request meets it with the default transport.
        let response = try await session.send(server.url("/me"))

        // Then the 401 reaches the interceptor, which refreshes once, and the retry succeeds.
        #expect(response.attempts.map(\.statusCode) == [401, 200])
        #expect(String(decoding: response.data, as: UTF8.self) == "me")
        #expect(authenticator.refreshes.withLock { $0 } == 1)
        #expect(server.requests("/me").map { $0.value(forHeader: "Authorization") } == ["Bearer 1", "Bearer 2"])
    }

    @Test func theCredentialNeverReachesAnotherHost() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/a", [.status(200)])
        let auth = AuthenticationInterceptor(authenticator: Bearer(), credential: Token(value: 1))
        let session = Session(interceptor: auth)

        _ = try await session.send(server.url("/a"))  // binds the credential to 127.0.0.1:port
        _ = try await session.send(URL(string: "http://localhost:\(server.port)/a")!)  // the same server, another host

        #expect(server.requests("/a").map { $0.value(forHeader: "Authorization") } == ["Bearer 1", nil])
    }
}
