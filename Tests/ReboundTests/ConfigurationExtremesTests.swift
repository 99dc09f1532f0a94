import Foundation
import ReboundTesting
import Testing

@testable import Rebound

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The largest values each `validated(...)` accepts, used as a user would: whatever is accepted works (its arithmetic
/// saturates), and what cannot work is refused with its field.
@Suite("Configuration extremes", .timeLimit(.minutes(5)))
struct ConfigurationExtremesTests {
    /// A session whose transport answers 503 once, then 200, through `adapters`, retrying with `retriers`.
    private func failOnceThenSucceed<C: Clock>(
        adapters: [any RequestAdapter] = [], retriers: [any RequestRetrier] = [RetryPolicy(backoff: .zero)],
        deadline: Duration? = nil, attemptTimeout: Duration? = nil, hedging: Hedging? = nil, clock: C
    ) async throws -> Response where C.Duration == Duration {
        let transport = ScriptedTransport([.status(503), .status(200)])
        let session = Session(
            transport: transport, adapters: adapters, retriers: retriers, deadline: deadline,
            attemptTimeout: attemptTimeout, hedging: hedging, clock: clock)
        return try await session.send(request())
    }

    @Test("A backoff scale no delay could ever sleep is refused, naming the field", arguments: [1e13, 1e19, 1e300])
    func anImpossibleBackoffScaleIsRefused(scale: Double) {
        let policy = #expect(throws: ConfigurationError.self) {
            try RetryPolicy.validated(exponentialBackoffScale: scale)
        }
        #expect(policy?.field == "RetryPolicy.exponentialBackoffScale")
        let connectionLost = #expect(throws: ConfigurationError.self) {
            try ConnectionLostRetryPolicy.validated(exponentialBackoffScale: scale)
        }
        #expect(connectionLost?.field == "ConnectionLostRetryPolicy.exponentialBackoffScale")
    }

    @Test("The largest backoff scale accepted gives delays held at the longest delay")
    func theLargestBackoffScaleWorks() async throws {
        let policy = try RetryPolicy.validated(exponentialBackoffScale: RetryResult.longestDelay.seconds)
        for retryCount in [0, 1, 10, 100] {
            #expect(policy.delay(forRetryCount: retryCount) == RetryResult.longestDelay)
        }
        let clock = FastForwardClock()
        let response = try await failOnceThenSucceed(retriers: [policy], clock: clock)
        #expect(response.statusCode == 200)
        #expect(clock.sleeps == [RetryResult.longestDelay])
    }

    @Test(
        "Concurrency limits of Int.max, fixed or adaptive, let requests through and read back",
        arguments: [
            ConcurrencyLimit.fixed(.max), .fixed(.max - 1),
            .aimd(try! .validated(initial: .max, minimum: .max, maximum: .max)),
            .gradient(try! .validated(initial: .max, minimum: .max, maximum: .max)),
            .gradient(try! .validated(initial: 1, minimum: 1, maximum: .max, queueSize: .max)),
        ])
    func hugeConcurrencyLimitsWork(limit: ConcurrencyLimit) async throws {
        let limiter = ConcurrencyLimiter(configuration: try .validated(limit: limit), clock: FastForwardClock())
        for _ in 0..<3 {
            let response = try await failOnceThenSucceed(adapters: [limiter], clock: FastForwardClock())
            #expect(response.statusCode == 200)
        }
        #expect(limiter.snapshot(for: "api.example.com").limit >= 1)
        #expect(limiter.placesHeld == 0)
    }

    @Test("A queue timeout far past any clock's range still hands the place over, or times out")
    func aHugeQueueTimeoutWorks() async throws {
        let clock = ManualClock()
        let limiter = ConcurrencyLimiter(
            configuration: try .validated(limit: .fixed(1), maximumQueued: 1, queueTimeout: .seconds(1e20)),
            clock: clock)
        let firstRoles = RegisteredRoles(besides: .none)
        let firstID = UUID()
        _ = try await limiter.adapt(
            request(), context: RequestContext(requestID: firstID, attempt: 1, label: nil, roles: firstRoles))
        let waiting = Task {
            try await limiter.adapt(
                request(),
                context: RequestContext(
                    requestID: UUID(), attempt: 1, label: nil, roles: RegisteredRoles(besides: .none)))
        }
        try await clock.waitForSleepers(1)
        #expect(clock.nextDeadline == TestInstant(offset: RetryResult.longestDelay), "the sleep is held")
        clock.advance(by: RetryResult.longestDelay)

        let error = await #expect(throws: ConcurrencyLimitExceeded.self) { try await waiting.value }
        #expect(error?.limitHit == .queueTimeout)
        #expect(clock.now.advanced(by: .seconds(Int64.max)).offset > clock.now.offset, "the test clock saturates")
    }

    @Test(
        "A token bucket of Int.max tokens, or rewards, never overflows",
        arguments: [(Int.max, Int.max, 1), (500, 500, Int.max), (Int.max, Int.max, Int.max)])
    func hugeTokenBucketsWork(initial: Int, maximum: Int, reward: Int) async throws {
        let budget = RetryBudget(
            configuration: try .validated(initialTokens: initial, maximumTokens: maximum, successReward: reward))
        let transport = ScriptedTransport([.status(200), .status(503), .status(200)])
        let session = Session(
            transport: transport, adapters: [budget], retriers: [RetryPolicy(backoff: .zero)],
            clock: FastForwardClock())

        _ = try await session.send(request())
        #expect(budget.tokens(for: exampleURL) == maximum, "a success with no retry, rewarded up to the maximum")
        _ = try await session.send(request())
        #expect(budget.tokens(for: exampleURL) == maximum, "a retry's cost, given back by its success")
    }

    @Test(
        "A ratio budget with a floor or a window past Int's range counts and reads back",
        arguments: [
            RetryBudget.Ratio(minimumRetriesPerSecond: 1e300),
            RetryBudget.Ratio(minimumRetriesPerSecond: .greatestFiniteMagnitude),
            RetryBudget.Ratio(window: .seconds(Int64.max)),
            RetryBudget.Ratio(window: .seconds(1e20)),
        ])
    func hugeRatioBudgetsWork(ratio: RetryBudget.Ratio) async throws {
        let validated = try RetryBudget.Ratio.validated(
            percent: ratio.percent, window: ratio.window, minimumRetriesPerSecond: ratio.minimumRetriesPerSecond)
        let budget = RetryBudget(ratio: validated, clock: FastForwardClock())
        #expect(budget.tokens(for: "api.example.com") > 1_000_000)

        let response = try await failOnceThenSucceed(adapters: [budget], clock: FastForwardClock())

        #expect(response.retryCount == 1)
        #expect(budget.tokens(for: "api.example.com") > 1_000_000)
    }

    @Test("A deadline, an attempt timeout or a hedging delay of Int64.max seconds works on the real clock")
    func hugeDurationsWorkOnTheContinuousClock() async throws {
        let forever = Duration.seconds(Int64.max)
        let hedging = try Hedging.validated(delay: forever)
        for (deadline, timeout, hedging) in [(forever, nil, nil), (nil, forever, nil), (nil, nil, hedging)] {
            let response = try await failOnceThenSucceed(
                deadline: deadline, attemptTimeout: timeout, hedging: hedging, clock: ContinuousClock())
            #expect(response.statusCode == 200)
        }
        let resilient = Session(
            transport: ScriptedTransport([.status(200)]),
            resilience: Resilience(deadline: Duration(secondsComponent: .max, attosecondsComponent: 0)))
        #expect(try await resilient.send(request()).statusCode == 200)
    }

    @Test("A count window too long to hold is refused, naming the field; the longest accepted works")
    func countWindowsAreBounded() async throws {
        let error = #expect(throws: ConfigurationError.self) {
            try CircuitBreaker.Configuration.validated(
                tripCondition: .failureRate(0.5, window: .count(.max), minimumCalls: 1))
        }
        #expect(error?.field == "CircuitBreaker.Configuration.tripCondition")
        #expect(error?.message.hasSuffix("must have a count window of 1 to 100000 calls, got \(Int.max)") == true)

        let longest = try CircuitBreaker.Configuration.validated(
            tripCondition: .failureRate(0.5, window: .count(CircuitBreaker.Window.maximumCount), minimumCalls: 10))
        let breaker = CircuitBreaker(configuration: longest, clock: FastForwardClock())
        let response = try await failOnceThenSucceed(adapters: [breaker], clock: FastForwardClock())
        #expect(response.statusCode == 200)
        #expect(breaker.state == .closed)
    }
}
