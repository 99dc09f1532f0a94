import Foundation
import Rebound
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

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
