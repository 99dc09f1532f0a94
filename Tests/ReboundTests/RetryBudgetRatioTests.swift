import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("RetryBudget: ratio form and refunds", .timeLimit(.minutes(5)))
struct RetryBudgetRatioTests {
    private func session(_ budget: RetryBudget, _ transport: ScriptedTransport, retryLimit: Int = 3) -> Session {
        Session(
            transport: transport, adapters: [budget], retriers: [RetryPolicy(retryLimit: retryLimit, backoff: .zero)],
            clock: FastForwardClock())
    }

    @Test("Retries are at most 10 % of the window's requests plus the floor")
    func shareOfTheWindow() async throws {
        let clock = ManualClock()
        let budget = RetryBudget(ratio: .default, clock: clock)
        let transport = ScriptedTransport { _, _ in .status(503) }
        let session = session(budget, transport)

        #expect(budget.tokens(for: exampleURL) == 10)  // the floor: 1 a second over 10 s
        for _ in 0..<100 { _ = try? await session.send(request()) }

        // 100 requests: 10 % of them, plus the floor of 10, retried once each as the allowance lasts.
        #expect(transport.requestCount == 100 + 10 + 10)
        #expect(budget.tokens(for: "api.example.com") == 0)
        #expect(budget.tokens(for: exampleURL) == 0)
        #expect(budget.tokens(for: URLRequest(url: URL(string: "https://other.example.com/")!)) == 10)
    }

    @Test("Before an adapter that moves requests to another host, it counts them under the host they are sent to")
    func countsUnderTheHostSentTo() async throws {
        let clock = ManualClock()
        let budget = RetryBudget(ratio: .default, clock: clock)
        let moving = movingAdapter()
        let session = Session(
            transport: ScriptedTransport { _, _ in .status(200) }, adapters: [budget, moving], clock: clock)

        for index in 0..<100 { _ = try await session.send(URL(string: "https://h\(index).example.com/items")!) }

        // The real host's window holds the 100 requests, whose retries it pays for: 10 % of them plus the floor.
        #expect(budget.tokens(for: "real.example.com") == 10 + 10)
    }

    @Test("The window slides: what was spent is forgotten after it")
    func windowSlides() async throws {
        let clock = ManualClock()
        let budget = RetryBudget(ratio: RetryBudget.Ratio(percent: 10, window: .seconds(10)), clock: clock)
        let session = session(budget, ScriptedTransport { _, _ in .status(503) })
        for _ in 0..<50 { _ = try? await session.send(request()) }
        #expect(budget.tokens(for: exampleURL) == 0)

        clock.advance(by: .seconds(5))
        #expect(budget.tokens(for: exampleURL) == 0, "half a window later, the window still holds the retries")
        clock.advance(by: .seconds(5))
        #expect(budget.tokens(for: exampleURL) == 10, "a window later, only the floor is left")
    }

    @Test(
        "In a long outage the load stays within 1.1× plus the floor's share, at any traffic",
        arguments: [10, 100, 1_000])
    func amplificationAtAnyRate(requestsPerSecond: Int) async throws {
        let clock = ManualClock()
        let budget = RetryBudget(ratio: .default, clock: clock)
        let transport = ScriptedTransport { _, _ in .status(503) }
        let session = session(budget, transport)
        let seconds = 30
        for _ in 0..<seconds {
            // The second's requests, spread over it.
            for _ in 0..<requestsPerSecond {
                _ = try? await session.send(request())
                clock.advance(by: .seconds(1) / requestsPerSecond)
            }
        }
        let offered = Double(requestsPerSecond * seconds)
        let amplification = Double(transport.requestCount) / offered
        let floorShare = 1 / Double(requestsPerSecond)
        // The first window also gets the floor's whole reserve; a slot's width of slack (a tenth of a window).
        #expect(amplification <= 1.1 + floorShare + 10 / offered + 0.01, "amplification \(amplification)")
        #expect(amplification >= 1.09, "the budget allowed fewer retries than its share: \(amplification)")
    }

