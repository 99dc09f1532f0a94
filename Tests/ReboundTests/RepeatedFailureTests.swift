import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `RetryPolicy.stopsAfterRepeatedFailure`, on in the preset: no third attempt after two that failed the same way.
@Suite("No third attempt after a repeated failure", .timeLimit(.minutes(5)))
struct RepeatedFailureTests {
    private func attempts(_ steps: [ScriptedTransport.Step], stops: Bool = true) async -> Int {
        let transport = ScriptedTransport(steps)
        let session = Session(
            transport: transport, retriers: [RetryPolicy(backoff: .zero, stopsAfterRepeatedFailure: stops)],
            clock: FastForwardClock())
        _ = try? await session.send(request())
        return transport.requestCount
    }

    @Test func twoAttemptsThatFailedTheSameWayAreNotFollowedByAThird() async {
        #expect(await attempts([.status(503), .status(503), .status(200)]) == 2)
        #expect(await attempts([.urlError(.timedOut), .urlError(.timedOut), .status(200)]) == 2)
    }

    @Test func aRetryThatFailsDifferentlyIsRetriedAgain() async {
        #expect(await attempts([.status(503), .status(502), .status(200)]) == 3)
        #expect(await attempts([.status(503), .urlError(.timedOut), .status(200)]) == 3)
        #expect(await attempts([.urlError(.timedOut), .urlError(.networkConnectionLost), .status(200)]) == 3)
    }

    @Test func aLoneTransientFailureIsStillRetried() async {
        #expect(await attempts([.status(503), .status(200)]) == 2)
    }

    @Test func aServerThatAskedForADelayIsStillAnswered() async {
        let asked = ScriptedTransport.Step.response(status: 503, headers: ["Retry-After": "1"])
        #expect(await attempts([asked, asked, .status(200)]) == 3)
    }

    @Test func offByDefaultAsInAlamofireAndOnInThePreset() async {
        #expect(await attempts([.status(503), .status(503), .status(200)], stops: false) == 3)
        #expect(RetryPolicy().stopsAfterRepeatedFailure == false)
        #expect(Resilience().retryPolicy.stopsAfterRepeatedFailure == true)
    }
}
