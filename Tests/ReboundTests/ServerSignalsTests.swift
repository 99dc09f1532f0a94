import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A response head with `status` and `fields`.
private func head(_ status: Int, _ fields: [String: String]) -> ResponseHead {
    ResponseHead(url: exampleURL, statusCode: status, headerFields: fields.map { ($0.key, $0.value) })
}

/// Asks `policy` about a request of `method` whose attempts each got `status` with `fields`, the last one retried
/// `retryCount` times: its answer, and whether it says it retries such a failure.
private func decision(
    _ policy: RetryPolicy, method: HTTPMethod = .get, status: Int, fields: [String: String], retryCount: Int = 0
) async -> (answer: RetryResult, shouldRetry: Bool) {
    let (retryRequest, error) = question(method: method, status: status, fields: fields, retryCount: retryCount)
    return (await policy.retry(retryRequest, dueTo: error), policy.shouldRetry(retryRequest, dueTo: error))
}

/// The preset on `transport` and `clock`, with `deadline`.
private func preset(_ transport: ScriptedTransport, _ clock: ManualClock, deadline: Duration? = .seconds(30)) -> Session
{
    Session(
        transport: transport, resilience: Resilience(clock: clock, random: .seeded(1), deadline: deadline), clock: clock
    )
}

/// `retry-after-ms` and `x-should-retry`: read when a `RetryAfter`'s signals say so, malformed values are no signal.
@Suite("Server retry signals", .timeLimit(.minutes(5)))
struct ServerSignalsTests {
    @Test(arguments: [
        ("1500", Duration.milliseconds(1_500)), ("0", .zero), (" 250 ", .milliseconds(250)),
        ("0.5", .microseconds(500)), ("1500.25", .microseconds(1_500_250)),
        ("99999999999999999999999", RetryResult.longestDelay),
    ])
    func readsMilliseconds(value: String, expected: Duration) {
        #expect(RetryAfter.delay(fromMilliseconds: value) == expected)
    }

    @Test(arguments: [
        "", " ", "-1", "+5", "1e3", "1.", ".5", "1.2.3", "soon", "12ms", "0x10", "1,5", "١٢", "inf", "nan",
        String(repeating: "9", count: 65),
    ])
    func aMalformedMillisecondValueIsNoSignal(value: String) {
        #expect(RetryAfter.delay(fromMilliseconds: value) == nil)
    }

    @Test func millisecondsAreReadFirstOnlyWhenAskedForOnTheSameStatusesAndHeldAtTheSameMaximum() {
        let reading = RetryAfter(signals: .retryAfterMs)
        let both = head(503, ["retry-after-ms": "1500", "Retry-After": "10"])
        #expect(reading.delay(for: both) == .milliseconds(1_500))
        #expect(RetryAfter.default.delay(for: both) == .seconds(10))
        #expect(reading.delay(for: head(503, ["Retry-After-MS": "250"])) == .milliseconds(250))
        #expect(RetryAfter.default.delay(for: head(503, ["retry-after-ms": "250"])) == nil)
        // A malformed value is no signal: the `Retry-After` beside it is read.
        #expect(reading.delay(for: head(429, ["retry-after-ms": "soon", "Retry-After": "3"])) == .seconds(3))
        #expect(reading.delay(for: head(503, ["retry-after-ms": "3600000"])) == .seconds(60))
        #expect(reading.delay(for: head(500, ["retry-after-ms": "250"])) == nil)
        #expect(RetryAfter(signals: .shouldRetry).delay(for: head(503, ["retry-after-ms": "250"])) == nil)
    }

