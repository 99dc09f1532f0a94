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

    @Test func originalLooksThroughRetryAborts() {
        let aborted = ReboundError.Reason.retryAborted(error: TestError("stop"), original: .unacceptableStatusCode(429))

        guard case .unacceptableStatusCode(429) = aborted.original else {
            Issue.record("original: \(aborted.original)")
            return
        }
        #expect(aborted.underlyingError as? TestError == TestError("stop"))
        #expect(ReboundError.Reason.unacceptableStatusCode(429).underlyingError == nil)
    }

    @Test func descriptionNamesMethodURLAttemptsAndReason() {
        let attempts = (1...3).map {
            Attempt(number: $0, request: nil, response: nil, failure: .unacceptableStatusCode(503), duration: .zero)
        }
        let error = ReboundError(
            reason: .transportFailed(error: URLError(.timedOut)), originalRequest: request(.put), attempts: attempts)

        #expect(
            error.description
                == "PUT https://api.example.com/items failed after 3 attempts: transport failed: URLError -1001 (timedOut)"
        )
        #expect(error.attemptCount == 3)
    }
}

@Suite("URLRequest conveniences")
struct URLRequestTests {
    @Test func buildsARequestFromURLMethodHeadersAndBody() {
        let request = URLRequest(url: exampleURL, method: .patch, headers: ["X-A": "1"], body: Data("b".utf8))

        #expect(request.httpMethod == "PATCH")
        #expect(request.method == .patch)
        #expect(request.value(forHTTPHeaderField: "x-a") == "1")
        #expect(request.httpBody == Data("b".utf8))
    }

    @Test func methodDefaultsToGet() {
        var request = URLRequest(url: exampleURL)

        #expect(request.method == .get)
        request.method = .delete
        #expect(request.httpMethod == "DELETE")
    }
}

@Suite("RetryResult")
struct RetryResultTests {
    @Test func delayIsZeroForRetryNeverNegativeAndNilWhenNotRetrying() {
        #expect(RetryResult.retry.delay == .zero)
        #expect(RetryResult.retryWithDelay(.seconds(2)).delay == .seconds(2))
        #expect(RetryResult.retryWithDelay(.seconds(-2)).delay == .zero)
        #expect(RetryResult.retryWithDelay(.seconds(Int64.max)).delay == RetryResult.longestDelay)
        #expect(RetryResult.doNotRetry.delay == nil)
        #expect(RetryResult.doNotRetryWithError(TestError("x")).delay == nil)
        #expect(RetryResult.doNotRetryWithError(TestError("x")).error as? TestError == TestError("x"))
    }
}

@Suite("Attempt")
struct AttemptTests {
    @Test func describesAFailedAttemptThatWasRetried() {
        let response = HTTPURLResponse(url: exampleURL, statusCode: 503, httpVersion: nil, headerFields: nil)
        let attempt = Attempt(
            number: 2, request: request(.get), response: response, failure: .unacceptableStatusCode(503),
            duration: .microseconds(12_340), retryDelay: .milliseconds(1_500))

        #expect(
            attempt.description
                == "#2 GET https://api.example.com/items → unacceptable status code 503 in 12.3 ms, retried after 1.5 s"
        )
    }

    @Test func describesASuccessAndAnAttemptThatWasNotSent() {
        let response = HTTPURLResponse(url: exampleURL, statusCode: 200, httpVersion: nil, headerFields: nil)
        let success = Attempt(
            number: 1, request: request(.put), response: response, failure: nil, duration: .seconds(2))
        let unsent = Attempt(
            number: 1, request: nil, response: nil, failure: .adaptationFailed(error: TestError("x")), duration: .zero)

        #expect(success.description == "#1 PUT https://api.example.com/items → 200 in 2 s")
        #expect(unsent.description == #"#1 (not sent) → adapter failed: TestError(name: "x") in 0 ms"#)
    }

    @Test func reboundErrorIsALocalizedErrorWithItsDescription() {
        let error = ReboundError(reason: .unacceptableStatusCode(500), originalRequest: request())

        #expect(error.localizedDescription == error.description)
    }
}
