import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("CircuitBreaker.Configuration")
struct CircuitBreakerConfigurationTests {
    @Test func defaultsAreFiveFailuresAShortGrowingJitteredBreakAndOneTrial() {
        let configuration = CircuitBreaker.Configuration.default
        #expect(configuration.tripCondition == .consecutiveFailures(5))
        #expect(configuration.openDuration == .milliseconds(500))
        #expect(configuration.halfOpenTrialCalls == 1)
        #expect(configuration.trialSuccessesToClose == 1)
        #expect(configuration.trialTimeout == .seconds(30))
        #expect(configuration.slowCallRule == nil)
        // Between half and all of 0.5 s for the first eleven openings, then doubling up to 10 s.
        let breaks = CircuitBreaker.Configuration.defaultBreakDuration(using: .seeded(7))
        for opening in 0...10 {
            let open = breaks.delay(forRetryCount: opening)
            #expect(open >= .milliseconds(250) && open <= .milliseconds(500), "opening \(opening): \(open)")
        }
        let upper = [11: 1.0, 12: 2.0, 13: 4.0, 14: 8.0, 15: 10.0, 40: 10.0]
        for (opening, seconds) in upper {
            let open = breaks.delay(forRetryCount: opening)
            #expect(open >= .seconds(seconds / 2) && open <= .seconds(seconds + 0.001), "opening \(opening): \(open)")
        }
    }

    @Test(arguments: [
        (
            CircuitBreaker.TripCondition.consecutiveFailures(0), Duration.seconds(30), 1,
            "CircuitBreaker.Configuration.tripCondition", "must count at least 1 consecutive failure, got 0"
        ),
        (
            .failureRate(1.5, window: .count(10), minimumCalls: 1), .seconds(30), 1,
            "CircuitBreaker.Configuration.tripCondition", "must have a failure rate above 0 and at most 1, got 1.5"
        ),
        (
            .failureRate(0.5, window: .count(0), minimumCalls: 1), .seconds(30), 1,
            "CircuitBreaker.Configuration.tripCondition", "must have a count window of 1 to 100000 calls, got 0"
        ),
        (
            .failureRate(0.5, window: .time(.zero), minimumCalls: 1), .seconds(30), 1,
            "CircuitBreaker.Configuration.tripCondition", "must have a time window longer than zero, got 0.0 seconds"
        ),
        (
            .failureRate(0.5, window: .count(10), minimumCalls: 0), .seconds(30), 1,
            "CircuitBreaker.Configuration.tripCondition", "must have a minimum of at least 1 call, got 0"
        ),
        (
            .consecutiveFailures(5), .zero, 1,
            "CircuitBreaker.Configuration.openDuration", "must be longer than zero, got 0.0 seconds"
        ),
        (
            .consecutiveFailures(5), .seconds(30), 0,
            "CircuitBreaker.Configuration.halfOpenTrialCalls", "must be at least 1, got 0"
        ),
    ])
    func validatedRejectsAnInvalidSettingNamingIt(
        trip: CircuitBreaker.TripCondition, open: Duration, trials: Int, field: String, problem: String
    ) {
        let error = #expect(throws: ConfigurationError.self) {
            try CircuitBreaker.Configuration.validated(
                tripCondition: trip, openDuration: open, halfOpenTrialCalls: trials)
        }

