import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

struct Token: AuthenticationCredential, Equatable {
    let value: Int
    var expired = false
    var requiresRefresh: Bool { expired }
}

/// Sends `Bearer <value>`; refreshes to the next value, or as `refresh` says.
struct TokenAuthenticator: Authenticator {
    let refreshes = Locked(0)
    var refresh: @Sendable (Token) async throws -> Token = { Token(value: $0.value + 1) }

    func apply(_ credential: Token, to request: inout URLRequest) {
        request.setValue("Bearer \(credential.value)", forHTTPHeaderField: "Authorization")
    }

    func refresh(_ credential: Token) async throws -> Token {
        refreshes.withLock { $0 += 1 }
        return try await refresh(credential)
    }

    func isRequest(_ request: URLRequest, authenticatedWith credential: Token) -> Bool {
        request.value(forHTTPHeaderField: "Authorization") == "Bearer \(credential.value)"
    }
}

/// A transport that answers 200 to `Bearer <accepted>` and 401 to anything else, after `delay` on `clock`.
private func server(accepting accepted: Int, delay: Duration = .zero, clock: ManualClock? = nil) -> ScriptedTransport {
    ScriptedTransport(clock: clock ?? ManualClock()) { request, _ in
        let ok = request.value(forHTTPHeaderField: "Authorization") == "Bearer \(accepted)"
        return (ok ? ScriptedTransport.Step.status(200) : .status(401)).delayed(by: delay)
    }
}

/// An authenticator whose refresh takes `duration` on `clock`, then adds one to the token, or throws when it must fail.
private func slowRefresh(taking duration: Duration, on clock: ManualClock, failing: Bool = false) -> TokenAuthenticator
{
    TokenAuthenticator { token in
        try await clock.sleep(for: duration)
        guard !failing else { throw TestError("refresh denied") }
        return Token(value: token.value + 1)
    }
}

