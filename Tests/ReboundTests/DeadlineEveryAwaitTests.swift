import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The deadline bounds every await of a request, even work that ignores cancellation; the attempt timeout bounds each
/// attempt and is retried like any timeout.
@Suite("Deadline and attempt timeout bound every await", .timeLimit(.minutes(5)))
struct DeadlineEveryAwaitTests {
    let clock = ManualClock()

    private func expectDeadline(_ task: Task<Response, any Error>, _ deadline: Duration) async {
        let error = await #expect(throws: ReboundError.self) { try await task.value }
        guard case .deadlineExceeded(let limit, _) = error?.reason, limit == deadline else {
            Issue.record("reason: \(String(describing: error?.reason))")
            return
        }
    }

    @Test("A transport that ignores cancellation ends at a 500 ms deadline")
    func stubbornTransport() async throws {
        let stubborn = Gate()
        let transport = ScriptedTransport { _, _ in
            await stubborn.wait()
            return .status(200)
        }
        let session = Session(transport: transport, deadline: .milliseconds(500), clock: clock)
        let task = Task { try await session.send(request()) }
        try await transport.waitForRequests(1)
        try await clock.waitForSleepers(1)
        clock.advance(by: .milliseconds(500))
        await expectDeadline(task, .milliseconds(500))
        await stubborn.open()
    }

    @Test("A retrier that takes 4 s (and ignores cancellation) ends at a 1 s deadline")
    func slowRetrier() async throws {
        let stubborn = Gate()
        let observer = OutcomeCounter()
        let asked = Locked(false)
        let session = Session(
            transport: ScriptedTransport([.status(503)]),
            retriers: [
                Retrier { _, _ in
                    asked.withLock { $0 = true }
                    await stubborn.wait()
                    return .retry
                }
            ], observers: [observer], deadline: .seconds(1), clock: clock)
        let task = Task { try await session.send(request()) }
        try await clock.waitForSleepers(1)  // the deadline's timer
        try await waitWhile { !asked.withLock { $0 } }
        clock.advance(by: .seconds(1))
        await expectDeadline(task, .seconds(1))
        await stubborn.open()
        #expect(observer.ends == 1)
    }

    @Test("An adapter that hangs (and ignores cancellation) ends at the deadline")
    func hangingAdapter() async throws {
        let stubborn = Gate()
        let transport = ScriptedTransport([.status(200)])
        let session = Session(
            transport: transport,
            adapters: [
                Adapter { request, _ in
                    await stubborn.wait()
                    return request
                }
            ], deadline: .seconds(2), clock: clock)
        let task = Task { try await session.send(request()) }
        try await clock.waitForSleepers(1)
        clock.advance(by: .seconds(2))
        await expectDeadline(task, .seconds(2))
        await stubborn.open()
        #expect(transport.requestCount == 0)
    }

    @Test("An attempt abandoned at the deadline that reaches the breaker later takes no permit it would never return")
    func abandonedAttemptTakesNoPermit() async throws {
        let stubborn = Gate()
        let breaker = CircuitBreaker(clock: clock)
        let passed = Locked(false)
        let session = Session(
            transport: ScriptedTransport([.status(200)]),
            adapters: [
                Adapter { request, _ in
                    await stubborn.wait()
                    return request
                },
                breaker,
                Adapter { request, _ in
                    passed.withLock { $0 = true }
                    return request
                },
            ], deadline: .seconds(1), clock: clock)
        let task = Task { try await session.send(request()) }
        try await clock.waitForSleepers(1)
        clock.advance(by: .seconds(1))
        await expectDeadline(task, .seconds(1))
        await stubborn.open()
        try await waitWhile { !passed.withLock({ $0 }) }
        #expect(breaker.permitsInFlight == 0)
    }

    @Test("An attempt past its timeout fails with a timeout that the policy retries; the next attempt succeeds")
    func attemptTimeoutIsRetried() async throws {
        let transport = ScriptedTransport([.hang, .status(200)])
        let session = Session(
            transport: transport, retriers: [RetryPolicy(backoff: .zero)], attemptTimeout: .seconds(5), clock: clock)
        let task = Task { try await session.send(request()) }
        try await transport.waitForRequests(1)
        try await clock.waitForSleepers(1)
        clock.advance(by: .seconds(5))
        let response = try await task.value
        #expect(response.statusCode == 200)
        #expect(response.attempts.count == 2)
        #expect((response.attempts[0].failure?.urlError)?.code == .timedOut)
    }

    @Test("A request's attempt timeout replaces the session's; the deadline still wins when it comes first")
    func attemptTimeoutOverrideAndDeadline() async throws {
        let transport = ScriptedTransport { _, _ in .hang }
        let session = Session(transport: transport, attemptTimeout: .seconds(30), clock: clock)

        let short = Task { try await session.send(request(), attemptTimeout: .seconds(1)) }
        try await clock.waitForSleepers(1)
        #expect(clock.sleeps.last == .seconds(1))
        clock.advance(by: .seconds(1))
        let error = await #expect(throws: ReboundError.self) { try await short.value }
        #expect(error?.urlError?.code == .timedOut)
        if case .deadlineExceeded = error?.reason { Issue.record("an attempt timeout is not the deadline") }

        let bounded = Task { try await session.send(request(), deadline: .seconds(2), attemptTimeout: .seconds(10)) }
        try await clock.waitForSleepers(1)
        #expect(clock.sleeps.last == .seconds(2))
        clock.advance(by: .seconds(2))
        await expectDeadline(bounded, .seconds(2))
    }

    @Test("An attempt timeout of zero or less traps naming the setting")
    func invalidAttemptTimeout() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = Session(transport: ScriptedTransport(), attemptTimeout: .zero)
        }
        expectStandardError(of: result, contains: "Session.attemptTimeout must be longer than zero, got 0.0 seconds")
    }
}

/// Counts the requests that ended.
private final class OutcomeCounter: AttemptObserver {
    private let count = Locked(0)
    var ends: Int { count.withLock { $0 } }
    func requestDidFinish(_ outcome: RequestOutcome) async { count.withLock { $0 += 1 } }
}
