import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// Wrappers written as a user would: each forwards the one method of the protocol it conforms to, and nothing else.

/// Forwards `retry(_:dueTo:)`, the only requirement of `RequestRetrier`.
private struct ForwardingRetrier: RequestRetrier {
    let wrapped: any RequestRetrier
    func retry(_ request: RetryRequest, dueTo error: ReboundError) async -> RetryResult {
        await wrapped.retry(request, dueTo: error)
    }
}

/// Whether a built-in is tried as given or behind a user's forwarding wrapper.
enum Wrapping: String, CaseIterable, CustomTestStringConvertible {
    case unwrapped, wrapped
    var testDescription: String { rawValue }
}

/// Every built-in keeps its whole behaviour behind a forwarding wrapper of the role it is placed in, because the
/// session calls the same methods either way and the built-in registers every other role through their context; or,
/// where a role could not be reached that way, the wrapper cannot be written.
@Suite("Built-ins behind a user's forwarding wrapper", .timeLimit(.minutes(5)))
struct ForwardingWrapperTests {
    let clock = ManualClock()

    private func adapter(_ part: any RequestAdapter, _ wrapping: Wrapping) -> any RequestAdapter {
        wrapping == .wrapped ? ForwardingAdapter(wrapped: part) : part
    }

    @Test(arguments: Wrapping.allCases)
    func jsonBodyRetrierFailsAMatching200AndRetriesItWithItsOwnDelay(_ wrapping: Wrapping) async throws {
        let json = JSONBodyRetrier(values: ["RATE_LIMITED"], delay: .seconds(3))
        let transport = ScriptedTransport([
            .response(body: #"{"error_code": "RATE_LIMITED"}"#),
            .response(status: 503, body: #"{"error_code": "RATE_LIMITED"}"#), .response(body: #"{"ok": true}"#),
        ])
        let session = Session(
            transport: transport, adapters: [adapter(json, wrapping)], retriers: [RetryPolicy()],
            clock: FastForwardClock())

        let response = try await session.send(request())

        #expect(response.attempts.map(\.statusCode) == [200, 503, 200])
        #expect(response.attempts.map(\.retryDelay) == [.seconds(3), .seconds(3), nil])
    }

    @Test func jsonBodyRetrierCannotBeWrappedAsARetrierWhichWouldLoseItsValidation() {
        // `ForwardingRetrier(wrapped: JSONBodyRetrier(...))` does not compile: it is not a `RequestRetrier`, so it
        // cannot be put where only `retry` is forwarded and a 200 would never be read.
        #expect(!((JSONBodyRetrier(values: ["RATE_LIMITED"]) as Any) is any RequestRetrier))
        #expect(!((JSONBodyRetrier(values: ["RATE_LIMITED"]) as Any) is any ResponseValidator))
    }

    @Test(arguments: Wrapping.allCases)
    func loggingRetrierLogsTheSameLinesAmongTheRetriers(_ wrapping: Wrapping) async throws {
        let lines = Locked<[String]>([])
        let logger = LoggingRetrier(wrapping: RetryPolicy(), minimumLevel: .debug) { event in
            lines.withLock { $0.append(event.message) }
        }
        let retrier: any RequestRetrier = wrapping == .wrapped ? ForwardingRetrier(wrapped: logger) : logger
        let session = Session(
            transport: ScriptedTransport([.status(200), .status(503), .status(200)]), retriers: [retrier],
            clock: FastForwardClock())

        _ = try await session.send(request())
        _ = try await session.send(request())

        // Among the retriers it joins a request at its first failure, wrapped or not.
        #expect(
            lines.withLock { $0 }.map { String($0.drop { $0 != "]" }.dropFirst(2)) } == [
                "GET https://api.example.com/items: attempt 1 failed with status 503; retry in 500 ms (0 ms so far)",
                "GET https://api.example.com/items: succeeded with status 200 after 2 attempts (500 ms)",
            ])
    }

    @Test(arguments: Wrapping.allCases)
    func loggingRetrierLogsEveryRequestWhereItAlsoAdapts(_ wrapping: Wrapping) async throws {
        let lines = Locked<[String]>([])
        let logger = LoggingRetrier(wrapping: RetryPolicy(), minimumLevel: .debug) { event in
            lines.withLock { $0.append(event.message) }
        }
        let interceptor: any RequestInterceptor = wrapping == .wrapped ? ForwardingInterceptor(wrapped: logger) : logger
        let session = Session(
            transport: ScriptedTransport([.status(200), .status(503), .status(200)]), interceptor: interceptor,
            clock: FastForwardClock())

        _ = try await session.send(request())
        _ = try await session.send(request())

        #expect(lines.withLock { $0 }.count == 3)
        #expect(lines.withLock { $0 }.first?.hasSuffix("succeeded with status 200 (0 ms)") == true)
    }

    @Test(arguments: Wrapping.allCases)
    func circuitBreakerTripsRefusesAndClosesAfterItsTrial(_ wrapping: Wrapping) async throws {
        let transport = ScriptedTransport([.status(503), .status(503), .status(200)])
        let breaker = CircuitBreaker(
            configuration: .init(tripCondition: .consecutiveFailures(2), openDuration: .seconds(10)), clock: clock)
        let session = Session(transport: transport, adapters: [adapter(breaker, wrapping)], clock: clock)

        for _ in 0..<3 { _ = try? await session.send(request()) }
        #expect(breaker.state == .open)
        #expect(transport.requestCount == 2)
        clock.advance(by: .seconds(10))
        _ = try await session.send(request())

        #expect(breaker.state == .closed)
        #expect(breaker.permitsInFlight == 0)
    }

    @Test(arguments: Wrapping.allCases)
    func circuitBreakerRegistryKeepsOneBreakerPerHostAndTripsIt(_ wrapping: Wrapping) async throws {
        let transport = ScriptedTransport { request, _ in
            request.url?.host == "down.example.com" ? .status(503) : .status(200)
        }
        let registry = CircuitBreakerRegistry(
            configuration: .init(tripCondition: .consecutiveFailures(2)), clock: clock)
        let session = Session(transport: transport, adapters: [adapter(registry, wrapping)], clock: clock)

        for _ in 0..<3 { _ = try? await session.send(URL(string: "https://down.example.com/a")!) }
        _ = try await session.send(URL(string: "https://up.example.com/a")!)

        #expect(registry.breakers["down.example.com"]?.state == .open)
        #expect(registry.breakers["up.example.com"]?.state == .closed)
        #expect(transport.requestCount == 3)
    }

    @Test(arguments: Wrapping.allCases)
    func retryBudgetDeniesRetriesAndChargesEachOnce(_ wrapping: Wrapping) async throws {
        let transport = ScriptedTransport { _, _ in .status(503) }
        let budget = RetryBudget(configuration: .init(initialTokens: 12, retryCost: 5))
        let session = Session(
            transport: transport, adapters: [adapter(budget, wrapping)], retriers: [retryAnything(limit: 10)],
            clock: FastForwardClock())

        let error = try await #require(throws: ReboundError.self) { try await session.send(request()) }

        #expect(transport.requestCount == 3)
        #expect(error.underlyingError is RetryBudgetExhausted)
        #expect(budget.tokens(for: "api.example.com") == 2)
    }

    @Test(arguments: Wrapping.allCases)
    func authenticationRefreshesOn401AndKeepsItsCredentialToItsHostAcrossARedirect(_ wrapping: Wrapping) async throws {
        let transport = ScriptedTransport { request, _ in
            switch (request.url?.host, request.value(forHTTPHeaderField: "Authorization")) {
            case ("api.example.com", "Bearer 2"):
                .response(status: 302, headers: ["Location": "https://cdn.example.com/x"])
            case ("api.example.com", _): .status(401)
            default: .status(200)
            }
        }
        let auth = AuthenticationInterceptor(
            authenticator: TokenAuthenticator(), credential: Token(value: 1), clock: clock)
        let interceptor: any RequestInterceptor = wrapping == .wrapped ? ForwardingInterceptor(wrapped: auth) : auth
        let session = Session(transport: transport, interceptor: interceptor, clock: clock)

        let response = try await session.send(request())

        #expect(response.attempts.count == 2)
        #expect(
            transport.requests.map { $0.value(forHTTPHeaderField: "Authorization") } == ["Bearer 1", "Bearer 2", nil])
    }

