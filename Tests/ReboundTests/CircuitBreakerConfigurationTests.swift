import Rebound
import Testing

@Suite("CircuitBreaker.Configuration")
struct CircuitBreakerConfigurationTests {
    @Test func defaultsAreFiveFailuresThirtySecondsAndOneTrial() {
        let configuration = CircuitBreaker.Configuration.default
        #expect(configuration.tripCondition == .consecutiveFailures(5))
        #expect(configuration.openDuration == .seconds(30))
        #expect(configuration.halfOpenTrialCalls == 1)
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
            "CircuitBreaker.Configuration.tripCondition", "must have a count window of at least 1 call, got 0"
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

    @Test func validatedReturnsTheConfigurationTheInitializerWould() throws {
        let configuration = try CircuitBreaker.Configuration.validated(
            tripCondition: .failureRate(0.5, window: .time(.seconds(10)), minimumCalls: 4), openDuration: .seconds(5),
            halfOpenTrialCalls: 2, retryAfter: .ignored)

        #expect(configuration.tripCondition == .failureRate(0.5, window: .time(.seconds(10)), minimumCalls: 4))
        #expect(configuration.openDuration == .seconds(5))
        #expect(configuration.halfOpenTrialCalls == 2)
        #expect(configuration.retryAfter == .ignored)
    }

    @Test func anInvalidSettingWrittenInCodeTrapsNamingIt() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = CircuitBreaker.Configuration(openDuration: .zero)
        }

        expectStandardError(
            of: result, contains: "CircuitBreaker.Configuration.openDuration must be longer than zero, got 0.0 seconds")
    }
}
