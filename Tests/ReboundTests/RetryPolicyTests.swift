import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("RetryPolicy", .timeLimit(.minutes(5)))
struct RetryPolicyTests {
    static let transientURLErrorCodes: [URLError.Code] = [
        .backgroundSessionInUseByAnotherProcess, .backgroundSessionWasDisconnected, .badServerResponse,
        .callIsActive, .cannotConnectToHost, .cannotFindHost, .cannotLoadFromNetwork, .dataNotAllowed,
        .dnsLookupFailed, .downloadDecodingFailedMidStream, .downloadDecodingFailedToComplete,
        .internationalRoamingOff, .networkConnectionLost, .notConnectedToInternet, .secureConnectionFailed,
        .serverCertificateHasBadDate, .serverCertificateNotYetValid, .timedOut,
    ]

    @Test func defaultsAreAlamofires() {
        let policy = RetryPolicy()

        #expect(policy.retryLimit == 2)
        #expect(policy.exponentialBackoffBase == 2)
        #expect(policy.exponentialBackoffScale == 0.5)
        #expect(policy.retryableHTTPMethods == [.delete, .get, .head, .options, .put, .trace])
        #expect(policy.retryableHTTPStatusCodes == [408, 500, 502, 503, 504])
        #expect(policy.retryableURLErrorCodes == Set(Self.transientURLErrorCodes))
        #expect(policy.retryableURLErrorCodes.count == 18)
    }

    @Test(arguments: [HTTPMethod.delete, .get, .head, .options, .put, .trace])
    func retriesIdempotentMethods(method: HTTPMethod) async {
        #expect(await decision(RetryPolicy(), method: method, status: 503).delay == .milliseconds(500))
    }

    @Test(arguments: [HTTPMethod.post, .patch, .connect, "PURGE", "PROPFIND"])
    func doesNotRetryOtherMethods(method: HTTPMethod) async {
        #expect(await decision(RetryPolicy(), method: method, status: 503).retryRequired == false)
        #expect(await decision(RetryPolicy(), method: method, urlError: .timedOut).retryRequired == false)
    }

    @Test(arguments: [408, 500, 502, 503, 504])
    func retriesTransientStatusCodes(status: Int) async {
        #expect(await decision(RetryPolicy(), status: status).retryRequired)
    }

    @Test(arguments: [100, 200, 204, 301, 304, 400, 401, 403, 404, 405, 409, 410, 422, 429, 501, 505, 599])
    func doesNotRetryOtherStatusCodes(status: Int) async {
        #expect(await decision(RetryPolicy(), status: status).retryRequired == false)
    }

    @Test(arguments: transientURLErrorCodes)
    func retriesTransientURLErrors(code: URLError.Code) async {
        #expect(await decision(RetryPolicy(), urlError: code).retryRequired)
    }

    @Test(arguments: [
        URLError.Code.cancelled, .badURL, .unsupportedURL, .userAuthenticationRequired, .cannotDecodeContentData,
        .serverCertificateUntrusted, .httpTooManyRedirects, .fileDoesNotExist, .unknown,
    ])
    func doesNotRetryOtherURLErrors(code: URLError.Code) async {
        #expect(await decision(RetryPolicy(), urlError: code).retryRequired == false)
    }

    @Test func retriesAURLErrorThrownByAnAdapter() async {
        let sent = request()
        let error = ReboundError(reason: .adaptationFailed(error: URLError(.timedOut)), originalRequest: sent)
        let attempt = Attempt(number: 1, request: nil, response: nil, failure: error.reason, duration: .zero)

        let result = await RetryPolicy().retry(RetryRequest(originalRequest: sent, attempts: [attempt]), dueTo: error)

        #expect(result.retryRequired)
    }

    @Test func doesNotRetryAValidationFailureOnA200() async {
        let sent = request()
        let response = HTTPURLResponse(url: exampleURL, statusCode: 200, httpVersion: nil, headerFields: nil)
        let error = ReboundError(
            reason: .validationFailed(error: TestError("bad body")), originalRequest: sent, response: response)
        let attempt = Attempt(number: 1, request: sent, response: response, failure: error.reason, duration: .zero)

        let result = await RetryPolicy().retry(
            RetryRequest(originalRequest: sent, lastRequest: sent, response: response, attempts: [attempt]),
            dueTo: error)

        #expect(!result.retryRequired)
    }

    @Test(arguments: [(0, true), (1, true), (2, false), (5, false)])
    func stopsAtTheRetryLimit(retryCount: Int, retries: Bool) async {
        #expect(await decision(RetryPolicy(), status: 503, retryCount: retryCount).retryRequired == retries)
    }