    @Test(arguments: Wrapping.allCases)
    func idempotencyKeyIsTheSameOnEveryAttemptOfAPost(_ wrapping: Wrapping) async throws {
        let transport = ScriptedTransport([.status(503), .status(503), .status(200)])
        let session = Session(
            transport: transport, adapters: [adapter(IdempotencyKeyAdapter(), wrapping)], retriers: [RetryPolicy()],
            clock: FastForwardClock())

        _ = try await session.send(request(.post))

        let keys = transport.requests.map { $0.value(forHTTPHeaderField: IdempotencyKeyAdapter.headerName) }
        #expect(keys.count == 3)
        #expect(keys[0] != nil)
        #expect(Set(keys).count == 1)
    }
}

/// An authentication interceptor asked to retry requests it never adapted: it sits where its credential cannot be
/// applied (in `retriers:`, or behind a wrapper that forwards only `retry`).
@Suite("An authentication interceptor placed as a retrier only", .timeLimit(.minutes(5)))
struct AuthenticationPlacedAsRetrierTests {
    @Test(arguments: [nil, ["api.example.com"]] as [Set<String>?])
    func endsTheFirst401WithAnErrorThatSaysWhere(_ hosts: Set<String>?) async throws {
        let transport = ScriptedTransport { _, _ in .status(401) }
        let auth = AuthenticationInterceptor(
            authenticator: TokenAuthenticator(), credential: Token(value: 1), hosts: hosts, clock: ManualClock())
        let session = Session(transport: transport, retriers: [auth], clock: FastForwardClock())

        let error = try await #require(throws: ReboundError.self) {
            try await session.send(URL(string: "https://api.example.com/a")!)
        }

