import Foundation
import Rebound
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("ReboundError")
struct ReboundErrorTests {
    @Test func urlErrorIsFoundBehindTransportAdapterAndRetryAbortReasons() {
        let transport = ReboundError.Reason.transportFailed(error: URLError(.timedOut))
        let adapter = ReboundError.Reason.adaptationFailed(error: URLError(.notConnectedToInternet))
        let aborted = ReboundError.Reason.retryAborted(error: TestError("stop"), original: transport)

        #expect(transport.urlError?.code == .timedOut)
        #expect(adapter.urlError?.code == .notConnectedToInternet)
        #expect(aborted.urlError?.code == .timedOut)
        #expect(ReboundError.Reason.unacceptableStatusCode(503).urlError == nil)
        #expect(ReboundError.Reason.validationFailed(error: URLError(.timedOut)).urlError == nil)
    }

    @Test(
        "errorType is a short name from a closed set",
        arguments: [
            (ReboundError.Reason.unacceptableStatusCode(503), "503"),
            (.transportFailed(error: URLError(.timedOut)), "timedOut"),
            (.transportFailed(error: URLError(.networkConnectionLost)), "networkConnectionLost"),
            (.transportFailed(error: URLError(.zeroByteResource)), "URLError"),
            (.transportFailed(error: TestError("https://a.example/?token=t0ken")), "transport"),
            (.adaptationFailed(error: TestError("x")), "adaptation"),
            (.validationFailed(error: TestError("x")), "validation"),
            (.decodingFailed(error: TestError("x")), "decoding"),
            (.circuitOpen(CircuitBreakerOpenError(key: "a.example", state: .open, retryAfter: nil)), "circuitOpen"),
            (
                .retryAborted(
                    error: CircuitBreakerOpenError(key: "a.example", state: .open, retryAfter: nil),
                    original: .unacceptableStatusCode(503)), "circuitOpen"
            ),
            (
                .retryAborted(
                    error: RetryBudgetExhausted(key: "a.example", availableTokens: 0, retryCost: 5),
                    original: .unacceptableStatusCode(503)),
                "retryBudgetExhausted"
            ),
            (
                .adaptationFailed(
                    error: AdaptiveThrottleRejection(
                        key: "a.example", rejectionProbability: 0.5, requests: 20, accepts: 4)),
                "throttled"
            ),
            (
                .retryAborted(
                    error: AdaptiveThrottleRejection(
                        key: "a.example", rejectionProbability: 0.5, requests: 20, accepts: 4),
                    original: .unacceptableStatusCode(503)),
                "throttled"
            ),
            (
                .adaptationFailed(
                    error: ConcurrencyLimitExceeded(
                        key: "a.example", limitHit: .queue, limit: 4, inFlight: 4, queued: 8)),
                "concurrencyLimit"
            ),
            (.retryAborted(error: TestError("quota"), original: .unacceptableStatusCode(429)), "retryAborted"),
            (.deadlineExceeded(deadline: .seconds(1), last: .unacceptableStatusCode(503)), "deadlineExceeded"),
        ])
    func errorTypeIsAShortNameFromAClosedSet(reason: ReboundError.Reason, expected: String) {
        #expect(reason.errorType == expected)
        #expect(ReboundError(reason: reason, originalRequest: URLRequest(url: exampleURL)).errorType == expected)
    }

    @Test func originalLooksThroughRetryAborts() {
        let aborted = ReboundError.Reason.retryAborted(error: TestError("stop"), original: .unacceptableStatusCode(429))

        guard case .unacceptableStatusCode(429) = aborted.original else {
            Issue.record("original: \(aborted.original)")
            return
        }
        #expect(aborted.underlyingError as? TestError == TestError("stop"))
        #expect(ReboundError.Reason.unacceptableStatusCode(429).underlyingError == nil)
    }