        #expect(error?.field == field)
        #expect(error?.message == "\(field) \(problem)")
    }

    @Test(arguments: [
        (
            1, CircuitBreaker.SlowCallRule(threshold: .zero),
            "CircuitBreaker.Configuration.slowCallRule", "must have a threshold longer than zero, got 0.0 seconds"
        ),
        (
            1, .init(threshold: .seconds(1), rate: 0),
            "CircuitBreaker.Configuration.slowCallRule", "must have a slow-call rate above 0 and at most 1, got 0.0"
        ),
        (
            1, .init(threshold: .seconds(1), window: .count(100_001)),
            "CircuitBreaker.Configuration.slowCallRule", "must have a count window of 1 to 100000 calls, got 100001"
        ),
        (
            1, .init(threshold: .seconds(1), window: .time(.zero)),
            "CircuitBreaker.Configuration.slowCallRule", "must have a time window longer than zero, got 0.0 seconds"
        ),
        (
            1, .init(threshold: .seconds(1), minimumCalls: 0),
            "CircuitBreaker.Configuration.slowCallRule", "must have a minimum of at least 1 call, got 0"
        ),
        (
            0, .init(threshold: .seconds(1)),
            "CircuitBreaker.Configuration.trialSuccessesToClose", "must be at least 1, got 0"
        ),
    ])
    func validatedRejectsAnInvalidClosingOrSlowCallSetting(
        successes: Int, rule: CircuitBreaker.SlowCallRule, field: String, problem: String
    ) {
        let error = #expect(throws: ConfigurationError.self) {
            try CircuitBreaker.Configuration.validated(trialSuccessesToClose: successes, slowCallRule: rule)
        }

        #expect(error?.field == field)
        #expect(error?.message == "\(field) \(problem)")
    }

    @Test func aSlowCallRulesDefaultsAreResilience4js() {
        let rule = CircuitBreaker.SlowCallRule(threshold: .seconds(2))
        #expect(rule.rate == 1)
        #expect(rule.window == .count(100))
        #expect(rule.minimumCalls == 100)
    }

    @Test func anInvalidTrialSuccessCountWrittenInCodeTrapsNamingIt() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = CircuitBreaker.Configuration(trialSuccessesToClose: 0)
        }

        expectStandardError(
            of: result, contains: "CircuitBreaker.Configuration.trialSuccessesToClose must be at least 1, got 0")
    }

    @Test func anInvalidSlowCallRuleWrittenInCodeTrapsNamingIt() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = CircuitBreaker.Configuration(openDuration: .seconds(1), slowCallRule: .init(threshold: .seconds(-1)))
        }

        let message = "CircuitBreaker.Configuration.slowCallRule must have a threshold longer than zero"
        expectStandardError(of: result, contains: "\(message), got -1.0 seconds")
    }

    @Test func theFirstInvalidSettingInTheParametersOrderIsNamed() {
        let error = #expect(throws: ConfigurationError.self) {
            try CircuitBreaker.Configuration.validated(
                openDuration: .seconds(1), trialTimeout: .zero, slowCallRule: .init(threshold: .zero))
        }
        #expect(error?.field == "CircuitBreaker.Configuration.trialTimeout")
    }

    @Test func aBreakThatNeverOpensOrATrialThatNeverExpiresIsRejected() {
        let never = #expect(throws: ConfigurationError.self) {
            try CircuitBreaker.Configuration.validated(breakDuration: .zero)
        }
        #expect(
            never?.message
                == "CircuitBreaker.Configuration.breakDuration must open for longer than zero the first time, got 0.0 seconds"
        )
        let timeout = #expect(throws: ConfigurationError.self) {
            try CircuitBreaker.Configuration.validated(trialTimeout: .zero)
        }
        #expect(
            timeout?.message == "CircuitBreaker.Configuration.trialTimeout must be longer than zero, got 0.0 seconds")
    }

    @Test func validatedReturnsTheConfigurationTheInitializerWould() throws {
        let configuration = try CircuitBreaker.Configuration.validated(
            tripCondition: .failureRate(0.5, window: .time(.seconds(10)), minimumCalls: 4), openDuration: .seconds(5),
            halfOpenTrialCalls: 2, trialSuccessesToClose: 3,
            slowCallRule: .init(threshold: .seconds(2), rate: 0.5, window: .time(.seconds(60)), minimumCalls: 10),
            retryAfter: .ignored)

        #expect(configuration.tripCondition == .failureRate(0.5, window: .time(.seconds(10)), minimumCalls: 4))
        #expect(configuration.openDuration == .seconds(5))
        #expect(configuration.halfOpenTrialCalls == 2)
        #expect(configuration.trialSuccessesToClose == 3)
        #expect(
            configuration.slowCallRule
                == .init(threshold: .seconds(2), rate: 0.5, window: .time(.seconds(60)), minimumCalls: 10))
        #expect(configuration.retryAfter == .ignored)
    }

    @Test func anInvalidSettingWrittenInCodeTrapsNamingIt() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = CircuitBreaker.Configuration(openDuration: .zero)
        }

        expectStandardError(
            of: result, contains: "CircuitBreaker.Configuration.openDuration must be longer than zero, got 0.0 seconds")
    }

    @Test func theDefaultClassifyIsTheDefaultVerdict() {
        func response(_ status: Int) -> HTTPURLResponse? {
            HTTPURLResponse(
                url: URL(string: "https://example.com/a")!, statusCode: status, httpVersion: nil, headerFields: nil)
        }
        let request = URLRequest(url: URL(string: "https://example.com/a")!)
        let outcomes = [
            AttemptOutcome(
                originalRequest: request,
                attempt: Attempt(number: 1, request: request, response: response(503), failure: nil, duration: .zero),
                decision: .failed),
            AttemptOutcome(
                originalRequest: request,
                attempt: Attempt(number: 1, request: request, response: response(404), failure: nil, duration: .zero),
                decision: .failed),
            AttemptOutcome(
                originalRequest: request,
                attempt: Attempt(
                    number: 1, request: request, response: nil,
                    failure: .transportFailed(error: URLError(.timedOut)), duration: .zero),
                decision: .failed),
            AttemptOutcome(
                originalRequest: request,
                attempt: Attempt(
                    number: 1, request: nil, response: nil, failure: .adaptationFailed(error: URLError(.unknown)),
                    duration: .zero),
                decision: .failed),
        ]
        let verdicts = outcomes.map(CircuitBreaker.Configuration.default.classify)
        #expect(verdicts == [.failure, .success, .failure, .ignored])
        #expect(verdicts == outcomes.map(CircuitBreaker.Configuration().classify))
        #expect(verdicts == outcomes.map(CircuitBreaker.defaultVerdict(for:)))
    }

    /// A `classify` of the caller's own is given the whole outcome, on both paths where a breaker counts an attempt:
    /// a success settled after the attempt, and a failure counted when its retry is asked for.
    @Test func aClassifyOfItsOwnIsGivenTheWholeOutcome() async throws {
        let seen = Locked<[(label: String?, decision: AttemptDecision, status: Int?, original: URL?)]>([])
        let configuration = CircuitBreaker.Configuration(
            tripCondition: .consecutiveFailures(3),
            classify: { outcome in
                seen.withLock {
                    $0.append((outcome.label, outcome.decision, outcome.statusCode, outcome.originalRequest.url))
                }
                // A 200 labelled "poisoned" counts as a failure; everything else as by default.
                return outcome.label == "poisoned" ? .failure : CircuitBreaker.defaultVerdict(for: outcome)
            })
        let breaker = CircuitBreaker(configuration: configuration, clock: ManualClock())
        let statuses = Locked([503, 200, 200, 200, 200])
        let transport = ScriptedTransport { _, _ in .status(statuses.withLock { $0.removeFirst() }) }
        let session = Session(
            transport: transport, adapters: [breaker], retriers: [RetryPolicy(backoff: .zero)], clock: ManualClock())
        let url = URL(string: "https://example.com/a")!

        _ = try await session.send(url, label: "first")
        for _ in 0..<3 {
            #expect(breaker.state == .closed)
            _ = try await session.send(url, label: "poisoned")
        }

        let calls = seen.withLock { $0 }
        // Each attempt once: the 503 when its retry was asked for, each 200 when it was settled.
        #expect(calls.map(\.status) == [503, 200, 200, 200, 200])
        #expect(calls.map(\.label) == ["first", "first", "poisoned", "poisoned", "poisoned"])
        #expect(calls.map(\.decision) == [.retry(after: .zero), .succeeded, .succeeded, .succeeded, .succeeded])
        #expect(calls.allSatisfy { $0.original == url })
        // Three poisoned successes in a row.
        #expect(breaker.state == .open)
    }
}
