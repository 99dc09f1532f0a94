import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A breaker that closes after several trial successes and counts slow calls, in a session: the transport answers
/// after the delays its steps ask, on a clock whose sleeps end at once, shared with the breaker.
@Suite("CircuitBreaker: closing on evidence, slow calls")
struct CircuitBreakerEvidenceTests {
    let clock = FastForwardClock()

    /// A session whose chain is `adapters` (a breaker among them) on `transport` and the shared clock.
    func session(_ adapters: [any RequestAdapter], transport: ScriptedTransport) -> Session {
        Session(transport: transport, adapters: adapters, clock: clock)
    }

    /// An adapter that waits `wait` on the clock before it lets the request go on, as a pacer or a token refresh may.
    func waiting(_ wait: Duration) -> Adapter {
        Adapter { [clock] request, _ in
            try await clock.sleep(for: wait)
            return request
        }
    }

    /// Sends one request, returning its attempts whether it succeeded or failed.
    func attempts(of session: Session) async -> [Attempt] {
        do {
            return try await session.send(request()).attempts
        } catch let error as ReboundError {
            return error.attempts
        } catch {
            Issue.record("unexpected \(error)")
            return []
        }
    }

    @Test func theTimeOnTheWireLeavesOutTheAdaptersTime() async throws {
        let transport = ScriptedTransport([.status(200).delayed(by: .seconds(2)), .status(503)], clock: clock)
        let session = session([waiting(.seconds(5))], transport: transport)

        let answered = try #require(await attempts(of: session).first)
        #expect(answered.duration == .seconds(7))
        #expect(answered.timeOnWire == .seconds(2))
        let failed = try #require(await attempts(of: session).first)
        #expect(failed.timeOnWire == .zero)
    }

    @Test func anAttemptAnAdapterRefusedWasNeverOnTheWire() async throws {
        let transport = ScriptedTransport([], clock: clock)
        let refuse = Adapter { _, _ in throw TestError("refused") }

        let attempt = try #require(await attempts(of: session([refuse], transport: transport)).first)
        #expect(attempt.timeOnWire == nil)
        #expect(transport.requestCount == 0)
    }

    @Test func anAttemptTheAttemptTimeoutEndedWasOnTheWireUntilThen() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport([.hang, .status(200)])
        let session = Session(
            transport: transport, retriers: [RetryPolicy(backoff: .zero)], attemptTimeout: .seconds(5), clock: clock)
        let task = Task { try await session.send(request()) }
        try await transport.waitForRequests(1)
        try await clock.waitForSleepers(1)
        clock.advance(by: .seconds(5))

