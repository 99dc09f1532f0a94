import Foundation
import ReboundTesting
import Testing

@testable import Rebound

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Resilience, the preset", .timeLimit(.minutes(5)))
struct ResilienceTests {
    @Test("The recommended parts, with the defaults the docs state")
    func theDefaults() {
        let resilience = Resilience()

        #expect(resilience.deadline == .seconds(30))
        #expect(resilience.throttle.configuration == .init(window: .seconds(5), countsRejections: false))
        #expect(resilience.breakers.configuration.tripCondition == .consecutiveFailures(5))
        // A break of 0.25 to 0.5 s that does not grow.
        let breaks = (0..<40).map { resilience.breakers.configuration.breakDuration.delay(forRetryCount: $0 % 20) }
        #expect(breaks.allSatisfy { $0 >= .milliseconds(250) && $0 < .milliseconds(500) })
        #expect(resilience.budget.ratio == .default)
        #expect(resilience.retryPolicy.retryLimit == 2)
        #expect(resilience.adapters.count == 3)
        #expect(resilience.adapters[0] as? AdaptiveThrottle === resilience.throttle)
        #expect(resilience.adapters[1] as? CircuitBreakerRegistry === resilience.breakers)
        #expect(resilience.adapters[2] as? RetryBudget === resilience.budget)
        #expect(Resilience.recommended === Resilience.recommended)
    }

    @Test("The policy's delays are jittered: each drawn below Alamofire's")
    func jitteredDelays() {
        let policy = Resilience(random: .seeded(3)).retryPolicy
        let delays = (0..<50).map { _ in policy.delay(forRetryCount: 1) }

        #expect(delays.allSatisfy { $0 >= .zero && $0 < .seconds(1) })
        #expect(Set(delays).count > 40)
    }

    @Test("A session on it retries, with its own adapters after the chain's and its own retriers first")
    func aSessionOnIt() async throws {
        // No deadline: a fast-forward clock would end its timer at once.
        let resilience = Resilience(clock: ManualClock(), random: .seeded(1), deadline: nil)
        let log = Log()
        let clock = FastForwardClock()
        let session = Session(
            transport: ScriptedTransport([.status(503), .status(200)]), resilience: resilience,
            adapters: [taggingAdapter("mine", log: log)],
            retriers: [loggingRetrier("mine", log: log, answer: .doNotRetry)], clock: clock)

        let response = try await session.send(request())

        #expect(response.retryCount == 1)
        #expect(log.all == ["adapt mine #1", "retry mine #0", "adapt mine #2"])
        // The chain's parts saw both attempts: the throttle counted them, the breaker let them through.
        #expect(resilience.throttle.snapshot(for: exampleURL)?.requests == 2)
        #expect(resilience.breakers.breakers["api.example.com"]?.state == .closed)
        // The delay was drawn below the policy's 0.5 s.
        #expect(clock.sleeps.count == 1 && clock.sleeps[0] < .milliseconds(500))
    }

    @Test("A request on it ends at the preset's deadline")
    func theDeadline() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport([.hang])
        let session = Session(
            transport: transport, resilience: Resilience(clock: clock, deadline: .seconds(2)), clock: clock)

        let task = Task { try await session.send(request()) }
        try await transport.waitForRequests(1)
        try await clock.waitForSleepers(1)
        clock.advance(by: .seconds(2))

        let error = try await #require(throws: ReboundError.self) { try await task.value }
        #expect(error.errorType == "deadlineExceeded")
    }

    @Test("Sessions given the same Resilience share each host's breaker")
    func sharing() async throws {
        let clock = ManualClock()
        // No deadline: a fast-forward clock would end its timer at once.
        let resilience = Resilience(clock: clock, random: .seeded(1), deadline: nil)
        let failing = Session(
            transport: ScriptedTransport { _, _ in .status(500) }, resilience: resilience, clock: FastForwardClock())
        for _ in 0..<2 { _ = try? await failing.send(request(.post)) }  // a POST is not retried: 2 failures
        let other = Session(
            transport: ScriptedTransport { _, _ in .status(500) }, resilience: resilience, clock: FastForwardClock())
        for _ in 0..<3 { _ = try? await other.send(request(.post)) }

        #expect(resilience.breakers.breakers["api.example.com"]?.state == .open)
    }
}
