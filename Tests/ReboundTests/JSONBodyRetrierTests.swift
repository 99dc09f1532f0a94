import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("JSONBodyRetrier", .timeLimit(.minutes(5)))
struct JSONBodyRetrierTests {
    let retrier = JSONBodyRetrier(values: ["RATE_LIMITED", "TEMPORARY_ERROR"])

    @Test func retriesA200ThatSaysRateLimitedAfterFiveSecondsThreeTimesThenSaysTheBodyKeptSignalling() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport { _, _ in .response(body: #"{"error_code": "RATE_LIMITED"}"#) }
        let session = Session(transport: transport, adapters: [retrier], clock: clock)

        let task = Task { try await session.send(request()) }
        for sleep in 1...3 {
            try await clock.waitForSleeps(sleep)
            clock.advance(by: .seconds(5))
        }
        let error = await #expect(throws: ReboundError.self) { try await task.value }

        #expect(transport.requestCount == 4)
        #expect(clock.sleeps == [.seconds(5), .seconds(5), .seconds(5)])
        guard case .retryAborted(let persisted as JSONBodyRetrier.SignalPersisted, .validationFailed) = error?.reason
        else {
            Issue.record("reason: \(String(describing: error?.reason))")
            return
        }
        #expect(persisted.retries == 3)
        #expect(persisted.signal.value == "RATE_LIMITED")
        #expect("\(persisted)" == #"the response body kept signalling error_code = "RATE_LIMITED" after 3 retries"#)
        #expect(error?.statusCode == 200)
    }

    @Test func aTemporaryErrorThatClearsEndsWithTheGoodResponse() async throws {
        let transport = ScriptedTransport([
            .response(body: #"{"error_code": "TEMPORARY_ERROR"}"#), .response(body: #"{"items": []}"#),
        ])
        let session = Session(transport: transport, adapters: [retrier], clock: FastForwardClock())

        let response = try await session.send(request())

        #expect(String(decoding: response.data, as: UTF8.self) == #"{"items": []}"#)
        guard case .validationFailed(let signal as JSONBodyRetrier.Signal) = response.attempts[0].failure else {
            Issue.record("first attempt: \(String(describing: response.attempts[0].failure))")
            return
        }
        #expect("\(signal)" == #"the response body signalled error_code = "TEMPORARY_ERROR""#)
    }

    @Test func readsTheBodyOfAnErrorStatusAndLeavesOtherBodiesToTheNextRetrier() async throws {
        let log = Log()
        let transport = ScriptedTransport([
            .response(status: 503, body: #"{"error_code": "TEMPORARY_ERROR"}"#),
            .response(status: 500, body: #"{"error_code": "BUG"}"#), .status(200),
        ])
        let session = Session(
            transport: transport,
            interceptor: Interceptor(adapters: [retrier], retriers: [loggingRetrier("next", log: log, answer: .retry)]),
            clock: FastForwardClock())

        let response = try await session.send(request())

        #expect(response.attempts.map(\.statusCode) == [503, 500, 200])
        #expect(log.all == ["retry next #1"])
        #expect(response.attempts.map(\.retryDelay) == [.seconds(5), .zero, nil])
    }

    @Test(arguments: [
        ("error.code", #"{"error": {"code": 429}}"#, true),
        ("error.code", #"{"error": {"code": 429.0}}"#, true),
        ("error.code", #"{"error": {"code": "429"}}"#, false),
        ("errors.0.code", #"{"errors": [{"code": "RETRY"}]}"#, true),
        ("errors.1.code", #"{"errors": [{"code": "RETRY"}]}"#, false),
        ("error.code", #"{"error": {"c\u006fde": "RETRY"}}"#, true),
        ("error.code", #"{"error_code": "RETRY", "code": "RETRY"}"#, false),
    ])
    func matchesNestedPathsStringsAndNumbers(path: String, body: String, matches: Bool) throws {
        let retrier = JSONBodyRetrier(path: path, values: ["RETRY", 429])
        #expect((retrier.signal(in: Data(body.utf8)) != nil) == matches)
    }

    @Test func aPredicateOverTheDecodedBodyDecides() async throws {
        let retrier = JSONBodyRetrier(retryLimit: 1, delay: .seconds(2)) { body in
            body["status"] == "busy" && (body["retry"]?.numberValue ?? 0) > 0
        }
        let transport = ScriptedTransport([
            .response(body: #"{"status": "busy", "retry": 1}"#), .response(body: #"{"status": "busy", "retry": 0}"#),
        ])
        let session = Session(transport: transport, adapters: [retrier], clock: FastForwardClock())

        let response = try await session.send(request())

        #expect(response.retryCount == 1)
        #expect(response.attempts[0].retryDelay == .seconds(2))
        #expect(retrier.signal(in: Data("{}".utf8)) == nil)
    }

    @Test func canLeaveSuccessfulResponsesAlone() async throws {
        let retrier = JSONBodyRetrier(values: ["RATE_LIMITED"], inspectsSuccessfulResponses: false)
        let session = Session(
            transport: ScriptedTransport([.response(body: #"{"error_code": "RATE_LIMITED"}"#)]), adapters: [retrier],
            clock: FastForwardClock())

        let response = try await session.send(request())

        #expect(response.retryCount == 0)
    }

    @Test(arguments: [
        "", "   ", "not json", #"{"error_code": "RATE_LIMITED""#, #"{"error_code": "RATE_LIMITED"} trailing"#,
        #"["error_code", "RATE_LIMITED"]"#, #"{"error_code": ["RATE_LIMITED"]}"#,
        String(repeating: "[", count: 100) + #"{"error_code": "RATE_LIMITED"}"# + String(repeating: "]", count: 100),
    ])
    func aBodyThatIsNotAMatchingJSONDocumentIsNoMatch(body: String) async throws {
        let session = Session(
            transport: ScriptedTransport([.response(status: 503, body: body)]), adapters: [retrier],
            clock: FastForwardClock())

        let error = await #expect(throws: ReboundError.self) { try await session.send(request()) }

        #expect(error?.attemptCount == 1)
    }

    @Test func aBodyOverTheSizeCapOrNotInUTF8IsNoMatch() throws {
        let match = #"{"error_code": "RATE_LIMITED"}"#
        let padded = #"{"pad": ""# + String(repeating: "x", count: 1 << 20) + #"", "error_code": "RATE_LIMITED"}"#
        #expect(retrier.signal(in: Data(match.utf8)) != nil)
        #expect(retrier.signal(in: Data(padded.utf8)) == nil)
        #expect(
            JSONBodyRetrier(values: ["RATE_LIMITED"], maximumBodySize: 2 << 20).signal(in: Data(padded.utf8)) != nil
        )
        #expect(retrier.signal(in: match.data(using: .utf16)!) == nil)
        #expect(retrier.signal(in: Data([0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D])) == nil)
    }

    // MARK: - Configuration

    @Test(
        arguments: [
            (
                "", ["A"], 3, Duration.seconds(5), 1, 1, "JSONBodyRetrier.path",
                #"must be keys separated by single dots, got """#
            ),
            (
                "a..b", ["A"], 3, .seconds(5), 1, 1, "JSONBodyRetrier.path",
                #"must be keys separated by single dots, got "a..b""#
            ),
            ("a", [], 3, .seconds(5), 1, 1, "JSONBodyRetrier.values", "must hold at least one value to match"),
            ("a", ["A"], -1, .seconds(5), 1, 1, "JSONBodyRetrier.retryLimit", "must be 0 or more, got -1"),
            ("a", ["A"], 3, .seconds(-1), 1, 1, "JSONBodyRetrier.delay", "must be 0 or more, got -1.0 seconds"),
            ("a", ["A"], 3, .seconds(5), 0, 1, "JSONBodyRetrier.maximumBodySize", "must be more than 0 bytes, got 0"),
            ("a", ["A"], 3, .seconds(5), 1, 0, "JSONBodyRetrier.maximumDepth", "must be between 1 and 512, got 0"),
            (
                "a", ["A"], 3, .seconds(5), 1, 11_000, "JSONBodyRetrier.maximumDepth",
                "must be between 1 and 512, got 11000"
            ),
        ] as [(String, Set<JSONValue>, Int, Duration, Int, Int, String, String)])
    func validatedRejectsAnInvalidSettingNamingIt(
        path: String, values: Set<JSONValue>, limit: Int, delay: Duration, size: Int, depth: Int, field: String,
        problem: String
    ) {
        let error = #expect(throws: ConfigurationError.self) {
            try JSONBodyRetrier.validated(
                path: path, values: values, retryLimit: limit, delay: delay, maximumBodySize: size, maximumDepth: depth)
        }

        #expect(error?.field == field)
        #expect(error?.message == "\(field) \(problem)")
    }

    @Test func validatedWithAPredicateChecksTheSameSettings() {
        let error = #expect(throws: ConfigurationError.self) {
            try JSONBodyRetrier.validated(retryLimit: -1) { _ in true }
        }

        #expect(error?.field == "JSONBodyRetrier.retryLimit")
    }

    @Test func validatedReturnsARetrierThatMatchesAsTheInitializersWould() throws {
        let atPath = try JSONBodyRetrier.validated(path: "error.code", values: ["BUSY"], retryLimit: 1)
        let byPredicate = try JSONBodyRetrier.validated(delay: .seconds(2)) { $0["busy"] == true }

        #expect(atPath.path == ["error", "code"])
        #expect(atPath.retryLimit == 1)
        #expect(atPath.signal(in: Data(#"{"error": {"code": "BUSY"}}"#.utf8)) != nil)
        #expect(byPredicate.delay(forRetryCount: 0) == .seconds(2))
        #expect(byPredicate.signal(in: Data(#"{"busy": true}"#.utf8)) != nil)
    }

    @Test func anInvalidPathWrittenInCodeTrapsNamingIt() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = JSONBodyRetrier(path: "a..b", values: ["RETRY"])
        }

        expectStandardError(
            of: result, contains: #"JSONBodyRetrier.path must be keys separated by single dots, got "a..b""#)
    }

    @Test func anInvalidSettingOfAPredicateRetrierWrittenInCodeTrapsNamingIt() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = JSONBodyRetrier(maximumDepth: 0) { _ in true }
        }

        expectStandardError(of: result, contains: "JSONBodyRetrier.maximumDepth must be between 1 and 512, got 0")
    }

    @Test func theStaticFactoryTrapsOnAnInvalidSettingToo() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = [.jsonBody(values: [])] as [any RequestAdapter]
        }

        expectStandardError(of: result, contains: "JSONBodyRetrier.values must hold at least one value to match")
    }
}

@Suite("JSONBodyRetrier backoff", .timeLimit(.minutes(5)))
struct JSONBodyRetrierBackoffTests {
    @Test func takesABackoffStrategyInsteadOfTheConstantDelay() async throws {
        let clock = FastForwardClock()
        let retrier = JSONBodyRetrier(
            values: ["BUSY"], backoff: .exponential(a: .seconds(1), b: 3).max(.seconds(5)))
        let session = Session(
            transport: ScriptedTransport { _, _ in .response(body: #"{"error_code": "BUSY"}"#) }, adapters: [retrier],
            clock: clock)

        _ = try? await session.send(request())

        #expect(clock.sleeps == [.seconds(1), .seconds(3), .seconds(5)])
    }

    @Test func isAskedBeforeTheChainsRetriersSoThatItsOwnDelayWinsForABodyThatMatches() async throws {
        let json = JSONBodyRetrier(values: ["RATE_LIMITED"], delay: .seconds(7))
        let transport = ScriptedTransport([
            .response(status: 503, body: #"{"error_code": "RATE_LIMITED"}"#), .status(503), .status(200),
        ])
        let session = Session(
            transport: transport, adapters: [json], retriers: [RetryPolicy()], clock: FastForwardClock())

        let response = try await session.send(request())

        // The matching 503 waits the retrier's 7 s; the plain one is left to the policy (1 s for its second retry).
        #expect(response.attempts.map(\.retryDelay) == [.seconds(7), .seconds(1), nil])
    }

    @Test func aBodyAsDeepAsTheLargestDepthAllowedMatchesWithoutOverflowingTheStack() async throws {
        let limit = JSONBodyRetrier.maximumDepthLimit
        let retrier = JSONBodyRetrier(path: "x", values: [1], maximumDepth: limit)
        // `limit` levels: the outer object, then arrays down to the innermost one.
        let deep =
            #"{"x": 1, "y": "# + String(repeating: "[", count: limit - 1) + String(repeating: "]", count: limit - 1)
            + "}"
        let tooDeep =
            #"{"x": 1, "y": "# + String(repeating: "[", count: limit) + String(repeating: "]", count: limit) + "}"

        #expect(retrier.signal(in: Data(deep.utf8))?.value == 1)
        #expect(retrier.signal(in: Data(tooDeep.utf8)) == nil)
    }
}