        let response = try await task.value
        #expect(response.attempts.map(\.timeOnWire) == [.seconds(5), .zero])
    }

    @Test func anAttemptTheDeadlineCutWasOnTheWireUntilThen() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport([.hang])
        let session = Session(transport: transport, deadline: .seconds(3), clock: clock)
        let task = Task { try await session.send(request()) }
        try await transport.waitForRequests(1)
        try await clock.waitForSleepers(1)
        clock.advance(by: .seconds(3))

        let error = await #expect(throws: ReboundError.self) { try await task.value }
        #expect(error?.attempts.map(\.timeOnWire) == [.seconds(3)])
    }

    @Test func anAttemptTheCallerCancelledWasOnTheWireUntilThen() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport([.hang])
        let observer = RecordingObserver()
        let session = Session(
            transport: transport, observers: [observer], deadline: .seconds(60), clock: clock)
        let task = Task { try await session.send(request()) }
        try await transport.waitForRequests(1)
        clock.advance(by: .seconds(2))
        task.cancel()

        await #expect(throws: CancellationError.self) { try await task.value }
        let attempt = try #require(observer.outcomes.first?.attempt)
        #expect(attempt.request != nil)
        #expect(attempt.timeOnWire == .seconds(2))
    }

    @Test func theTimeOnTheWireCoversEveryRedirectHop() async throws {
        let transport = ScriptedTransport(
            [
                .response(status: 302, headers: ["Location": "https://api.example.com/moved"]).delayed(by: .seconds(1)),
                .status(200).delayed(by: .seconds(2)),
            ], clock: clock)
        let session = session([waiting(.seconds(5))], transport: transport)

        let response = try await session.send(request())
        #expect(transport.requestCount == 2)
        #expect(response.attempts.map(\.timeOnWire) == [.seconds(3)])
        #expect(response.attempts.map(\.duration) == [.seconds(8)])
    }

    @Test func aHedgeThatLostWasOnTheWireUntilTheRoundEnded() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport(clock: clock) { _, number in
            number == 1 ? .status(200).delayed(by: .seconds(10)) : .status(200).delayed(by: .seconds(1))
        }
        let session = Session(
            transport: transport, retriers: [RetryPolicy()], hedging: Hedging(delay: .seconds(2)), clock: clock)
        let task = Task { try await session.send(request()) }
        try await transport.waitForRequests(1)
        try await clock.waitForSleepers(2)
        clock.advance(by: .seconds(2))
        try await transport.waitForRequests(2)
        try await clock.waitForSleepers(2)
        clock.advance(by: .seconds(1))

        let response = try await task.value
        // The first attempt, cancelled when the hedge won 3 s after it was sent; the hedge, 1 s on the wire.
        #expect(response.attempts.map(\.hedge) == [0, 1])
        #expect(response.attempts.map(\.wasCancelled) == [true, false])
        #expect(response.attempts.map(\.timeOnWire) == [.seconds(3), .seconds(1)])
    }

    @Test func aSlowFailureWhoseRetryTheBreakerIsAskedAboutCountsOnce() async throws {
        // 503s that took 2 s: half of four calls slow opens it (and so would five failures in a row, later).
        let slowFailure = ScriptedTransport.Step.status(503).delayed(by: .seconds(2))
        let transport = ScriptedTransport(
            [slowFailure, .status(200), .status(200), slowFailure, .status(200)], clock: clock)
        let breaker = CircuitBreaker(configuration: Self.halfOfFourSlow, clock: clock)
        let session = Session(
            transport: transport, adapters: [breaker], retriers: [RetryPolicy(backoff: .zero)], clock: clock)

        // The slow 503, counted when its retry is asked for, then the retry's 200: two calls, not three.
        _ = try await session.send(request())
        _ = try await session.send(request())
        #expect(breaker.state == .closed)
        // The fourth call, slow, fills the window with two slow of four: the breaker opens, and refuses the retry.
        let error = await #expect(throws: ReboundError.self) { try await session.send(request()) }
        #expect(breaker.state == .open)
        #expect(error?.circuitBreakerOpenError != nil)
        #expect(transport.requestCount == 4)
    }

    /// Over 1 s on the wire is slow; half of the last four calls slow opens the breaker.
    static let halfOfFourSlow = CircuitBreaker.Configuration(
        slowCallRule: .init(threshold: .seconds(1), rate: 0.5, window: .count(4), minimumCalls: 4))

    @Test func slowAnswersOpenTheBreakerThoughTheyAllSucceeded() async throws {
        let slow = ScriptedTransport.Step.status(200).delayed(by: .seconds(2))
        let transport = ScriptedTransport([slow, .status(200), slow, .status(200), .status(200)], clock: clock)
        let breaker = CircuitBreaker(key: "api", configuration: Self.halfOfFourSlow, clock: clock)
        let session = session([breaker], transport: transport)

        for _ in 0..<3 { _ = try await session.send(request()) }
        #expect(breaker.state == .closed)
        _ = try await session.send(request())
        #expect(breaker.state == .open)

        let error = await #expect(throws: ReboundError.self) { try await session.send(request()) }
        #expect(error?.circuitBreakerOpenError?.key == "api")
        #expect(transport.requestCount == 4)
    }

    @Test func waitingInAnAdapterBeforeTheBreakerIsNotASlowCall() async throws {
        let transport = ScriptedTransport(clock: clock) { _, _ in .status(200).delayed(by: .milliseconds(100)) }
        let breaker = CircuitBreaker(configuration: Self.halfOfFourSlow, clock: clock)
        let session = session([waiting(.seconds(5)), breaker], transport: transport)

        for _ in 0..<8 { _ = try await session.send(request()) }
        #expect(breaker.state == .closed)
        #expect(transport.requestCount == 8)
    }

    /// Opens at the first failure for 1 s; three trial successes in a row close it.
    static let threeTrialSuccesses = CircuitBreaker.Configuration(
        tripCondition: .consecutiveFailures(1), openDuration: .seconds(1), trialSuccessesToClose: 3,
        slowCallRule: .init(threshold: .seconds(1)))

    @Test func aHalfOpenBreakerClosesOnlyOnceTheTrialSuccessesAskedCame() async throws {
        let transport = ScriptedTransport([.status(503)], clock: clock)
        let breaker = CircuitBreaker(configuration: Self.threeTrialSuccesses, clock: clock)
        let session = session([breaker], transport: transport)
        _ = try? await session.send(request())
        #expect(breaker.state == .open)
        try await clock.sleep(for: .seconds(1))

        transport.enqueue(.status(200), .status(200), .status(200))
        _ = try await session.send(request())
        _ = try await session.send(request())
        #expect(breaker.state == .halfOpen)
        _ = try await session.send(request())
        #expect(breaker.state == .closed)
    }

    @Test func aFailedTrialAfterSomeSuccessesOpensItAgain() async throws {
        let transport = ScriptedTransport([.status(503), .status(200), .status(200), .status(500)], clock: clock)
        let breaker = CircuitBreaker(configuration: Self.threeTrialSuccesses, clock: clock)
        let session = session([breaker], transport: transport)
        _ = try? await session.send(request())
        try await clock.sleep(for: .seconds(1))

        _ = try await session.send(request())
        _ = try await session.send(request())
        _ = try? await session.send(request())
        #expect(breaker.state == .open)
        let error = await #expect(throws: ReboundError.self) { try await session.send(request()) }
        #expect(error?.circuitBreakerOpenError != nil)
        #expect(transport.requestCount == 4)
    }

    @Test func aSlowTrialOpensItAgainThoughItSucceeded() async throws {
        let transport = ScriptedTransport(
            [.status(503), .status(200).delayed(by: .seconds(3))], clock: clock)
        let breaker = CircuitBreaker(configuration: Self.threeTrialSuccesses, clock: clock)
        let session = session([breaker], transport: transport)
        _ = try? await session.send(request())
        try await clock.sleep(for: .seconds(1))

        let response = try await session.send(request())
        #expect(response.attempts.first?.timeOnWire == .seconds(3))
        #expect(breaker.state == .open)
    }

    @Test func aRegistrysBreakersCloseOnTheSameEvidence() async throws {
        let transport = ScriptedTransport([.status(503), .status(200), .status(200), .status(200)], clock: clock)
        let registry = CircuitBreakerRegistry(configuration: Self.threeTrialSuccesses, clock: clock)
        let session = session([registry], transport: transport)
        _ = try? await session.send(request())
        let breaker = registry.breaker(for: "api.example.com")
        #expect(breaker.state == .open)
        try await clock.sleep(for: .seconds(1))

        for _ in 0..<2 { _ = try await session.send(request()) }
        #expect(breaker.state == .halfOpen)
        _ = try await session.send(request())
        #expect(breaker.state == .closed)
    }
}
