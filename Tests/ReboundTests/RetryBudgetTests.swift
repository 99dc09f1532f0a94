import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("RetryBudget", .timeLimit(.minutes(5)))
struct RetryBudgetTests {
    private func session(
        _ budget: RetryBudget, _ transport: ScriptedTransport, retryLimit: Int = 2
    ) throws -> Session {
        Session(
            transport: transport,
            adapters: [budget], retriers: [RetryPolicy(retryLimit: retryLimit)],
            clock: FastForwardClock())
    }

    @Test func aRetryCostsFiveAndASuccessGivesItBack() async throws {
        let budget = RetryBudget()
        let session = try session(budget, ScriptedTransport([.status(503), .status(200)]))

        let task = Task { try await session.send(request()) }
        _ = try await task.value

        #expect(budget.tokens(for: "api.example.com") == 500)
    }

    @Test func aFailureKeepsTheCostAndATimeoutCostsTen() async throws {
        let budget = RetryBudget()
        let session = try session(budget, ScriptedTransport([.urlError(.timedOut), .status(503), .status(503)]))

        _ = try? await session.send(request())

        #expect(budget.tokens(for: "api.example.com") == 500 - 10 - 5)
    }

    @Test func aFirstAttemptSuccessAddsOneUpToTheMaximum() async throws {
        let budget = RetryBudget(configuration: .init(initialTokens: 498, maximumTokens: 500))
        let session = try session(budget, ScriptedTransport { _, _ in .status(200) })

        for _ in 0..<5 { _ = try await session.send(request()) }

        #expect(budget.tokens(for: "api.example.com") == 500)
    }

    @Test func anEmptyBucketStopsRetriesWithTheOriginalFailureMarkedExhausted() async throws {
        let budget = RetryBudget(configuration: .init(initialTokens: 7))
        let transport = ScriptedTransport { _, _ in .status(503) }
        let session = try session(budget, transport)

        let error = await #expect(throws: ReboundError.self) { try await session.send(request()) }

        #expect(transport.requestCount == 2)
        guard case .retryAborted(let exhausted as RetryBudgetExhausted, .unacceptableStatusCode(503)) = error?.reason
        else {
            Issue.record("reason: \(String(describing: error?.reason))")
            return
        }
        #expect(exhausted == RetryBudgetExhausted(key: "api.example.com", availableTokens: 2, retryCost: 5))
        #expect("\(exhausted)" == "retry budget for api.example.com exhausted: 2 tokens left, a retry costs 5")
        #expect(error?.statusCode == 503)
    }

    @Test func eachHostHasItsOwnBucketSharedBySessions() async throws {
        let budget = RetryBudget(configuration: .init(initialTokens: 5))
        let transport = ScriptedTransport { _, _ in .status(503) }
        let first = try session(budget, transport, retryLimit: 1)
        let second = try session(budget, transport, retryLimit: 1)

        _ = try? await first.send(request())
        _ = try? await second.send(request())
        _ = try? await second.send(request(.get, URL(string: "https://other.example.com/")!))

        #expect(transport.requestCount == 2 + 1 + 2)
        #expect(budget.tokens(for: "api.example.com") == 0)
        #expect(budget.tokens(for: "other.example.com") == 0)
    }

    @Test func aThousandConcurrentRequestsToAFailingHostSendAtMostElevenHundredAttempts() async throws {
        let budget = RetryBudget()
        let transport = ScriptedTransport { _, _ in .status(503) }
        let session = try session(budget, transport, retryLimit: 3)

        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<1_000 { group.addTask { _ = try? await session.send(request()) } }
        }

        #expect(transport.requestCount <= 1_000 + 500 / 5)
        #expect(transport.requestCount >= 1_000 + 500 / 5 - 1)
        #expect(budget.tokens(for: "api.example.com") < 5)
    }

    // MARK: - Configuration

    @Test(arguments: [
        (0, 0, 5, 10, 1, "RetryBudget.Configuration.maximumTokens", "must be at least 1, got 0"),
        (
            501, 500, 5, 10, 1, "RetryBudget.Configuration.initialTokens",
            "must be between 0 and maximumTokens (500), got 501"
        ),
        (500, 500, 0, 10, 1, "RetryBudget.Configuration.retryCost", "must be at least 1, got 0"),
        (500, 500, 5, 0, 1, "RetryBudget.Configuration.timeoutRetryCost", "must be at least 1, got 0"),
        (500, 500, 5, 10, -1, "RetryBudget.Configuration.successReward", "must be 0 or more, got -1"),
    ])
    func validatedRejectsAnInvalidNumberNamingIt(
        initial: Int, maximum: Int, cost: Int, timeout: Int, reward: Int, field: String, problem: String
    ) {
        let error = #expect(throws: ConfigurationError.self) {
            try RetryBudget.Configuration.validated(
                initialTokens: initial, maximumTokens: maximum, retryCost: cost, timeoutRetryCost: timeout,
                successReward: reward)
        }

        #expect(error?.field == field)
        #expect(error?.message == "\(field) \(problem)")
    }

    @Test func validatedReturnsTheConfigurationTheInitializerWould() throws {
        let validated = try RetryBudget.Configuration.validated(initialTokens: 0, maximumTokens: 1, successReward: 0)

        #expect(validated == RetryBudget.Configuration(initialTokens: 0, maximumTokens: 1, successReward: 0))
        #expect(try RetryBudget.Configuration.validated() == .default)
    }

    @Test func anInvalidNumberWrittenInCodeTrapsNamingIt() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = RetryBudget.Configuration(retryCost: 0)
        }

        expectStandardError(of: result, contains: "RetryBudget.Configuration.retryCost must be at least 1, got 0")
    }
}
