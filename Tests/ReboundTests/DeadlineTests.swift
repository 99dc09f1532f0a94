import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Deadlines", .timeLimit(.minutes(5)))
struct DeadlineTests {
    let clock = ManualClock()

    @Test func aBackoffThatWouldEndAfterTheDeadlineEndsTheRequestNowKeepingTheLastFailure() async throws {
        let observer = RecordingObserver()
        let transport = ScriptedTransport(
            [.status(503).delayed(by: .seconds(2)), .status(503), .status(200)], clock: clock)
        let session = Session(
            transport: transport,
            interceptor: Interceptor(retriers: [retryAnything(limit: 5, delay: .seconds(3))], observers: [observer]),
            deadline: .seconds(4), clock: clock)

        let task = Task { try await session.send(request()) }
        try await clock.waitForSleepers(2)  // the transport's 2 s and the deadline's timer
        clock.advance(by: .seconds(2))
        let error = await #expect(throws: ReboundError.self) { try await task.value }

        guard case .deadlineExceeded(.seconds(4), .unacceptableStatusCode(503)) = error?.reason else {
            Issue.record("reason: \(String(describing: error?.reason))")
            return
        }
        #expect(transport.requestCount == 1)
        // The transport's 2 s and the deadline's one timer (4 s), which the decision raced too: no 3 s backoff was
        // slept.
        #expect(clock.sleeps.sorted() == [.seconds(2), .seconds(4)])
        #expect(error?.statusCode == 503)
        #expect("\(error!.reason)" == "deadline of 4 s exceeded (after unacceptable status code 503)")
        #expect(observer.lines == ["#1 503 failed 1"])
    }

    @Test func retriesThatFitGoAhead() async throws {
        let transport = ScriptedTransport([.status(503), .status(503), .status(200)])
        let session = Session(
            transport: transport, retriers: [retryAnything(limit: 5, delay: .seconds(1))],
            deadline: .milliseconds(2_500), clock: clock)

        let task = Task { try await session.send(request()) }
        // The deadline's one timer sleeps from the first attempt on; each backoff sleeps beside it.
        for sleeps in [2, 3] {
            try await clock.waitForSleeps(sleeps)
            try await clock.waitForSleepers(2)
            clock.advance(by: .seconds(1))
        }
        let response = try await task.value

        #expect(response.retryCount == 2)
    }

    @Test func anAttemptInFlightIsCutAtTheDeadline() async throws {
        let transport = ScriptedTransport([.hang])
        let session = Session(transport: transport, deadline: .seconds(10), clock: clock)

        let task = Task { try await session.send(request()) }
        try await transport.waitForRequests(1)
        try await clock.waitForSleepers(1)
        clock.advance(by: .seconds(10))
        let error = await #expect(throws: ReboundError.self) { try await task.value }

        guard case .deadlineExceeded(.seconds(10), let last) = error?.reason else {
            Issue.record("reason: \(String(describing: error?.reason))")
            return
        }
        #expect(last.urlError?.code == .timedOut)
        #expect(error?.attemptCount == 1)
    }

    @Test func aRequestsDeadlineOverridesTheSessions() async throws {
        let transport = ScriptedTransport { _, _ in .status(503) }
        let session = Session(
            transport: transport, retriers: [retryAnything(limit: 10, delay: .seconds(1))], deadline: .seconds(100),
            clock: clock)

        let task = Task { try await session.send(request(), deadline: .seconds(2)) }
        for sleeps in [2, 3] {
            try await clock.waitForSleeps(sleeps)
            try await clock.waitForSleepers(2)
            clock.advance(by: .seconds(1))
        }
        let error = await #expect(throws: ReboundError.self) { try await task.value }

        #expect(error?.attemptCount == 3)
    }

    @Test func cancellationDuringADeadlineRaceIsCancellation() async throws {
        let transport = ScriptedTransport([.hang])
        let session = Session(transport: transport, deadline: .seconds(10), clock: clock)

        let task = Task { try await session.send(request()) }
        try await transport.waitForRequests(1)
        task.cancel()

        await #expect(throws: CancellationError.self) { try await task.value }
    }
}