/// An authenticator whose refresh asks the token endpoint, https://api.example.com/token, through the session `sending`
/// holds (the interceptor's own, set once it is made), waits for `afterAsking`, then takes the new token's value from
/// the answer's body.
func askingTheTokenEndpoint(
    through sending: Locked<Session?>, afterAsking: @escaping @Sendable () async throws -> Void = {}
) -> TokenAuthenticator {
    TokenAuthenticator { _ in
        let session = try #require(sending.withLock { $0 })
        let response = try await session.send(URL(string: "https://api.example.com/token")!)
        try await afterAsking()
        return Token(value: try #require(Int(String(decoding: response.data, as: UTF8.self))))
    }
}

@Suite("AuthenticationInterceptor", .timeLimit(.minutes(5)))
struct AuthenticationInterceptorTests {
    let clock = ManualClock()

    @Test func appliesTheCredentialOnlyToTheHostOfTheFirstRequest() async throws {
        let transport = ScriptedTransport { _, _ in .status(200) }
        let auth = AuthenticationInterceptor(
            authenticator: TokenAuthenticator(), credential: Token(value: 1), clock: clock)
        let session = Session(transport: transport, interceptor: auth, clock: clock)

        _ = try await session.send(URL(string: "https://api.example.com/a")!)
        _ = try await session.send(URL(string: "https://API.example.com:443/b")!)
        _ = try await session.send(URL(string: "https://evil.example.com/c")!)
        _ = try await session.send(URL(string: "https://api.example.com:8443/d")!)
        _ = try await session.send(URL(string: "http://api.example.com/e")!)

        #expect(
            transport.requests.map { $0.value(forHTTPHeaderField: "Authorization") } == [
                "Bearer 1", "Bearer 1", nil, nil, nil,
            ])
        #expect(auth.hosts == ["api.example.com:443"])
    }

    @Test(arguments: [
        ("api.example.com", "https://api.example.com:9000/x", true),
        ("API.example.com", "http://api.example.com/x", true),
        ("api.example.com:8443", "https://api.example.com:8443/x", true),
        ("api.example.com:8443", "https://api.example.com/x", false),
        ("api.example.com", "https://example.com/x", false),
        ("api.example.com", "https://api.example.com.evil.io/x", false),
        ("[::1]:8080", "http://[::1]:8080/x", true),
        ("127.0.0.1", "http://localhost:80/x", false),
    ])
    func appliesTheCredentialToTheHostsGiven(host: String, url: String, applied: Bool) async throws {
        let transport = ScriptedTransport { _, _ in .status(200) }
        let auth = AuthenticationInterceptor(
            authenticator: TokenAuthenticator(), credential: Token(value: 1), hosts: [host], clock: clock)

        _ = try await Session(transport: transport, interceptor: auth, clock: clock).send(URL(string: url)!)

        #expect((transport.requests.first?.value(forHTTPHeaderField: "Authorization") != nil) == applied)
    }

    @Test func fiftyConcurrentRequestsWithAnExpiredCredentialRefreshOnceAndAllSucceed() async throws {
        let authenticator = TokenAuthenticator { token in
            try await Task.sleep(for: .zero)
            return Token(value: token.value + 1)
        }
        let auth = AuthenticationInterceptor(
            authenticator: authenticator, credential: Token(value: 1, expired: true), clock: clock)
        let session = Session(transport: server(accepting: 2), interceptor: auth, clock: clock)

        let responses = try await withThrowingTaskGroup(of: Response.self) { group in
            for _ in 0..<50 { group.addTask { try await session.send(exampleURL) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }

        #expect(responses.count == 50)
        #expect(responses.allSatisfy { $0.retryCount == 0 })
        #expect(authenticator.refreshes.withLock { $0 } == 1)
        #expect(auth.credential == Token(value: 2))
    }

    @Test func fiftyConcurrent401sRefreshOnceAndRetryEachRequestOnce() async throws {
        let authenticator = TokenAuthenticator()
        let auth = AuthenticationInterceptor(authenticator: authenticator, credential: Token(value: 1), clock: clock)
        let transport = server(accepting: 2, delay: .seconds(1), clock: clock)
        let session = Session(transport: transport, interceptor: auth, clock: clock)

        let task = Task {
            try await withThrowingTaskGroup(of: Response.self) { group in
                for _ in 0..<50 { group.addTask { try await session.send(exampleURL) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        try await clock.waitForSleepers(50)  // every request is in flight with Bearer 1
        clock.advance(by: .seconds(1))  // …and gets its 401
        try await clock.waitForSleepers(50)  // every retry is in flight with Bearer 2
        clock.advance(by: .seconds(1))
        let responses = try await task.value

        #expect(responses.count == 50)
        #expect(responses.allSatisfy { $0.attempts.map(\.statusCode) == [401, 200] })
        #expect(authenticator.refreshes.withLock { $0 } == 1)
        #expect(transport.requestCount == 100)
    }

    @Test func aRequestSentWithAStaleCredentialIsRetriedWithTheNewOneWithoutARefresh() async throws {
        let authenticator = TokenAuthenticator()
        let auth = AuthenticationInterceptor(authenticator: authenticator, credential: Token(value: 1), clock: clock)
        let session = Session(
            transport: server(accepting: 7, delay: .seconds(1), clock: clock), interceptor: auth, clock: clock)

        let task = Task { try await session.send(exampleURL) }
        try await clock.waitForSleepers(1)
        auth.credential = Token(value: 7)
        clock.advance(by: .seconds(1))
        try await clock.waitForSleepers(1)
        clock.advance(by: .seconds(1))
        let response = try await task.value

        #expect(response.attempts.map(\.statusCode) == [401, 200])
        #expect(response.request.value(forHTTPHeaderField: "Authorization") == "Bearer 7")
        #expect(authenticator.refreshes.withLock { $0 } == 0)
    }

    @Test func aFailedRefreshFailsEveryWaitingRequestWithItsError() async throws {
        let authenticator = TokenAuthenticator { _ in
            try await Task.sleep(for: .zero)
            throw TestError("refresh denied")
        }
        let auth = AuthenticationInterceptor(
            authenticator: authenticator, credential: Token(value: 1, expired: true), clock: clock)
        let session = Session(transport: server(accepting: 2), interceptor: auth, clock: clock)

        let errors = await withTaskGroup(of: (any Error)?.self) { group in
            for _ in 0..<10 {
                group.addTask {
                    do {
                        _ = try await session.send(exampleURL)
                        return nil
                    } catch { return error }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }

        #expect(errors.count == 10)
        #expect(
            errors.allSatisfy { ($0 as? ReboundError)?.underlyingError as? TestError == TestError("refresh denied") })
        #expect(authenticator.refreshes.withLock { $0 } >= 1)
    }

    @Test func aFailedRefreshAfterA401EndsTheRequestWithTheRefreshError() async throws {
        let authenticator = TokenAuthenticator { _ in throw TestError("refresh denied") }
        let auth = AuthenticationInterceptor(authenticator: authenticator, credential: Token(value: 1), clock: clock)
        let session = Session(transport: server(accepting: 2), interceptor: auth, clock: clock)

        let error = await #expect(throws: ReboundError.self) { try await session.send(exampleURL) }

        guard case .retryAborted(let refreshError as TestError, .unacceptableStatusCode(401)) = error?.reason else {
            Issue.record("reason: \(String(describing: error?.reason))")
            return
        }
        #expect(refreshError == TestError("refresh denied"))
    }

    @Test func stopsWithAnExcessiveRefreshErrorAfterFiveRefreshesInThirtySeconds() async throws {
        let authenticator = TokenAuthenticator()
        let auth = AuthenticationInterceptor(authenticator: authenticator, credential: Token(value: 1), clock: clock)
        let session = Session(transport: server(accepting: 0), interceptor: auth, clock: clock)

        let error = await #expect(throws: ReboundError.self) { try await session.send(exampleURL) }

        #expect(authenticator.refreshes.withLock { $0 } == 5)
        #expect(error?.attemptCount == 6)
        guard case .retryAborted(let authError as AuthenticationError, _) = error?.reason else {
            Issue.record("reason: \(String(describing: error?.reason))")
            return
        }
        #expect(authError == .excessiveRefresh(count: 5, window: .seconds(30)))
        #expect(
            "\(authError)" == "the credential was refreshed 5 times in 30 s, the most allowed; not refreshing again")

        clock.advance(by: .seconds(30))
        _ = try? await session.send(exampleURL)
        #expect(authenticator.refreshes.withLock { $0 } == 10)
    }

    @Test func aMissingCredentialFailsTheRequestWithoutRetrying() async throws {
        let transport = ScriptedTransport { _, _ in .status(200) }
        let auth = AuthenticationInterceptor<TokenAuthenticator>(authenticator: TokenAuthenticator(), clock: clock)
        let session = Session(
            transport: transport, interceptor: Interceptor(retriers: [retryAnything(limit: 3)], interceptors: [auth]),
            clock: clock)

        let error = await #expect(throws: ReboundError.self) { try await session.send(exampleURL) }

        #expect(error?.underlyingError as? AuthenticationError == .missingCredential)
        #expect(error?.attemptCount == 1)
        #expect(transport.requestCount == 0)
    }

    @Test func aRequestWaitingForARefreshCanBeCancelledAndTheRefreshStillLands() async throws {
        let refreshClock = ManualClock()
        let authenticator = slowRefresh(taking: .seconds(1), on: refreshClock)
        let auth = AuthenticationInterceptor(
            authenticator: authenticator, credential: Token(value: 1, expired: true), clock: clock)
        let transport = server(accepting: 2)
        let session = Session(transport: transport, interceptor: auth, clock: clock)

        let task = Task { try await session.send(exampleURL) }
        try await refreshClock.waitForSleepers(1)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }

        refreshClock.advance(by: .seconds(1))
        _ = try await session.send(exampleURL)
        #expect(transport.requestCount == 1)
        #expect(authenticator.refreshes.withLock { $0 } == 1)
    }

    @Test(arguments: [true, false])
    func aRequestAdaptedDuringARefreshWaitsForItsResult(refreshSucceeds: Bool) async throws {
        let refreshClock = ManualClock()
        let authenticator = slowRefresh(taking: .seconds(1), on: refreshClock, failing: !refreshSucceeds)
        let auth = AuthenticationInterceptor(authenticator: authenticator, credential: Token(value: 1), clock: clock)
        let transport = server(accepting: 2)
        let session = Session(transport: transport, interceptor: auth, clock: clock)

        // The first request's 401 starts the refresh; a request made meanwhile waits for it instead of being sent.
        let first = Task { try await session.send(exampleURL) }
        try await refreshClock.waitForSleepers(1)
        let second = Task { try await session.send(exampleURL) }
        try await waitWhile { auth.pendingRefresh.waiters < 2 }
        #expect(transport.requestCount == 1)
        refreshClock.advance(by: .seconds(1))

        if refreshSucceeds {
            let (answered, waited) = try await (first.value, second.value)
            #expect(answered.attempts.map(\.statusCode) == [401, 200])
            #expect(waited.attempts.map(\.statusCode) == [200])
            #expect(waited.request.value(forHTTPHeaderField: "Authorization") == "Bearer 2")
            #expect(transport.requestCount == 3)
        } else {
            for task in [first, second] {
                let error = await #expect(throws: ReboundError.self) { try await task.value }
                #expect(error?.underlyingError as? TestError == TestError("refresh denied"))
            }
            #expect(transport.requestCount == 1)
        }
        #expect(authenticator.refreshes.withLock { $0 } == 1)
    }

    @Test func aRequestAdaptedAfterACredentialWasSetDuringARefreshGoesAtOnceWithThatCredential() async throws {
        let refreshClock = ManualClock()
        let authenticator = slowRefresh(taking: .seconds(1), on: refreshClock)
        let auth = AuthenticationInterceptor(authenticator: authenticator, credential: Token(value: 1), clock: clock)
        let transport = ScriptedTransport(clock: clock) { request, _ in
            ["Bearer 2", "Bearer 7"].contains(request.value(forHTTPHeaderField: "Authorization"))
                ? .status(200) : .status(401)
        }
        let session = Session(transport: transport, interceptor: auth, clock: clock)

        // A 401 starts a refresh; meanwhile the app logs in again and sets a credential of its own.
        let first = Task { try await session.send(exampleURL) }
        try await refreshClock.waitForSleepers(1)
        auth.credential = Token(value: 7)
        let sending = Task { try await session.send(exampleURL) }
        // Sent at once with the credential set; held back for the refresh, it would be the refresh's second waiter.
        try await waitWhile { transport.requestCount < 2 && auth.pendingRefresh.waiters < 2 }
        #expect(transport.requestCount == 2)
        refreshClock.advance(by: .seconds(1))
        let (second, refreshed) = try await (sending.value, first.value)

        #expect(second.attempts.map(\.statusCode) == [200])
        #expect(second.request.value(forHTTPHeaderField: "Authorization") == "Bearer 7")
        // The refresh goes on for the request that needed it, and its result replaces the credential set.
        #expect(refreshed.request.value(forHTTPHeaderField: "Authorization") == "Bearer 2")
        #expect(authenticator.refreshes.withLock { $0 } == 1)
    }

    @Test func aRequestTheRefreshSendsThroughTheInterceptorIsNotHeldBackForIt() async throws {
        // The refresh asks the token endpoint, on the credential's host, through the same session and interceptor.
        let sending = Locked<Session?>(nil)
        let authenticator = askingTheTokenEndpoint(through: sending)
        let auth = AuthenticationInterceptor(authenticator: authenticator, credential: Token(value: 1), clock: clock)
        let transport = ScriptedTransport(clock: clock) { request, _ in
            if request.url?.path == "/token" { return .response(body: "2") }
            return request.value(forHTTPHeaderField: "Authorization") == "Bearer 2" ? .status(200) : .status(401)
        }
        let session = Session(transport: transport, interceptor: auth, clock: clock)
        sending.withLock { $0 = session }

        let task = Task { try await session.send(exampleURL) }
        // Held back for the refresh it belongs to, the token request would make the refresh wait for itself: a second
        // waiter, until the refresh's time limit.
        try await waitWhile {
            auth.pendingRefresh.refreshing ? auth.pendingRefresh.waiters < 2 : auth.refreshCount == 0
        }
        let stuck = auth.pendingRefresh.refreshing
        if stuck { clock.advance(by: .seconds(30)) }
        #expect(!stuck)
        let response = try await task.value

        #expect(response.attempts.map(\.statusCode) == [401, 200])
        #expect(transport.requests.map(\.url?.path) == ["/items", "/token", "/items"])
        #expect(transport.requests[1].value(forHTTPHeaderField: "Authorization") == "Bearer 1")
        #expect(authenticator.refreshes.withLock { $0 } == 1)
    }

    @Test func withThePresetTwenty401sRefreshOnceAndAllSucceedWithoutSpendingTheBudgetOrCountingFailures()
        async throws
    {
        // The README's pairing: the preset's throttle, breakers, budget and deadline, with the interceptor.
        let resilience = Resilience(clock: clock, random: .seeded(3), deadline: .seconds(30))
        let authenticator = TokenAuthenticator()
        let auth = AuthenticationInterceptor(authenticator: authenticator, credential: Token(value: 1), clock: clock)
        let transport = server(accepting: 2, delay: .seconds(1), clock: clock)
        let session = Session(transport: transport, resilience: resilience, interceptor: auth, clock: clock)
        let tokens = try #require(resilience.budget.tokens(for: exampleURL))

        let ended = Locked(0)
        let task = Task {
            await withTaskGroup(of: Result<Response, any Error>.self) { group in
                for _ in 0..<20 {
                    group.addTask {
                        defer { ended.withLock { $0 += 1 } }
                        do { return .success(try await session.send(exampleURL)) } catch { return .failure(error) }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
        }
        try await clock.waitForSleepers(40)  // each request's first attempt, with Bearer 1, and its deadline's timer
        clock.advance(by: .seconds(1))  // …which gets its 401
        // Each request's retry in flight with Bearer 2 (and its deadline's timer), or the request ended.
        try await waitWhile {
            let ended = ended.withLock { $0 }
            return transport.requestCount + ended < 40 || clock.pendingSleepCount < 2 * (20 - ended)
        }
        clock.advance(by: .seconds(1))
        let responses = try await task.value.map { try $0.get() }

        #expect(responses.count == 20)
        #expect(responses.allSatisfy { $0.attempts.map(\.statusCode) == [401, 200] })
        #expect(authenticator.refreshes.withLock { $0 } == 1)
        // A retry with a refreshed credential is no sign of an overloaded host: no token spent, no failure counted.
        #expect(try #require(resilience.budget.tokens(for: exampleURL)) >= tokens)
        #expect(resilience.breakers.breakers.values.allSatisfy { $0.state == .closed })
        #expect(resilience.throttle.grantsKept == 0)
    }

    @Test func aRequestWaitingForARefreshEndsAtItsDeadlineAndTheRefreshStillLands() async throws {
        let refreshClock = ManualClock()
        let authenticator = slowRefresh(taking: .seconds(5), on: refreshClock)
        let auth = AuthenticationInterceptor(authenticator: authenticator, credential: Token(value: 1), clock: clock)
        let transport = server(accepting: 2)
        let session = Session(transport: transport, interceptor: auth, clock: clock)

        let first = Task { try await session.send(exampleURL) }
        try await refreshClock.waitForSleepers(1)  // the first request's 401 started the refresh
        let late = Task { try await session.send(exampleURL, deadline: .seconds(2)) }
        try await waitWhile { auth.pendingRefresh.waiters < 2 }
        try await waitForSleep(of: .seconds(2), on: clock)  // its deadline's timer
        clock.advance(by: .seconds(2))
        let error = try await #require(throws: ReboundError.self) { try await late.value }
        refreshClock.advance(by: .seconds(5))
        let response = try await first.value

        #expect(error.stopReason == .deadline)
        #expect(error.attempts.count == 1)
        #expect(transport.requestCount == 2)  // the first request's two attempts: the late one was never sent
        #expect(response.request.value(forHTTPHeaderField: "Authorization") == "Bearer 2")
        #expect(auth.pendingRefresh.waiters == 0)
    }

    @Test func otherFailuresAndOtherHostsAreNotRetried() async throws {
        let auth = AuthenticationInterceptor(
            authenticator: TokenAuthenticator(), credential: Token(value: 1), hosts: ["api.example.com"], clock: clock)
        let transport = ScriptedTransport([.status(403), .status(401)])
        let session = Session(transport: transport, interceptor: auth, clock: clock)

        _ = try? await session.send(exampleURL)
        _ = try? await session.send(URL(string: "https://other.example.com/x")!)

        #expect(transport.requestCount == 2)
    }
}