        // One attempt, not a 401 retried for ever (hosts given) or passed back unexplained (no hosts).
        #expect(transport.requestCount == 1)
        #expect(error.underlyingError as? AuthenticationError == .neverAdapted)
        #expect(error.response?.statusCode == 401)
        #expect("\(error)".contains("not in `retriers:` alone"))
    }

    @Test func behindARetrierOnlyWrapperItSaysTheSame() async throws {
        let transport = ScriptedTransport { _, _ in .status(401) }
        let auth = AuthenticationInterceptor(
            authenticator: TokenAuthenticator(), credential: Token(value: 1), hosts: ["api.example.com"],
            clock: ManualClock())
        let session = Session(
            transport: transport, retriers: [ForwardingRetrier(wrapped: auth)], clock: FastForwardClock())

        let error = try await #require(throws: ReboundError.self) {
            try await session.send(URL(string: "https://api.example.com/a")!)
        }

        #expect(transport.requestCount == 1)
        #expect(error.underlyingError as? AuthenticationError == .neverAdapted)
    }

    @Test func inAdaptersAloneItAppliesTheCredentialAndA401ComesBack() async throws {
        // The documented placement rule: a part plays the role of the list it is in.
        let transport = ScriptedTransport { _, _ in .status(401) }
        let auth = AuthenticationInterceptor(
            authenticator: TokenAuthenticator(), credential: Token(value: 1), clock: ManualClock())
        let session = Session(transport: transport, adapters: [auth], clock: FastForwardClock())

        let error = try await #require(throws: ReboundError.self) {
            try await session.send(URL(string: "https://api.example.com/a")!)
        }

        #expect(transport.requests.map { $0.value(forHTTPHeaderField: "Authorization") } == ["Bearer 1"])
        #expect(error.response?.statusCode == 401)
        #expect(error.underlyingError == nil)
    }

    @Test func placedAsAnAdapterToo_itIsNotAffected() async throws {
        // Given both as an adapter and, by mistake, as a retrier as well: the request was adapted, so it retries.
        let transport = ScriptedTransport([.status(401), .status(200)])
        let auth = AuthenticationInterceptor(
            authenticator: TokenAuthenticator(), credential: Token(value: 1), clock: ManualClock())
        let session = Session(transport: transport, adapters: [auth], retriers: [auth], clock: FastForwardClock())

        let response = try await session.send(URL(string: "https://api.example.com/a")!)

        #expect(response.attempts.count == 2)
        #expect(transport.requests.map { $0.value(forHTTPHeaderField: "Authorization") } == ["Bearer 1", "Bearer 2"])
    }
}