    @Test("The token bucket allows many times the traffic at 10 requests a second; the ratio does not")
    func bucketAgainstRatio() async throws {
        let clock = ManualClock()
        let bucket = ScriptedTransport { _, _ in .status(503) }
        let ratio = ScriptedTransport { _, _ in .status(503) }
        let bucketSession = session(RetryBudget(), bucket)
        let ratioSession = session(RetryBudget(ratio: .default, clock: clock), ratio)
        for _ in 0..<100 {
            _ = try? await bucketSession.send(request())
            _ = try? await ratioSession.send(request())
            clock.advance(by: .milliseconds(100))
        }
        #expect(bucket.requestCount == 100 + 100)  // 500 tokens pay for 100 retries
        #expect(ratio.requestCount <= 100 + 10 + 10)
    }

    @Test(
        "A grant whose attempt an open breaker refuses before it is sent is refunded",
        arguments: [false, true])
    func refundWhenTheBreakerRefuses(throughRegistry: Bool) async throws {
        let budget = RetryBudget()
        let configuration = CircuitBreaker.Configuration(tripCondition: .consecutiveFailures(1))
        let breaker: any RequestAdapter =
            throughRegistry
            ? CircuitBreakerRegistry(configuration: configuration, clock: ManualClock())
            : CircuitBreaker(configuration: configuration, clock: ManualClock())
        let transport = ScriptedTransport { _, _ in .status(503) }
        let session = Session(
            transport: transport, adapters: [budget, breaker], retriers: [RetryPolicy(backoff: .zero)],
            clock: FastForwardClock())

        let error = try await #require(throws: ReboundError.self) { try await session.send(request()) }
        #expect(transport.requestCount == 1)
        #expect(error.circuitBreakerOpenError != nil || error.statusCode == 503)
        #expect(budget.tokens(for: exampleURL) == 500, "the refused retry was charged")
        #expect(budget.requestsWithGrants == 0)
    }

    @Test("A grant refused by a later gate, or cancelled in its backoff, is refunded", arguments: [false, true])
    func refundWhenTheRetryNeverStarts(cancelInBackoff: Bool) async throws {
        let budget = RetryBudget()
        let clock = ManualClock()
        let denyAll = DenyingGate()
        let transport = ScriptedTransport { _, _ in .status(503) }
        let session = Session(
            transport: transport, adapters: [budget], retriers: [RetryPolicy(backoff: .constant(.seconds(1)))],
            gates: cancelInBackoff ? [] : [denyAll], clock: clock)

        let task = Task { try await session.send(request()) }
        if cancelInBackoff {
            try await clock.waitForSleepers(1)
            #expect(budget.tokens(for: exampleURL) == 495)
            task.cancel()
        }
        _ = await task.result
        #expect(transport.requestCount == 1)
        #expect(budget.tokens(for: exampleURL) == 500)
        #expect(budget.requestsWithGrants == 0)
    }

    @Test("Ratio numbers are checked: a literal traps naming the field, validated throws")
    func configuration() async throws {
        #expect(throws: ConfigurationError.self) { try RetryBudget.Ratio.validated(percent: 150) }
        #expect(throws: ConfigurationError.self) { try RetryBudget.Ratio.validated(window: .zero) }
        #expect(throws: ConfigurationError.self) { try RetryBudget.Ratio.validated(minimumRetriesPerSecond: -1) }
        #expect(throws: ConfigurationError.self) { try RetryBudget.Ratio.validated(percent: .nan) }
        #expect(try RetryBudget.Ratio.validated() == .default)
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = RetryBudget.Ratio(percent: -1)
        }
        expectStandardError(of: result, contains: "RetryBudget.Ratio.percent must be between 0 and 100, got -1.0")
    }
}

/// A gate that denies every retry.
/// A gate that denies every retry.
struct DenyingGate: RetryGate {
    struct Denied: Error {}
    func admitRetry(_ request: RetryRequest, dueTo error: ReboundError, after delay: Duration) -> (any Error)? {
        Denied()
    }
}