    @Test(
        arguments: [
            ("true", true), ("false", false), ("TRUE", true), (" False ", false), ("yes", nil), ("1", nil),
            ("true, false", nil), ("", nil), ("truefalse", nil), ("true" + String(repeating: " ", count: 13), nil),
        ] as [(String, Bool?)])
    func readsShouldRetryOnAnyStatus(value: String, expected: Bool?) {
        for status in [200, 400, 503] {
            #expect(
                RetryAfter(signals: .shouldRetry).retryAsked(by: head(status, ["x-should-retry": value])) == expected)
            #expect(RetryAfter(signals: .all).retryAsked(by: head(status, ["X-Should-Retry": value])) == expected)
        }
        #expect(RetryAfter.default.retryAsked(by: head(503, ["x-should-retry": value])) == nil)
        #expect(RetryAfter(signals: .retryAfterMs).retryAsked(by: head(503, ["x-should-retry": value])) == nil)
    }

    @Test func aValidatedConfigurationKeepsItsSignals() throws {
        #expect(try RetryAfter.validated(signals: .all).signals == .all)
        #expect(RetryAfter().signals.isEmpty)
        #expect(RetryAfter.default.signals.isEmpty && RetryAfter.ignored.signals.isEmpty)
    }
}

/// What `RetryPolicy` makes of `x-should-retry`.
extension ServerSignalsTests {
    static let reading = RetryPolicy(retryAfter: RetryAfter(signals: .shouldRetry))

    @Test func falseIsNeverRetriedAndSaysWhy() async {
        let stopped = await decision(Self.reading, status: 503, fields: ["x-should-retry": "false"])
        guard case .doNotRetryBecause(.serverAskedNoRetry) = stopped.answer else {
            Issue.record("\(stopped.answer)")
            return
        }
        #expect(!stopped.shouldRetry)
        // With `Retry-After` too: the server asked for no retry at all.
        let withDelay = await decision(
            Self.reading, status: 429, fields: ["x-should-retry": "false", "Retry-After": "1"])
        #expect(withDelay.answer.retryRequired == false)
        // A POST was never to be retried: not retried, by the method's rule.
        let post = await decision(Self.reading, method: .post, status: 503, fields: ["x-should-retry": "false"])
        guard case .doNotRetry = post.answer else {
            Issue.record("\(post.answer)")
            return
        }
    }

    @Test func trueIsRetriedWhateverTheStatusWithinTheMethodsAndTheLimit() async {
        let retried = await decision(Self.reading, status: 400, fields: ["x-should-retry": "true"])
        #expect(retried.answer.delay == .milliseconds(500))
        #expect(retried.shouldRetry)
        let post = await decision(Self.reading, method: .post, status: 400, fields: ["x-should-retry": "true"])
        #expect(post.answer.retryRequired == false && !post.shouldRetry)
        let spent = await decision(Self.reading, status: 400, fields: ["x-should-retry": "true"], retryCount: 2)
        guard case .doNotRetryBecause(.retryLimit) = spent.answer else {
            Issue.record("\(spent.answer)")
            return
        }
    }

    @Test func trueOvercomesTheRepeatedFailureStop() async {
        let policy = RetryPolicy(retryAfter: RetryAfter(signals: .shouldRetry), stopsAfterRepeatedFailure: true)
        let asked = await decision(policy, status: 503, fields: ["x-should-retry": "true"], retryCount: 1)
        #expect(asked.answer.retryRequired)
        let silent = await decision(policy, status: 503, fields: [:], retryCount: 1)
        guard case .doNotRetryBecause(.repeatedFailure) = silent.answer else {
            Issue.record("\(silent.answer)")
            return
        }
    }

    @Test func aPolicyThatDoesNotReadTheSignalIgnoresIt() async {
        #expect(await decision(RetryPolicy(), status: 503, fields: ["x-should-retry": "false"]).answer.retryRequired)
        #expect(
            await decision(RetryPolicy(), status: 400, fields: ["x-should-retry": "true"]).answer.retryRequired == false
        )
        let aws = RetryPolicy.awsRetries2026(using: .seeded(1))
        #expect(await decision(aws, status: 503, fields: ["x-should-retry": "false"]).answer.retryRequired)
    }
}