    /// Three attempts, the last of which failed with `failure`.
    private static func attempts(last failure: ReboundError.Reason, count: Int = 3) -> [Attempt] {
        (1...count).map {
            Attempt(
                number: $0, request: nil, response: nil, failure: $0 == count ? failure : .unacceptableStatusCode(503),
                duration: .zero)
        }
    }

    private static let timeout = ReboundError.Reason.transportFailed(error: URLError(.timedOut))

    @Test(
        arguments: [
            (timeout, "attempt 3 failed with transport failed: URLError -1001 (timedOut); not retried (3 attempts)"),
            (
                .unacceptableStatusCode(503), "attempt 3 failed with status 503; not retried (3 attempts)"
            ),
            (
                .retryAborted(
                    error: RetryBudgetExhausted(key: "api.example.com", availableTokens: 3, retryCost: 5),
                    original: timeout),
                "attempt 3 failed with transport failed: URLError -1001 (timedOut); stopped by retry budget for api.example.com exhausted: 3 tokens left, a retry costs 5 (3 attempts)"
            ),
            (
                .deadlineExceeded(deadline: .seconds(2), last: .unacceptableStatusCode(503)),
                "attempt 3 failed with status 503; deadline of 2 s exceeded (3 attempts)"
            ),
            (
                .circuitOpen(CircuitBreakerOpenError(key: "api.example.com", state: .open, retryAfter: .seconds(4))),
                "attempt 3 failed with circuit breaker for api.example.com is open; it lets a trial call through in 4 s; not sent, so not retried (3 attempts)"
            ),
            (
                .decodingFailed(error: TestError("json")),
                "attempt 3 succeeded, but its body could not be decoded: TestError(name: \"json\"); not retried (3 attempts)"
            ),
        ] as [(ReboundError.Reason, String)])
    func describesInOneLineWhichAttemptFailedWhatFailedAndWhy(reason: ReboundError.Reason, expected: String) {
        let secret = URLRequest(url: URL(string: "https://api.example.com/items?access_token=SECRET&page=2")!)
        let error = ReboundError(
            reason: reason, originalRequest: secret, attempts: Self.attempts(last: reason.original))

        #expect(
            error.description == "GET https://api.example.com/items?access_token=<redacted>&page=<redacted>: "
                + expected)
        #expect(error.localizedDescription == error.description)
        #expect(!error.description.contains("\n"))
    }

    @Test func anotherRequestsErrorItWrapsIsSetOffInBrackets() {
        // An authenticator's refresh asked the token endpoint, which failed: the request's adapter failed with it.
        let token = URLRequest(url: URL(string: "https://auth.example.com/token?client_secret=SECRET")!)
        let refresh = ReboundError(
            reason: .unacceptableStatusCode(503), originalRequest: token,
            attempts: Self.attempts(last: .unacceptableStatusCode(503), count: 1))
        let error = ReboundError(
            reason: .adaptationFailed(error: refresh), originalRequest: request(),
            attempts: Self.attempts(last: .adaptationFailed(error: refresh), count: 1))

        #expect(
            error.description
                == "GET https://api.example.com/items: attempt 1 failed with adapter failed: "
                + "[GET https://auth.example.com/token?client_secret=<redacted>: attempt 1 failed with status 503; "
                + "not retried (1 attempt)]; not retried (1 attempt)")
    }

    @Test func theRetriersErrorAndTheOpenBreakerAreReachableDirectly() {
        let open = CircuitBreakerOpenError(key: "a", state: .open, retryAfter: nil)
        let stopped = ReboundError(
            reason: .deadlineExceeded(
                deadline: .seconds(1), last: .retryAborted(error: TestError("stop"), original: .circuitOpen(open))),
            originalRequest: request())

        #expect(stopped.retrierError as? TestError == TestError("stop"))
        #expect(stopped.circuitBreakerOpenError?.key == "a")
        #expect(ReboundError(reason: .unacceptableStatusCode(500), originalRequest: request()).retrierError == nil)
    }
}