    @Test func delaysFollowBaseToTheRetryCountTimesScale() throws {
        let policy = RetryPolicy(exponentialBackoffBase: 3, exponentialBackoffScale: 0.1)

        #expect(policy.delay(forRetryCount: 0) == .milliseconds(100))
        #expect(policy.delay(forRetryCount: 2) == .milliseconds(900))
    }

    @Test func hugeRetryCountsGiveABoundedDelayInsteadOfOverflowing() throws {
        let policy = RetryPolicy(retryLimit: .max, exponentialBackoffBase: 1000)

        #expect(policy.delay(forRetryCount: 1_000_000) == .seconds(1e12))
        #expect(policy.delay(forRetryCount: .max) == .seconds(1e12))
    }

    @Test func sessionSleepsHalfASecondThenOneTwoAndFourWithALimitOfFour() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport(Array(repeating: .status(503), count: 5) + [.status(200)])
        let session = Session(transport: transport, retriers: [RetryPolicy(retryLimit: 4)], clock: clock)

        let task = Task { try await session.send(request()) }
        for (index, delay) in [Duration.milliseconds(500), .seconds(1), .seconds(2), .seconds(4)].enumerated() {
            try await clock.waitForSleepers(1)
            #expect(transport.requestCount == index + 1)
            clock.advance(by: delay)
        }
        let error = try await #require(throws: ReboundError.self) { try await task.value }

        #expect(clock.sleeps == [.milliseconds(500), .seconds(1), .seconds(2), .seconds(4)])
        #expect(transport.requestCount == 5)
        #expect(error.attemptCount == 5)
        #expect(error.attempts.map(\.retryDelay) == [.milliseconds(500), .seconds(1), .seconds(2), .seconds(4), nil])
    }

    @Test func sessionRetriesA503WithoutAnyValidationCall() async throws {
        let transport = ScriptedTransport([.status(503), .status(200)])
        let session = Session(transport: transport, retriers: [RetryPolicy()], clock: FastForwardClock())

        _ = try await session.send(request())

        #expect(transport.requestCount == 2)
    }

    // MARK: - Configuration

    @Test(arguments: [
        (2, 1, 0.5, "RetryPolicy.exponentialBackoffBase", "must be at least 2, got 1"),
        (
            2, 2, -0.5, "RetryPolicy.exponentialBackoffScale",
            "must be a number of seconds from 0 to 1e12 (RetryResult.longestDelay), got -0.5"
        ),
        (
            2, 2, .infinity, "RetryPolicy.exponentialBackoffScale",
            "must be a number of seconds from 0 to 1e12 (RetryResult.longestDelay), got inf"
        ),
        (
            2, 2, .nan, "RetryPolicy.exponentialBackoffScale",
            "must be a number of seconds from 0 to 1e12 (RetryResult.longestDelay), got nan"
        ),
        (-1, 2, 0.5, "RetryPolicy.retryLimit", "must be 0 or more, got -1"),
    ])
    func validatedRejectsAnInvalidSettingNamingIt(
        limit: Int, base: Int, scale: Double, field: String, problem: String
    ) {
        let error = #expect(throws: ConfigurationError.self) {
            try RetryPolicy.validated(retryLimit: limit, exponentialBackoffBase: base, exponentialBackoffScale: scale)
        }

        #expect(error?.field == field)
        #expect(error?.message == "\(field) \(problem)")
    }

    @Test func validatedReturnsThePolicyTheInitializerWould() throws {
        let policy = try RetryPolicy.validated(
            retryLimit: 4, exponentialBackoffScale: 0.25, retryableHTTPMethods: [.get])

        #expect(policy.retryLimit == 4)
        #expect(policy.retryableHTTPMethods == [.get])
        #expect(policy.delay(forRetryCount: 2) == RetryPolicy(exponentialBackoffScale: 0.25).delay(forRetryCount: 2))
    }

    @Test func anInvalidSettingWrittenInCodeTrapsNamingIt() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = RetryPolicy(retryLimit: -1)
        }

        expectStandardError(of: result, contains: "RetryPolicy.retryLimit must be 0 or more, got -1")
    }

    @Test func theStaticFactoryTrapsOnAnInvalidSettingToo() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = [.retryPolicy(exponentialBackoffBase: 1)] as [any RequestRetrier]
        }

        expectStandardError(of: result, contains: "RetryPolicy.exponentialBackoffBase must be at least 2, got 1")
    }

    @Test func acceptsAZeroScaleAndAZeroLimit() throws {
        let policy = RetryPolicy(retryLimit: 0, exponentialBackoffScale: 0)

        #expect(policy.delay(forRetryCount: 3) == .zero)
    }

    @Test func staticFactoryMatchesTheInitializer() throws {
        let retriers: [any RequestRetrier] = [.retryPolicy(retryLimit: 7)]

        #expect((retriers[0] as? RetryPolicy)?.retryLimit == 7)
    }
}
