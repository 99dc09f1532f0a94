import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// 1994-11-06 08:49:37 GMT, the RFC's example date.
private let example = Date(timeIntervalSince1970: 784_111_777)

private func response(_ status: Int, _ headers: [String: String]) -> HTTPURLResponse {
    HTTPURLResponse(url: exampleURL, statusCode: status, httpVersion: "HTTP/1.1", headerFields: headers)!
}

@Suite("RetryAfter", .timeLimit(.minutes(5)))
struct RetryAfterTests {
    @Test(arguments: [
        ("120", Duration.seconds(120)), ("0", .zero), (" 7 ", .seconds(7)),
        ("Sun, 06 Nov 1994 08:50:07 GMT", .seconds(30)),
        ("Sunday, 06-Nov-94 08:50:07 GMT", .seconds(30)),
        ("Sun Nov  6 08:50:07 1994", .seconds(30)),
        ("Sun Nov 6 08:49:47 1994", .seconds(10)),
        ("Sat, 05 Nov 1994 08:49:37 GMT", .zero),
        ("Sun, 06 Nov 1994 08:49:37 GMT", .zero),
        ("99999999999999999999999", RetryResult.longestDelay),
    ])
    func parsesSecondsAndAllThreeDateFormats(value: String, expected: Duration) {
        #expect(RetryAfter.delay(from: value, now: example) == expected)
    }

    @Test(arguments: [
        "", "-5", "1.5", "soon", "12s", "Sun, 06 Nov 1994 08:49:37", "Sun, 06 Nov 1994 08:49:37 PST",
        "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 31 Feb 1994 08:49:37 GMT", "Sun, 06 Nov 1994 25:49:37 GMT",
        "Sun, 06 Foo 1994 08:49:37 GMT", "Sunday, 06-Nov-1994 08:49:37 GMT", "Sun Nov 06 08:49 1994",
        "Sun, 06 Nov 1994 08:49:37 GMT extra",
    ])
    func ignoresMalformedValues(value: String) {
        #expect(RetryAfter.delay(from: value, now: example) == nil)
    }

    @Test func aTwoDigitYearMoreThanFiftyYearsAheadIsInThePastCentury() throws {
        let now = try #require(RetryAfter.date(from: "Sun, 06 Nov 2050 00:00:00 GMT"))
        // 99 → 2099 would be 49 years ahead: kept. From 2040, 99 → 2099 is 59 years ahead: 1999, in the past.
        #expect(RetryAfter.delay(from: "Friday, 06-Nov-99 00:00:00 GMT", now: now)! > .seconds(86_400 * 365 * 40))
        let earlier = try #require(RetryAfter.date(from: "Tue, 06 Nov 2040 00:00:00 GMT"))
        #expect(RetryAfter.delay(from: "Friday, 06-Nov-99 00:00:00 GMT", now: earlier) == .zero)
    }

    @Test func honoursOnlyItsStatusesMeasuresFromTheDateHeaderAndClamps() throws {
        let date = "Sun, 06 Nov 1994 08:49:37 GMT"
        #expect(RetryAfter.default.delay(for: response(503, ["Retry-After": "10"])) == .seconds(10))
        #expect(RetryAfter.default.delay(for: response(429, ["Retry-After": "10"])) == .seconds(10))
        #expect(RetryAfter.default.delay(for: response(500, ["Retry-After": "10"])) == nil)
        #expect(RetryAfter.default.delay(for: response(503, [:])) == nil)
        #expect(RetryAfter.default.delay(for: response(503, ["Retry-After": "3600"])) == .seconds(60))
        #expect(
            RetryAfter.default.delay(
                for: response(503, ["Retry-After": "Sun, 06 Nov 1994 08:50:00 GMT", "Date": date])) == .seconds(23))
        #expect(RetryAfter.ignored.delay(for: response(503, ["Retry-After": "10"])) == nil)
        let custom = RetryAfter(statusCodes: [500], maximumDelay: .seconds(5))
        #expect(custom.delay(for: response(500, ["Retry-After": "10"])) == .seconds(5))
    }

    // MARK: - Configuration

    @Test func validatedRejectsANegativeMaximumDelayNamingIt() {
        let error = #expect(throws: ConfigurationError.self) { try RetryAfter.validated(maximumDelay: .seconds(-1)) }

        #expect(error?.field == "RetryAfter.maximumDelay")
        #expect(error?.message == "RetryAfter.maximumDelay must be 0 or more, got -1.0 seconds")
    }

    @Test func validatedReturnsTheConfigurationTheInitializerWould() throws {
        let validated = try RetryAfter.validated(statusCodes: [500], maximumDelay: .zero)

        #expect(validated == RetryAfter(statusCodes: [500], maximumDelay: .zero))
        #expect(try RetryAfter.validated() == .default)
    }

    @Test func aNegativeMaximumDelayWrittenInCodeTrapsNamingIt() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = RetryAfter(maximumDelay: .seconds(-1))
        }

        expectStandardError(of: result, contains: "RetryAfter.maximumDelay must be 0 or more, got -1.0 seconds")
    }

    // MARK: - In RetryPolicy and CircuitBreaker

    @Test func retryPolicyWaitsWhatRetryAfterSaysAndRetriesA429ThatCarriesOne() async throws {
        let clock = FastForwardClock()
        let transport = ScriptedTransport([
            .response(status: 503, headers: ["Retry-After": "7"]),
            .response(status: 429, headers: ["Retry-After": "120"]),
            .status(200),
        ])
        let session = Session(transport: transport, retriers: [RetryPolicy()], clock: clock)

        _ = try await session.send(request())

        #expect(clock.sleeps == [.seconds(7), .seconds(60)])
    }

    @Test func a429WithoutRetryAfterOrARetryAfterPolicyThatIgnoresItIsNotRetried() async throws {
        let plain = Session(
            transport: ScriptedTransport([.status(429), .status(200)]), retriers: [RetryPolicy()],
            clock: FastForwardClock())
        await #expect(throws: ReboundError.self) { try await plain.send(request()) }

        let clock = FastForwardClock()
        let ignoring = Session(
            transport: ScriptedTransport([.response(status: 503, headers: ["Retry-After": "30"]), .status(200)]),
            retriers: [RetryPolicy(retryAfter: .ignored)], clock: clock)
        _ = try await ignoring.send(request())
        #expect(clock.sleeps == [.milliseconds(500)])
    }

    @Test func theBreakerStaysOpenAtLeastAsLongAsRetryAfterSays() async throws {
        let clock = ManualClock()
        let breaker = CircuitBreaker(
            configuration: .init(tripCondition: .consecutiveFailures(1), openDuration: .seconds(10)), clock: clock)
        let session = Session(
            transport: ScriptedTransport { _, _ in .response(status: 503, headers: ["Retry-After": "45"]) },
            adapters: [breaker], clock: clock)

        _ = try? await session.send(request())
        clock.advance(by: .seconds(30))

        #expect(breaker.state == .open)
        clock.advance(by: .seconds(15))
        #expect(breaker.state == .halfOpen)
    }
}
