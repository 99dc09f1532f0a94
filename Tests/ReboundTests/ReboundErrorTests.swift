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
