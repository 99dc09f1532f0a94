import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An `AuthenticationInterceptor` after parts that hold something for an attempt (a concurrency limiter's place, a
/// half-open breaker's trial), whose refresh asks the token endpoint on the same host through the same session: while an
/// attempt waits for the refresh, it holds nothing the refresh's own request needs.
/// An authenticator whose refresh takes `duration` on `clock`, then adds one to the token.
private func slowRefresh(taking duration: Duration, on clock: ManualClock) -> TokenAuthenticator {
    TokenAuthenticator { token in
        try await clock.sleep(for: duration)
        return Token(value: token.value + 1)
    }
}

@Suite("AuthenticationInterceptor after parts that hold room", .timeLimit(.minutes(1)))
struct AuthenticationGivesWayTests {
    let clock = ManualClock()

    /// A part before the interceptor with room for one attempt of api.example.com: a limiter of one place, a pacer to
    /// which the host said (at /quota) that one request is left this minute, or a breaker (alone, or a registry's) made
    /// half-open by a 503 (at /down), whose one trial the next request takes.
    func partWithRoomForOne(_ part: String, transport: ScriptedTransport) async throws -> any RequestAdapter {
        let configuration = CircuitBreaker.Configuration(
            tripCondition: .consecutiveFailures(1), breakDuration: .constant(.seconds(5)))
        let adapter: any RequestAdapter =
            switch part {
            case "limiter": ConcurrencyLimiter(configuration: .init(limit: .fixed(1)), clock: clock)
            case "pacer": RateLimitPacer(clock: clock)
            case "breaker": CircuitBreaker(configuration: configuration, clock: clock)
            default: CircuitBreakerRegistry(configuration: configuration, clock: clock)
            }
        if part == "pacer" {
            _ = try await Session(transport: transport, adapters: [adapter], clock: clock)
                .send(URL(string: "https://api.example.com/quota")!)
        }
        guard part != "limiter", part != "pacer" else { return adapter }
        _ = try? await Session(transport: transport, adapters: [adapter], clock: clock)
            .send(URL(string: "https://api.example.com/down")!)
        clock.advance(by: .seconds(5))
        return adapter
    }

    /// Starts a request to api.example.com/other through `limiter` alone, and returns once it holds the host's place (a
    /// place taken says it is in: the interceptor's refresh timeout sleeps on the same clock).
    func anotherRequestTakesThePlace(
        of limiter: ConcurrencyLimiter, through transport: ScriptedTransport
    ) async throws -> Task<Response, any Error> {
        let other = Task { [clock] in
            try await Session(transport: transport, adapters: [limiter], clock: clock)
                .send(URL(string: "https://api.example.com/other")!)
        }
        try await waitWhile { limiter.snapshot(for: "api.example.com").inFlight == 0 }
        return other
    }

    /// Behind forwarding wrappers (`wrapped`), the part and the interceptor give way and take the room again through the
    /// context they are handed, as given.
    @Test(
        "A request that waits for a refresh gives its place or its trial to the refresh's own request, and takes it again after",
        arguments: ["limiter", "pacer", "breaker", "registry"], Wrapping.allCases)
    func theRefreshsRequestGetsTheRoomTheWaitingRequestHeld(part: String, wrapping: Wrapping) async throws {
        let transport = ScriptedTransport(clock: clock) { request, _ in
            switch request.url?.path {
            case "/down": .status(503)
            case "/quota": .response(headers: ["RateLimit-Remaining": "1", "RateLimit-Reset": "60"])
            // The token endpoint's answer says the quota again.
            case "/token": .response(headers: ["RateLimit-Remaining": "5", "RateLimit-Reset": "60"], body: "2")
            default: request.value(forHTTPHeaderField: "Authorization") == "Bearer 2" ? .status(200) : .status(401)
            }
        }
        let room = try await partWithRoomForOne(part, transport: transport)
        // The credential has expired: the first request's adapt refreshes it, through the same session.
        let sending = Locked<Session?>(nil)
        let authenticator = askingTheTokenEndpoint(through: sending)
        let auth = AuthenticationInterceptor(
            authenticator: authenticator, credential: Token(value: 1, expired: true), clock: clock)
        let session =
            switch wrapping {
            case .unwrapped: Session(transport: transport, adapters: [room], interceptor: auth, clock: clock)
            case .wrapped:
                Session(
                    transport: transport, adapters: [ForwardingAdapter(wrapped: room)],
                    interceptor: ForwardingInterceptor(wrapped: auth), clock: clock)
            }
        sending.withLock { $0 = session }

        let response = try await session.send(exampleURL)

        #expect(response.attempts.map(\.statusCode) == [200])
        #expect(transport.requests.map(\.url?.path).suffix(2) == ["/token", "/items"])
        #expect(authenticator.refreshes.withLock { $0 } == 1)
        switch room {
        case let limiter as ConcurrencyLimiter:
            #expect(limiter.placesHeld == 0)
        case let pacer as RateLimitPacer:
            #expect(pacer.requestsKept == 0)
            #expect(pacer.quota(for: "api.example.com")?.remaining == 4, "the token request and the request, of 5")
        case let breaker as CircuitBreaker:
            #expect(breaker.state == .closed, "the token request was the trial, and closed the breaker")
            #expect(breaker.permitsInFlight == 0)
        case let registry as CircuitBreakerRegistry:
            #expect(registry.breakers.values.map(\.state) == [.closed])
            #expect(registry.breakers.values.allSatisfy { $0.permitsInFlight == 0 })
        default:
            Issue.record("unexpected part \(room)")
        }
    }

    @Test(
        "A half-open breaker's trial that gets a 401 is counted before the refresh, whose request to the host then goes",
        arguments: ["breaker", "registry"])
    func aTrialThatGetsA401IsCountedBeforeTheRefresh(part: String) async throws {
        let transport = ScriptedTransport(clock: clock) { request, _ in
            switch request.url?.path {
            case "/down": .status(503)
            case "/token": .response(body: "2")
            default: request.value(forHTTPHeaderField: "Authorization") == "Bearer 2" ? .status(200) : .status(401)
            }
        }
        let breaker = try await partWithRoomForOne(part, transport: transport)
        // The credential looks valid, but the server has revoked it: the trial gets a 401, and the refresh asks the
        // token endpoint through the same session.
        let sending = Locked<Session?>(nil)
        let authenticator = askingTheTokenEndpoint(through: sending)
        let auth = AuthenticationInterceptor(authenticator: authenticator, credential: Token(value: 1), clock: clock)
        let session = Session(transport: transport, adapters: [breaker], interceptor: auth, clock: clock)
        sending.withLock { $0 = session }

        let response = try await session.send(exampleURL)

        #expect(response.attempts.map(\.statusCode) == [401, 200])
        #expect(transport.requests.map(\.url?.path).suffix(3) == ["/items", "/token", "/items"])
        let breakers =
            try (breaker as? CircuitBreakerRegistry).map { Array($0.breakers.values) }
            ?? [#require(breaker as? CircuitBreaker)]
        #expect(breakers.map(\.state) == [.closed], "the 401 answered the trial: the host is up")
        #expect(breakers.allSatisfy { $0.permitsInFlight == 0 })
    }

    @Test(
        "A request that gave its place way waits for one again after the refresh, though the limiter has no queue; in shadow mode it takes one",
        arguments: [Enforcement.enforced, .shadow])
    func aRequestThatGaveItsPlaceWayWaitsForOneAgain(enforcement: Enforcement) async throws {
        let limiter = ConcurrencyLimiter(
            configuration: .init(limit: .fixed(1), maximumQueued: 0, queueTimeout: .seconds(5)), clock: clock,
            enforcement: enforcement)
        let transport = ScriptedTransport(clock: clock) { request, _ in
            switch request.url?.path {
            case "/token": .response(body: "2")
            case "/other": .status(200).delayed(by: .seconds(1))
            default: request.value(forHTTPHeaderField: "Authorization") == "Bearer 2" ? .status(200) : .status(401)
            }
        }
        // The refresh asks the token endpoint through the same session, then takes a second on a clock of its own.
        let refreshClock = ManualClock()
        let sending = Locked<Session?>(nil)
        let authenticator = askingTheTokenEndpoint(through: sending) { try await refreshClock.sleep(for: .seconds(1)) }
        let auth = AuthenticationInterceptor(
            authenticator: authenticator, credential: Token(value: 1, expired: true), clock: clock)
        let observed = ShadowEnforcementTests.ShadowRecorder()
        let session = Session(
            transport: transport, adapters: [limiter], interceptor: auth, observers: [observed], clock: clock)
        sending.withLock { $0 = session }

        let ended = Locked(false)
        let task = Task {
            defer { ended.withLock { $0 = true } }
            return try await session.send(exampleURL)
        }
        try await refreshClock.waitForSleepers(1)
        // While the refresh runs, another request to the host, without the interceptor, takes the place for a second.
        let other = try await anotherRequestTakesThePlace(of: limiter, through: transport)
        refreshClock.advance(by: .seconds(1))
        if enforcement == .enforced {
            // The request comes back for its place and, the host at its limit, waits for it.
            try await waitWhile { limiter.snapshot(for: "api.example.com").queued == 0 && !ended.withLock { $0 } }
            #expect(!ended.withLock { $0 }, "the request waits for a place, not refused for want of a queue")
        }
        // In shadow mode the request goes on at once: it is answered before the other request's second passes.
        var early: Response?
        if enforcement == .shadow { early = try await task.value }
        clock.advance(by: .seconds(1))
        let answered: Response
        if let early { answered = early } else { answered = try await task.value }
        _ = try await other.value

        #expect(answered.attempts.map(\.statusCode) == [200])
        #expect(limiter.placesHeld == 0)
        // In shadow mode, coming back over the limit is no refusal: enforced, the request would have waited.
        #expect(observed.refusals.isEmpty)
    }

    @Test("A request a later adapter moved to another host takes its place again under that host after the refresh")
    func aMovedRequestIsAdmittedAgainUnderTheHostItGoesTo() async throws {
        let limiter = ConcurrencyLimiter(
            configuration: .init(limit: .fixed(1), maximumQueued: 5, queueTimeout: .seconds(30)), clock: clock)
        let transport = ScriptedTransport(clock: clock) { request, _ in
            switch request.url?.path {
            case "/other": .status(200).delayed(by: .seconds(10))
            default: request.value(forHTTPHeaderField: "Authorization") == "Bearer 2" ? .status(200) : .status(401)
            }
        }
        // Requests to api.example.com go to b.example.com, after the limiter took a place of the first.
        let moves = Adapter.modifying { request, _ in
            guard request.url?.path == "/items" else { return }
            request.url = URL(string: "https://b.example.com/items")
        }
        let refreshClock = ManualClock()
        let auth = AuthenticationInterceptor(
            authenticator: slowRefresh(taking: .seconds(1), on: refreshClock),
            credential: Token(value: 1, expired: true), clock: clock)
        let session = Session(transport: transport, adapters: [limiter, moves], interceptor: auth, clock: clock)

        let ended = Locked(false)
        let task = Task {
            defer { ended.withLock { $0 = true } }
            return try await session.send(URL(string: "https://api.example.com/items")!)
        }
        try await refreshClock.waitForSleepers(1)
        // While the refresh runs, another request takes api.example.com's one place for ten seconds.
        let other = try await anotherRequestTakesThePlace(of: limiter, through: transport)
        refreshClock.advance(by: .seconds(1))
        // Admitted again under b.example.com, where a place is free, the request goes at once.
        try await waitWhile { !ended.withLock { $0 } && limiter.snapshot(for: "api.example.com").queued == 0 }
        #expect(ended.withLock { $0 }, "not queued for the place of the host it no longer goes to")
        clock.advance(by: .seconds(10))
        let response = try await task.value
        _ = try await other.value

        #expect(response.request.url?.host == "b.example.com")
        #expect(response.attempts.map(\.statusCode) == [200])
        #expect(limiter.placesHeld == 0)
    }

    @Test("A hedge a 401 starts while another attempt is in flight costs the budget no more than a retry after a 401")
    func aHedgeInPlaceOfARetryAfterA401IsFree() async throws {
        let budget = RetryBudget()
        let before = try #require(budget.tokens(for: exampleURL))
        // The first attempt answers its 401 after a second; the hedge started at 100 ms gets one at once, which the
        // interceptor retries after a refresh: the next hedge, with the new credential, wins.
        let transport = ScriptedTransport(clock: clock) { request, number in
            if request.value(forHTTPHeaderField: "Authorization") == "Bearer 2" { return .status(200) }
            return number == 1 ? .status(401).delayed(by: .seconds(1)) : .status(401)
        }
        let auth = AuthenticationInterceptor(
            authenticator: TokenAuthenticator(), credential: Token(value: 1), clock: clock)
        let session = Session(
            transport: transport, adapters: [budget], interceptor: auth,
            hedging: Hedging(delay: .milliseconds(100), maximumAttempts: 3), clock: clock)

        let task = Task { try await session.send(exampleURL) }
        try await clock.waitForSleepers(2)
        clock.advance(by: .milliseconds(100))
        let response = try await task.value

        #expect(response.attempts.map(\.hedge) == [1, 0, 2])
        #expect(response.attempts.last?.statusCode == 200)
        // The hedge the delay started is charged as any hedge, less the token the request's success gives back; the one
        // in place of the 401's retry is not.
        let hedgeCost = RetryBudget.Configuration.default.retryCost
        #expect(budget.tokens(for: exampleURL) == before - hedgeCost + 1)
    }

    @Test("In the preset, the request after a host's outage refreshes through the trial it gives way, and both succeed")
    func inThePresetTheRefreshTakesTheTrialTheWaitingRequestGaveWay() async throws {
        // The README's pairing: the preset with the interceptor. Five failures open the host's breaker, for at most
        // half a second.
        let resilience = Resilience(clock: clock, random: .seeded(7), deadline: .seconds(30))
        // What the host's breaker was when the request itself reached the host.
        let statesAtTheRequest = Locked<[CircuitBreaker.State]>([])
        let transport = ScriptedTransport(clock: clock) { request, _ in
            switch request.url?.path {
            case "/down": return .status(503)
            case "/token": return .response(body: "2")
            default:
                statesAtTheRequest.withLock { $0 = resilience.breakers.breakers.values.map(\.state) }
                return request.value(forHTTPHeaderField: "Authorization") == "Bearer 2" ? .status(200) : .status(401)
            }
        }
        let tripping = Session(transport: transport, adapters: resilience.adapters, clock: clock)
        for _ in 0..<5 { _ = try? await tripping.send(URL(string: "https://api.example.com/down")!) }
        let breakers = Array(resilience.breakers.breakers.values)
        #expect(breakers.map(\.state) == [.open])
        clock.advance(by: .milliseconds(500))
        // The credential has expired: the request that takes the trial refreshes it, through the same session.
        let sending = Locked<Session?>(nil)
        let authenticator = askingTheTokenEndpoint(through: sending)
        let auth = AuthenticationInterceptor(
            authenticator: authenticator, credential: Token(value: 1, expired: true), clock: clock)
        let session = Session(transport: transport, resilience: resilience, interceptor: auth, clock: clock)
        sending.withLock { $0 = session }

        let response = try await session.send(exampleURL)

        #expect(response.attempts.map(\.statusCode) == [200])
        #expect(transport.requests.map(\.url?.path).suffix(2) == ["/token", "/items"])
        #expect(authenticator.refreshes.withLock { $0 } == 1)
        // Half-open still, had the request been the trial: the token request took it, and closed the breaker.
        #expect(statesAtTheRequest.withLock { $0 } == [.closed])
        #expect(breakers.map(\.state) == [.closed])
        #expect(breakers.allSatisfy { $0.permitsInFlight == 0 })
        #expect(resilience.throttle.grantsKept == 0)
    }

    @Test("When the refresh's own request fails the trial it was given, the waiting request fails, holding nothing")
    func aRefreshThatFailsTheTrialLeavesTheWaitingRequestHoldingNothing() async throws {
        // The token endpoint fails too: the refresh's own request, which takes the trial, opens the breaker again.
        let transport = ScriptedTransport(clock: clock) { request, _ in
            switch request.url?.path {
            case "/down", "/token": .status(503)
            default: .status(200)
            }
        }
        let breaker = try #require(try await partWithRoomForOne("breaker", transport: transport) as? CircuitBreaker)
        let sending = Locked<Session?>(nil)
        let authenticator = askingTheTokenEndpoint(through: sending)
        let auth = AuthenticationInterceptor(
            authenticator: authenticator, credential: Token(value: 1, expired: true), clock: clock)
        let session = Session(transport: transport, adapters: [breaker], interceptor: auth, clock: clock)
        sending.withLock { $0 = session }

        let error = try await #require(throws: ReboundError.self) { try await session.send(exampleURL) }

        guard case .adaptationFailed(let refreshError as ReboundError) = error.reason else {
            Issue.record("reason: \(error.reason)")
            return
        }
        #expect(refreshError.statusCode == 503, "the refresh failed on the token endpoint's answer")
        #expect(transport.requests.map(\.url?.path).suffix(1) == ["/token"], "the request itself was never sent")
        #expect(breaker.state == .open)
        #expect(breaker.permitsInFlight == 0)
    }
}
