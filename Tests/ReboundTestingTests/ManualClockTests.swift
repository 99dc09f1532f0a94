import ReboundTesting
import Testing

@Suite("ManualClock", .timeLimit(.minutes(1)))
struct ManualClockTests {
    @Test func sleepEndsOnlyWhenTimeReachesItsDeadline() async throws {
        let clock = ManualClock()
        let task = Task { try await clock.sleep(for: .seconds(5)) }

        try await clock.waitForSleepers(1)
        clock.advance(by: .seconds(4))
        #expect(clock.pendingSleepCount == 1)
        clock.advance(by: .seconds(1))
        try await task.value

        #expect(clock.pendingSleepCount == 0)
        #expect(clock.now == TestInstant(offset: .seconds(5)))
        #expect(clock.sleeps == [.seconds(5)])
    }

    @Test func advanceEndsEveryDueSleepAndLeavesTheRest() async throws {
        let clock = ManualClock()
        let short = Task { try await clock.sleep(for: .seconds(1)) }
        let long = Task { try await clock.sleep(for: .seconds(10)) }

        try await clock.waitForSleepers(2)
        clock.advance(by: .seconds(3))
        try await short.value

        #expect(clock.pendingSleepCount == 1)
        #expect(Set(clock.sleeps) == [.seconds(1), .seconds(10)])
        clock.advance(to: TestInstant(offset: .seconds(10)))
        try await long.value
    }

    @Test func sleepUntilThePastOrNowReturnsAtOnce() async throws {
        let clock = ManualClock(now: TestInstant(offset: .seconds(100)))

        try await clock.sleep(until: TestInstant(offset: .seconds(50)))
        try await clock.sleep(for: .zero)

        #expect(clock.sleeps == [.seconds(-50), .zero])
        #expect(clock.pendingSleepCount == 0)
    }

    @Test func cancellingASleepingTaskThrowsCancellationAtOnce() async throws {
        let clock = ManualClock()
        let task = Task { try await clock.sleep(for: .seconds(60)) }

        try await clock.waitForSleepers(1)
        task.cancel()

        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(clock.pendingSleepCount == 0)
        #expect(clock.now == TestInstant(offset: .zero))
    }

    @Test func sleepInAnAlreadyCancelledTaskThrows() async throws {
        let clock = ManualClock()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await clock.sleep(for: .seconds(1))
        }

        await #expect(throws: CancellationError.self) { try await task.value }
    }

    @Test func advanceNeverMovesTimeBack() {
        let clock = ManualClock()
        clock.advance(by: .seconds(2))
        clock.advance(to: TestInstant(offset: .seconds(1)))

        #expect(clock.now == TestInstant(offset: .seconds(2)))
    }

    @Test func waitForSleepsCountsFinishedSleepsToo() async throws {
        let clock = ManualClock()
        try await clock.sleep(for: .zero)

        try await clock.waitForSleeps(1)

        #expect(clock.sleeps.count == 1)
    }

    @Test func waitingForSleepersCanBeCancelled() async throws {
        let clock = ManualClock()
        let waiter = Task { try await clock.waitForSleepers(1) }

        waiter.cancel()

        await #expect(throws: CancellationError.self) { try await waiter.value }
    }

    @Test func manySleepersAcrossTasksAllEnd() async throws {
        let clock = ManualClock()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 1...100 {
                group.addTask { try await clock.sleep(for: .milliseconds(index)) }
            }
            try await clock.waitForSleepers(100)
            clock.advance(by: .milliseconds(100))
            try await group.waitForAll()
        }

        #expect(clock.sleeps.count == 100)
    }
}

@Suite("FastForwardClock")
struct FastForwardClockTests {
    @Test func sleepsEndAtOnceAndMoveTimeToTheirDeadline() async throws {
        let clock = FastForwardClock()

        try await clock.sleep(for: .seconds(3))
        try await clock.sleep(for: .milliseconds(500))

        #expect(clock.now == TestInstant(offset: .milliseconds(3500)))
        #expect(clock.sleeps == [.seconds(3), .milliseconds(500)])
    }

    @Test func cancelledTaskSleepThrows() async throws {
        let clock = FastForwardClock()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await clock.sleep(for: .seconds(1))
        }

        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(clock.sleeps.isEmpty)
    }
}