/// The signals through a session: the preset reads both, `RetryPolicy()` neither.
extension ServerSignalsTests {
    @Test func thePresetStopsAtFalseAndNamesTheRule() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport(
            [.response(status: 503, headers: ["x-should-retry": "false"]), .status(200)], clock: clock)
        let observer = RecordingObserver()
        let session = Session(
            transport: transport, resilience: Resilience(clock: clock, random: .seeded(1)), observers: [observer],
            clock: clock)

        let error = try await #require(throws: ReboundError.self) { try await session.send(request()) }

        #expect(transport.requestCount == 1)
        #expect(error.stopReason == .serverAskedNoRetry)
        #expect(observer.requestOutcomes.map(\.stopReason) == [.serverAskedNoRetry])
        #expect(
            error.description
                == "GET https://api.example.com/items: attempt 1 failed with status 503; "
                + "not retried: the server asked for no retry (1 attempt)")
    }

    @Test func thePresetRetriesTrueOnAStatusItWouldNotRetry() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport(
            [.response(status: 409, headers: ["x-should-retry": "true"]), .status(200)], clock: clock)
        let session = preset(transport, clock, deadline: nil)

        let task = Task { try await session.send(request()) }
        try await clock.waitForSleepers(1)
        clock.advance(by: .seconds(1))
        let response = try await task.value

        #expect(response.statusCode == 200)
        #expect(transport.requestCount == 2)
    }

    @Test func aPolicyThatDoesNotReadTheSignalRetriesFalse() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport(
            [.response(status: 503, headers: ["x-should-retry": "false"]), .status(200)], clock: clock)
        let session = Session(transport: transport, retriers: [RetryPolicy()], clock: clock)

        let task = Task { try await session.send(request()) }
        try await waitForSleep(of: .milliseconds(500), on: clock)
        clock.advance(by: .milliseconds(500))

        #expect(try await task.value.statusCode == 200)
    }

    @Test func thePresetWaitsTheMillisecondsAsked() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport(
            [.response(status: 503, headers: ["retry-after-ms": "1500", "Retry-After": "2"]), .status(200)],
            clock: clock)
        let session = preset(transport, clock, deadline: nil)

        let task = Task { try await session.send(request()) }
        try await waitForSleep(of: .milliseconds(1_500), on: clock)
        clock.advance(by: .milliseconds(1_500))

        #expect(try await task.value.statusCode == 200)
        #expect(clock.sleeps == [.milliseconds(1_500)])
    }

    @Test(arguments: [true, false])
    func millisecondsPastTheDeadlineEndTheRequestWhenTheChainReadsThem(preset usesPreset: Bool) async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport(
            [.response(status: 503, headers: ["retry-after-ms": "10000"]), .status(200)], clock: clock)
        let deadline = Duration.seconds(2)
        let session =
            usesPreset
            ? preset(transport, clock, deadline: deadline)
            : Session(transport: transport, retriers: [RetryPolicy()], deadline: deadline, clock: clock)

        let task = Task { try await session.send(request()) }
        if usesPreset {
            let error = await #expect(throws: ReboundError.self) { try await task.value }
            #expect(error?.stopReason == .retryAfterPastDeadline)
            #expect(
                error?.description.hasSuffix(
                    "failed with status 503; not retried: the wait asked ends after the deadline of 2 s (1 attempt)")
                    == true)
            #expect(transport.requestCount == 1)
        } else {
            // Not read by this chain: the backoff's 0.5 s, then the retry.
            try await waitForSleep(of: .milliseconds(500), on: clock)
            clock.advance(by: .milliseconds(500))
            #expect(try await task.value.statusCode == 200)
        }
    }

    @Test func aBreakerThatReadsMillisecondsStaysOpenAsLongAsTheyAsk() async throws {
        let clock = ManualClock()
        let breaker = CircuitBreaker(
            configuration: .init(
                tripCondition: .consecutiveFailures(1), openDuration: .seconds(5),
                retryAfter: RetryAfter(signals: .retryAfterMs)),
            clock: clock)
        let transport = ScriptedTransport([.response(status: 503, headers: ["retry-after-ms": "20000"])])
        let session = Session(transport: transport, adapters: [breaker], clock: clock)
        _ = try? await session.send(request())

        let error = try await #require(throws: ReboundError.self) { try await session.send(request()) }

        #expect(error.circuitBreakerOpenError?.retryAfter == .seconds(20))
    }

    @Test func thePresetsBreakersStayOpenAsLongAsTheMillisecondsAsk() async throws {
        let clock = ManualClock()
        // Five failures that ask for 20 s of quiet, and for no retry: the preset's breaker for the host trips.
        let declined = ScriptedTransport.Step.response(
            status: 503, headers: ["retry-after-ms": "20000", "x-should-retry": "false"])
        let transport = ScriptedTransport(Array(repeating: declined, count: 5), clock: clock)
        let session = preset(transport, clock, deadline: nil)
        for _ in 0..<5 { _ = try? await session.send(request()) }

        let error = try await #require(throws: ReboundError.self) { try await session.send(request()) }

        #expect(transport.requestCount == 5)
        #expect(error.circuitBreakerOpenError?.retryAfter == .seconds(20))
    }

    @Test func trueIsStillRefusedByAGateAndByTheDeadline() async throws {
        let clock = ManualClock()
        let asking = ScriptedTransport.Step.response(
            status: 409, headers: ["x-should-retry": "true", "retry-after-ms": "60000"])
        let reading = RetryPolicy(retryAfter: RetryAfter(signals: .all))
        let refusing = Session(
            transport: ScriptedTransport([asking, .status(200)], clock: clock), retriers: [reading],
            gates: [RetryGateRefusingAll()], clock: clock)
        let refused = try await #require(throws: ReboundError.self) { try await refusing.send(request()) }
        #expect(refused.retrierError is RetryGateRefusingAll.Refusal)

        // The 60 s it asks for ends after the deadline: the request ends at once, with no backoff slept (the one sleep
        // is the deadline's timer).
        let late = Session(
            transport: ScriptedTransport([asking, .status(200)], clock: clock), retriers: [reading],
            deadline: .seconds(2), clock: clock)
        let error = try await #require(throws: ReboundError.self) { try await late.send(request()) }
        #expect(error.stopReason == .deadline)
        #expect(clock.sleeps == [.seconds(2)])
    }

    /// Chains whose policy reads `retry-after-ms` inside a part that holds it, or as the request's own.
    enum Holder: String, CaseIterable, Sendable {
        case interceptor, loggingRetrier, requestsOwn
    }

    @Test(arguments: Holder.allCases)
    func theDeadlinesRuleReadsTheMillisecondsThroughThePartsThatHoldThePolicy(holder: Holder) async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport(
            [.response(status: 503, headers: ["retry-after-ms": "10000"]), .status(200)], clock: clock)
        let policy = RetryPolicy(retryAfter: RetryAfter(signals: .retryAfterMs))
        let retriers: [any RequestRetrier] =
            switch holder {
            case .interceptor: [Interceptor(retriers: [policy])]
            case .loggingRetrier: [LoggingRetrier(wrapping: policy, sink: { _ in })]
            case .requestsOwn: []
            }
        let session = Session(transport: transport, retriers: retriers, deadline: .seconds(2), clock: clock)

        let error = try await #require(throws: ReboundError.self) {
            try await session.send(request(), retriers: holder == .requestsOwn ? [policy] : [])
        }

        // Read by the session as the policy reads it: the server's wait, not the retry's, ends past the deadline.
        #expect(error.stopReason == .retryAfterPastDeadline)
        #expect(transport.requestCount == 1)
    }
}

/// A gate that refuses every retry.
private final class RetryGateRefusingAll: RetryGate {
    struct Refusal: Error {}

    func admitRetry(_ request: RetryRequest, dueTo error: ReboundError, after delay: Duration) -> (any Error)? {
        Refusal()
    }
}
