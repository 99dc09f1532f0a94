import Rebound
import ReboundTesting
import Testing

@Suite("ManualClock", .timeLimit(.minutes(5)))
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

    /// Sleeps end earliest deadline first, and sleeps with the same deadline in the order they began, whatever the
    /// order they were asked in (a simulation's serial executor runs the woken tasks in the order they were woken).
    @available(macOS 15.0, iOS 18.0, macCatalyst 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    @Test func sleepsEndInDeadlineOrderThenInTheOrderTheyBegan() async throws {
        let simulation = Simulation()
        let woken = await simulation.run {
            let clock = ManualClock()
            let woken = Locked<[String]>([])
            for (label, seconds) in [("c", 3), ("a1", 1), ("b", 2), ("a2", 1), ("d", 4), ("a3", 1)] {
                Task(executorPreference: simulation.executor) {
                    try await clock.sleep(for: .seconds(seconds))
                    woken.withLock { $0.append(label) }
                }
                await simulation.settle()
            }
            clock.advance(to: TestInstant(offset: .seconds(3)))
            await simulation.settle()
            #expect(clock.pendingSleepCount == 1)
            #expect(clock.nextDeadline == TestInstant(offset: .seconds(4)))
            clock.advance(by: .seconds(1))
            await simulation.settle()
            return woken.withLock { $0 }
        }

        #expect(woken == ["a1", "a2", "a3", "b", "c", "d"])
    }

    @Test func cancellingOneOfManySleepsLeavesTheOthersInOrder() async throws {
        let clock = ManualClock()
        let tasks = (1...5).map { seconds in Task { try await clock.sleep(for: .seconds(seconds)) } }
        try await clock.waitForSleepers(5)
        #expect(clock.nextDeadline == TestInstant(offset: .seconds(1)))

        tasks[2].cancel()
        await #expect(throws: CancellationError.self) { try await tasks[2].value }
        tasks[0].cancel()
        await #expect(throws: CancellationError.self) { try await tasks[0].value }

        #expect(clock.pendingSleepCount == 3)
        #expect(clock.nextDeadline == TestInstant(offset: .seconds(2)))
        clock.advance(to: TestInstant(offset: .seconds(3)))
        try await tasks[1].value
        #expect(clock.nextDeadline == TestInstant(offset: .seconds(4)))
        clock.advance(by: .seconds(2))
        try await tasks[3].value
        try await tasks[4].value
        #expect(clock.nextDeadline == nil)
        #expect(clock.pendingSleepCount == 0)
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
