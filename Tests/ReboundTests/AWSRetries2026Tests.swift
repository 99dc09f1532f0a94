import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The AWS SDKs' retry behavior 2.1, each number as smithy-swift's `DefaultRetryStrategy` (with
/// `useNewRetries2026`), botocore's `retries/standard.py` and smithy-rs's `RetrySpec::v2_1` have it.
@Suite("The AWS SDKs' retry behavior 2.1: awsRetries2026", .timeLimit(.minutes(5)))
struct AWSRetries2026Tests {
    private let host = "api.example.com"

    private func session(_ budget: RetryBudget, _ transport: ScriptedTransport, seed: UInt64 = 1) -> Session {
        Session(
            transport: transport, adapters: [budget], retriers: [RetryPolicy.awsRetries2026(using: .seeded(seed))],
            clock: FastForwardClock())
    }

    /// The policy's answer to a failed first attempt (or a later one) with `status` and `headers`.
    private func decision(
        _ policy: RetryPolicy, status: Int, headers: [String: String] = [:], retryCount: Int = 0
    ) async -> RetryResult {
        let sent = request()
        let response = HTTPURLResponse(
            url: exampleURL, statusCode: status, httpVersion: "HTTP/1.1", headerFields: headers)
        let reason = ReboundError.Reason.unacceptableStatusCode(status)
        let attempts = (0...retryCount).map {
            Attempt(number: $0 + 1, request: sent, response: response, failure: reason, duration: .zero)
        }
        return await policy.retry(
            RetryRequest(
                originalRequest: sent, lastRequest: sent, response: response, data: Data(), attempts: attempts),
            dueTo: ReboundError(
                reason: reason, originalRequest: sent, lastRequest: sent, response: response, attempts: attempts))
    }

    @Test func theBudgetHas500TokensARetryCosts14AThrottledOne5AndASuccessGives1() {
        let configuration = RetryBudget.Configuration.awsRetries2026

        #expect(configuration.initialTokens == 500)
        #expect(configuration.maximumTokens == 500)
        #expect(configuration.retryCost == 14)
        #expect(configuration.timeoutRetryCost == 14)
        #expect(configuration.throttlingRetryCost == 5)
        #expect(configuration.successReward == 1)
        // The standard mode is unchanged: a throttled request's retry costs what any other does.
        #expect(RetryBudget.Configuration.default.throttlingRetryCost == 5)
        #expect(RetryBudget.Configuration.default.retryCost == 5)
    }

    @Test func aRetryAfterA503OrATimeoutCosts14AndAfterA429Costs5() async {
        let budget = RetryBudget(configuration: .awsRetries2026)

        _ = try? await session(budget, ScriptedTransport([.status(503), .status(503), .status(503)])).send(request())
        #expect(budget.tokens(for: host) == 500 - 2 * 14)

        _ = try? await session(budget, ScriptedTransport(Array(repeating: .urlError(.timedOut), count: 3)))
            .send(request())
        #expect(budget.tokens(for: host) == 500 - 4 * 14)

        _ = try? await session(budget, ScriptedTransport([.status(429), .status(429), .status(429)])).send(request())
        #expect(budget.tokens(for: host) == 500 - 4 * 14 - 2 * 5)
    }

    @Test func aSuccessGivesBackItsLastRetrysCostOrOneWithoutARetry() async throws {
        let budget = RetryBudget(configuration: .awsRetries2026)
        _ = try? await session(budget, ScriptedTransport(Array(repeating: .status(503), count: 3))).send(request())
        #expect(budget.tokens(for: host) == 472)

        _ = try await session(budget, ScriptedTransport([.status(429), .status(503), .status(200)])).send(request())
        // 5 and 14 taken, the last retry's 14 given back.
        #expect(budget.tokens(for: host) == 472 - 5)

        _ = try await session(budget, ScriptedTransport([.status(200)])).send(request())
        #expect(budget.tokens(for: host) == 472 - 5 + 1)
    }

    @Test func thirtyFiveRetriesAfter503sEmptyAHostsBucket() async {
        let budget = RetryBudget(configuration: .awsRetries2026)
        let transport = ScriptedTransport { _, _ in .status(503) }

        // 17 requests retry twice each (476 tokens), the 18th once (14 more): 10 tokens cannot pay for a 36th.
        for _ in 0..<19 { _ = try? await session(budget, transport).send(request()) }

        #expect(transport.requestCount == 17 * 3 + 2 + 1)
        #expect(budget.tokens(for: host) == 10)
    }

    @Test func tokensTooFewForAnyOtherRetryStillPayForAThrottledOne() async throws {
        let budget = RetryBudget(
            configuration: .init(initialTokens: 10, retryCost: 14, timeoutRetryCost: 14, throttlingRetryCost: 5))
        let failing = ScriptedTransport([.status(503), .status(200)])

        let error = await #expect(throws: ReboundError.self) { try await session(budget, failing).send(request()) }
        guard case .retryAborted(let exhausted as RetryBudgetExhausted, .unacceptableStatusCode(503)) = error?.reason
        else {
            Issue.record("reason: \(String(describing: error?.reason))")
            return
        }
        #expect(exhausted.retryCost == 14)
        #expect(failing.requestCount == 1)

        let throttled = ScriptedTransport([.status(429), .status(429), .status(200)])
        _ = try await session(budget, throttled).send(request())
        #expect(throttled.requestCount == 3)
        #expect(budget.tokens(for: host) == 10 - 5 - 5 + 5)
    }

    @Test func aThrottlingCostOfItsOwnIsCheckedAndDefaultsToTheRetryCost() throws {
        #expect(RetryBudget.Configuration(retryCost: 7).throttlingRetryCost == 7)
        #expect(RetryBudget.Configuration(retryCost: 7, throttlingRetryCost: 2).throttlingRetryCost == 2)
        let error = #expect(throws: ConfigurationError.self) {
            try RetryBudget.Configuration.validated(throttlingRetryCost: 0)
        }
        #expect(error?.field == "RetryBudget.Configuration.throttlingRetryCost")
        #expect(error?.message == "RetryBudget.Configuration.throttlingRetryCost must be at least 1, got 0")
    }

    @Test func atMostThreeAttempts() async {
        let transport = ScriptedTransport { _, _ in .status(503) }
        _ = try? await session(RetryBudget(), transport).send(request())

        #expect(transport.requestCount == 3)
    }

    @Test func a429IsRetriedWithoutRetryAfterWhereRetryPolicysDefaultsWouldNot() async {
        #expect(await decision(.awsRetries2026(using: .seeded(1)), status: 429).retryRequired)
        #expect(await decision(RetryPolicy(), status: 429).retryRequired == false)
    }

    /// 2,000 draws of the delay before retry `retryCount + 1`.
    private func draws(_ strategy: BackoffStrategy?, retryCount: Int) throws -> [Duration] {
        let strategy = try #require(strategy)
        return (0..<2_000).map { _ in strategy.delay(forRetryCount: retryCount) }
    }

    @Test(arguments: [
        (0, Duration.milliseconds(50), Duration.seconds(1)),
        (1, .milliseconds(100), .seconds(2)),
        (4, .milliseconds(800), .seconds(16)),
        (5, .milliseconds(1_600), .seconds(20)),
        (12, .seconds(20), .seconds(20)),
    ])
    func delaysAreDrawnUnderBaseTimesTwoToTheNCappedAt20Seconds(
        retryCount: Int, transient: Duration, throttling: Duration
    ) throws {
        let policy = RetryPolicy.awsRetries2026(using: .seeded(42))
        for (draws, bound) in [
            (try draws(policy.backoff, retryCount: retryCount), transient),
            (try draws(policy.throttlingBackoff, retryCount: retryCount), throttling),
        ] {
            #expect(draws.allSatisfy { $0 >= .zero && $0 < bound })
            // Uniform under the bound: the cap comes before the jitter, so no delay sits on it.
            #expect(draws.max()! > bound * 0.99)
            #expect(draws.min()! < bound * 0.01)
            let mean = draws.reduce(Duration.zero, +) / draws.count
            #expect(mean > bound * 0.45 && mean < bound * 0.55)
        }
    }

    @Test func theRetryAfterA429WaitsOnTheOneSecondBaseAndAfterA503OnThe50MillisecondOne() async {
        let policy = RetryPolicy.awsRetries2026(using: .seeded(9))
        var throttled: [Duration] = []
        var failed: [Duration] = []
        for _ in 0..<200 {
            throttled.append(await decision(policy, status: 429, retryCount: 1).delay!)
            failed.append(await decision(policy, status: 503, retryCount: 1).delay!)
        }

        #expect(failed.allSatisfy { $0 < .milliseconds(100) })
        #expect(throttled.allSatisfy { $0 < .seconds(2) })
        #expect(throttled.max()! > .seconds(1))
    }

    @Test(arguments: [
        ("0", Duration.zero, "the backoff's delay"),
        ("1", .seconds(1), "the header's"),
        ("10", .seconds(5), "the backoff's delay and 5 s"),
    ])
    func theServersHintIsHeldBetweenTheBackoffAndFiveSecondsMore(
        header: String, expected: Duration, _ comment: String
    ) async throws {
        // The same seed draws the same first delay: the policy's backoff for retry 1.
        let backoff = BackoffStrategy.exponential(a: .milliseconds(50), b: 2).max(.seconds(20))
            .fullJitter(using: .seeded(5)).delay(forRetryCount: 0)
        let policy = RetryPolicy.awsRetries2026(using: .seeded(5))

        let delay = try #require(await decision(policy, status: 503, headers: ["Retry-After": header]).delay)

        #expect(backoff > .zero && backoff < .milliseconds(50))
        let wanted = header == "1" ? expected : expected + backoff
        #expect(delay == wanted, "\(comment)")
    }

    @Test func retryAftersBoundsAroundABackoffAreWhatTheDocumentationSays() throws {
        let bounded = RetryAfter(maximumOverBackoff: .seconds(5))
        func head(_ value: String) -> ResponseHead {
            ResponseHead(url: exampleURL, statusCode: 503, headerFields: [("Retry-After", value)])
        }

        #expect(bounded.delay(for: head("0"), backoff: .milliseconds(50)) == .milliseconds(50))
        #expect(bounded.delay(for: head("1"), backoff: .milliseconds(50)) == .seconds(1))
        #expect(bounded.delay(for: head("10"), backoff: .milliseconds(50)) == .milliseconds(5_050))
        #expect(bounded.delay(for: head("soon"), backoff: .milliseconds(50)) == nil)
        // Without bounds, the header's delay as it is, whatever the backoff.
        #expect(RetryAfter.default.delay(for: head("10"), backoff: .milliseconds(50)) == .seconds(10))
        #expect(RetryAfter.default.delay(for: head("0"), backoff: .seconds(3)) == .zero)
        let error = #expect(throws: ConfigurationError.self) {
            try RetryAfter.validated(maximumOverBackoff: .seconds(-1))
        }
        #expect(error?.field == "RetryAfter.maximumOverBackoff")
    }

    @Test func aThrottlingBackoffOfItsOwnAppliesAfterA429Only() async {
        let policy = RetryPolicy(backoff: .constant(.milliseconds(10)), throttlingBackoff: .constant(.seconds(3)))

        #expect(await decision(policy, status: 503).delay == .milliseconds(10))
        #expect(await decision(policy, status: 429, headers: ["Retry-After": "1"]).delay == .seconds(1))
        let throttlingOnly = RetryPolicy(retryableHTTPStatusCodes: [429], throttlingBackoff: .constant(.seconds(3)))
        #expect(await decision(throttlingOnly, status: 429).delay == .seconds(3))
    }
}
