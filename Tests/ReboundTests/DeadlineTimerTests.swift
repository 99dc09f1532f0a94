import Foundation
import ReboundTesting
import Testing

@testable import Rebound

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A request's deadline is one timer: every step the request awaits under it races that timer, and the request's end
/// stops it.
@Suite("The deadline's one timer", .timeLimit(.minutes(5)))
struct DeadlineTimerTests {
    let clock = ManualClock()

    @Test("A request retried twice under a deadline asks the clock for one timer, and leaves none when it ends")
    func oneTimerForTheWholeRequest() async throws {
        let transport = ScriptedTransport([.status(503), .status(503), .status(200)])
        let session = Session(
            transport: transport, retriers: [retryAnything(limit: 5, delay: .seconds(1))], deadline: .seconds(10),
            clock: clock)

        let task = Task { try await session.send(request()) }
        for _ in 0..<2 {
            try await clock.waitForSleepers(2)  // the deadline's timer and the backoff
            clock.advance(by: .seconds(1))
        }
        let response = try await task.value

        #expect(response.attempts.count == 3)
        // Three attempts and two decisions raced the one 10 s timer; each backoff slept beside it.
        #expect(clock.sleeps.sorted() == [.seconds(1), .seconds(1), .seconds(10)])
        #expect(clock.pendingSleepCount == 0, "the request's end stopped its timer")
    }

    @Test("A hedged round's attempts race the one timer, and all of them are cut when it fires")
    func aHedgedRoundRacesTheOneTimer() async throws {
        let transport = ScriptedTransport { _, _ in .hang }
        let session = Session(
            transport: transport, deadline: .seconds(1),
            hedging: Hedging(delay: .milliseconds(100), maximumInFlight: 3), clock: clock)

        let task = Task { try await session.send(request()) }
        for count in 1...2 {
            try await transport.waitForRequests(count)
            try await waitWhile { clock.pendingSleepCount < 2 }  // the deadline's timer and the hedging delay
            clock.advance(by: .milliseconds(100))
        }
        try await transport.waitForRequests(3)
        try await waitWhile { clock.pendingSleepCount < 2 }
        clock.advance(by: .milliseconds(800))
        let error = await #expect(throws: ReboundError.self) { try await task.value }

        guard case .deadlineExceeded(.seconds(1), _) = error?.reason else {
            Issue.record("reason: \(String(describing: error?.reason))")
            return
        }
        #expect(error?.attemptCount == 3)
        // One timer for the request's three attempts; the rest are the hedging delays.
        #expect(clock.sleeps.sorted() == [.milliseconds(100), .milliseconds(100), .milliseconds(100), .seconds(1)])
        #expect(clock.pendingSleepCount == 0, "nothing sleeps on after the request")
    }

    @Test("An attempt timeout that comes first is the attempt's own timer; the deadline's starts with the decision")
    func anAttemptTimeoutBeforeTheDeadline() async throws {
        let transport = ScriptedTransport([.hang, .status(200)])
        let session = Session(
            transport: transport, retriers: [RetryPolicy(backoff: .zero)], deadline: .seconds(10),
            attemptTimeout: .seconds(2), clock: clock)

        let task = Task { try await session.send(request()) }
        try await transport.waitForRequests(1)
        try await clock.waitForSleepers(1)
        #expect(clock.sleeps == [.seconds(2)], "the first attempt races its own timeout, and no deadline timer yet")
        clock.advance(by: .seconds(2))
        let response = try await task.value

        #expect(response.attempts.count == 2)
        // The first attempt's timeout, the deadline's timer from the decision at 2 s on (8 s left), and the second
        // attempt's timeout.
        #expect(clock.sleeps.filter { $0 > .zero }.sorted() == [.seconds(2), .seconds(2), .seconds(8)])
        #expect(clock.pendingSleepCount == 0, "the request's end stopped its timer")
    }

    @Test("The timer cuts the steps watching it in the order they began; a step that watches after it is cut at once")
    func cutsInOrderThenAtOnce() async throws {
        let timer = DeadlineTimer(end: .seconds(2), clock: SessionClock(clock))
        let cuts = Locked<[Int]>([])
        let first = timer.watch { cuts.withLock { $0.append(1) } }
        let second = timer.watch { cuts.withLock { $0.append(2) } }
        let third = timer.watch { cuts.withLock { $0.append(3) } }
        #expect(first != nil && second != nil && third != nil)
        timer.stopWatching(try #require(second))

        try await clock.waitForSleepers(1)
        #expect(clock.sleeps == [.seconds(2)], "one timer for every step")
        clock.advance(by: .seconds(2))
        try await waitWhile { cuts.withLock { $0.count } < 2 }

        #expect(cuts.withLock { $0 } == [1, 3])
        #expect(timer.watch { Issue.record("a step that watches after the deadline is cut at once") } == nil)
        #expect(timer.remaining() == .zero)
    }

    @Test("Stopped with its request, the timer sleeps no more and cuts nothing")
    func stoppedWithTheRequest() async throws {
        let timer = DeadlineTimer(end: .seconds(5), clock: SessionClock(clock))
        let cut = Locked(false)
        #expect(timer.watch { cut.withLock { $0 = true } } != nil)
        try await clock.waitForSleepers(1)

        timer.stop()
        try await waitWhile { clock.pendingSleepCount > 0 }
        clock.advance(by: .seconds(10))

        #expect(timer.watch { cut.withLock { $0 = true } } == nil)
        #expect(!cut.withLock { $0 })
    }

    @Test("A timer first watched at or after its deadline cuts at once and starts no sleep")
    func watchedTooLate() {
        let timer = DeadlineTimer(end: .seconds(3), clock: SessionClock(clock))
        clock.advance(by: .seconds(3))
        #expect(timer.watch { Issue.record("never called") } == nil)
        #expect(clock.sleeps.isEmpty)
    }
}
