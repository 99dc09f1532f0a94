import Foundation
import Rebound
import ReboundTesting
import Testing

private enum Flaky: Error, Equatable {
    case transient(Int)
    case fatal
}

/// Counts calls and fails the first `failures` of them with `error(n)`.
private final class Operation: Sendable {
    private let calls = Locked(0)
    let failures: Int
    let error: @Sendable (Int) -> Flaky

    init(failures: Int, error: @escaping @Sendable (Int) -> Flaky = { .transient($0) }) {
        self.failures = failures
        self.error = error
    }

    var count: Int { calls.withLock { $0 } }

    func callAsFunction() throws(Flaky) -> String {
        let call = calls.increment()
        if call <= failures { throw error(call) }
        return "ok after \(call)"
    }
}

/// A clock whose every sleep fails.
private struct BrokenClock: Clock {
    struct Broken: Error {}

    var now: ContinuousClock.Instant { ContinuousClock.now }
    var minimumResolution: Duration { .zero }

    func sleep(until deadline: ContinuousClock.Instant, tolerance: Duration?) async throws {
        throw Broken()
    }
}

@Suite("retry(maxAttempts:tolerance:clock:operation:strategy:)", .timeLimit(.minutes(5)))
struct RetryFunctionTests {
    @Test func returnsTheFirstSuccessBackingOffOnTheClock() async throws {
        let clock = FastForwardClock()
        let operation = Operation(failures: 2)

        let result = try await retry(maxAttempts: 3, clock: clock) {
            try operation()
        } strategy: { _ in
            .backoff(.exponential(a: .seconds(1), b: 2))
        }

        #expect(result == "ok after 3")
        #expect(clock.sleeps == [.seconds(1), .seconds(2)])
    }

    @Test func maxAttemptsCountsTheFirstCallAndTheLastTypedErrorIsRethrown() async throws {
        let operation = Operation(failures: 10)

        await #expect(throws: Flaky.transient(3)) {
            try await retry(maxAttempts: 3, clock: FastForwardClock()) { () throws(Flaky) in try operation() }
        }
        #expect(operation.count == 3)
    }

    @Test func theLastErrorKeepsItsTypeWithoutWrapping() async throws {
        let operation = Operation(failures: 10)
        do {
            _ = try await retry(maxAttempts: 2, clock: FastForwardClock()) { () throws(Flaky) in try operation() }
            Issue.record("no error")
        } catch let error as Flaky {
            #expect(error == .transient(2))
        }
    }

    @Test func stopEndsAtOnceWithThatError() async throws {
        let operation = Operation(failures: 10) { $0 == 1 ? .transient(1) : .fatal }
        let clock = FastForwardClock()

        await #expect(throws: Flaky.fatal) {
            try await retry(maxAttempts: 5, clock: clock) { () throws(Flaky) in
                try operation()
            } strategy: { error in
                error == .fatal ? .stop : .backoff(.constant(.seconds(1)))
            }
        }
        #expect(operation.count == 2)
        #expect(clock.sleeps == [.seconds(1)])
    }

    @Test func theDefaultStrategyRetriesAtOnce() async throws {
        let operation = Operation(failures: 2)
        let clock = FastForwardClock()
        let result = try await retry(clock: clock) { () throws(Flaky) in try operation() }
        #expect(result == "ok after 3")
        // Like swift-concurrency-retry's default: no delay, but a sleep of zero on the clock.
        #expect(clock.sleeps == [.zero, .zero])
        let onTheContinuousClock = Operation(failures: 1)
        #expect(try await retry { () throws(Flaky) in try onTheContinuousClock() } == "ok after 2")
    }

    @Test func backingOffWithNoneRetriesAtOnceAsSwiftConcurrencyRetrySpellsIt() async throws {
        let operation = Operation(failures: 2)
        let clock = FastForwardClock()

        let result = try await retry(maxAttempts: 3, clock: clock) { () throws(Flaky) in
            try operation()
        } strategy: { _ in
            .backoff(.none)
        }

        #expect(result == "ok after 3")
        #expect(clock.sleeps == [.zero, .zero])
    }

    @Test func decorrelatedJitterSeesThePreviousDelay() async throws {
        let clock = FastForwardClock()
        let operation = Operation(failures: 4)

        _ = try await retry(maxAttempts: 5, clock: clock) { () throws(Flaky) in
            try operation()
        } strategy: { _ in
            .backoff(.decorrelatedJitter(base: .seconds(1), cap: .seconds(100), using: .seeded(3)))
        }

        let sleeps = clock.sleeps
        #expect(sleeps.count == 4)
        for (previous, delay) in zip([Duration.seconds(1)] + sleeps, sleeps) {
            #expect(delay >= .seconds(1) && delay <= previous * 3)
        }
    }

    @Test func aTaskCancelledBeforeItsFirstAttemptStillRunsTheOperationOnceAndGetsItsError() async throws {
        let calls = Locked(0)
        let (held, _) = AsyncStream<Never>.makeStream()
        let task = Task {
            for await _ in held {}  // Ends when the task is cancelled.
            return try await retry(maxAttempts: 5, clock: FastForwardClock()) { () throws(Flaky) -> Int in
                calls.withLock { $0 += 1 }
                throw .transient(1)
            }
        }
        task.cancel()

        await #expect(throws: Flaky.transient(1)) { try await task.value }
        #expect(calls.withLock { $0 } == 1)
    }

    @Test func cancelledDuringAnAttemptItRethrowsTheOperationsOwnErrorAndStops() async throws {
        let calls = Locked(0)
        let started = AsyncStream<Void>.makeStream()
        let clock = FastForwardClock()
        let task = Task {
            try await retry(maxAttempts: 5, clock: clock) { () async throws(Flaky) -> Int in
                let call = calls.increment()
                started.continuation.yield()
                let (held, _) = AsyncStream<Never>.makeStream()
                for await _ in held {}  // Ends when the task is cancelled.
                throw .transient(call)
            }
        }
        for await _ in started.stream { break }
        task.cancel()

        await #expect(throws: Flaky.transient(1)) { try await task.value }
        #expect(calls.withLock { $0 } == 1)
        #expect(clock.sleeps.isEmpty)
    }

    @Test func cancelledDuringTheBackoffItEndsWithTheClocksError() async throws {
        let clock = ManualClock()
        let calls = Locked(0)
        let task = Task {
            try await retry(maxAttempts: 5, clock: clock) { () throws(Flaky) -> Int in
                calls.withLock { $0 += 1 }
                throw .transient(0)
            } strategy: { _ in
                .backoff(.constant(.seconds(10)))
            }
        }
        try await clock.waitForSleepers(1)
        task.cancel()

        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(calls.withLock { $0 } == 1)
    }

    @Test func aCancellationErrorThrownWhileTheTaskIsNotCancelledIsRetriedLikeAnyError() async throws {
        let clock = FastForwardClock()
        let calls = Locked(0)
        await #expect(throws: CancellationError.self) {
            try await retry(maxAttempts: 4, clock: clock) { () async throws -> Int in
                calls.withLock { $0 += 1 }
                throw CancellationError()
            }
        }
        #expect(calls.withLock { $0 } == 4)
        #expect(clock.sleeps == [.zero, .zero, .zero])
    }

    @Test func anErrorThrownByTheClockIsRethrownAsItIs() async throws {
        let calls = Locked(0)
        await #expect(throws: BrokenClock.Broken.self) {
            try await retry(maxAttempts: 3, clock: BrokenClock()) { () throws(Flaky) -> Int in
                calls.withLock { $0 += 1 }
                throw .transient(0)
            }
        }
        #expect(calls.withLock { $0 } == 1)
    }

    @Test func fewerThanOneAttemptTrapsNamingTheSetting() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = try? await retry(maxAttempts: 0, clock: FastForwardClock()) { 1 }
        }

        expectStandardError(of: result, contains: "retry(maxAttempts:) must be at least 1, got 0")
    }

    @Test func aNegativeCountTrapsBeforeCallingTheOperation() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = try? await retry(maxAttempts: -1, clock: FastForwardClock()) { () -> Int in
                FileHandle.standardError.write(Data("operation called\n".utf8))
                return 1
            }
        }

        expectStandardError(of: result, contains: "retry(maxAttempts:) must be at least 1, got -1")
        let standardError = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(!standardError.contains("operation called"))
    }

    @Test func worksOnTheContinuousClockFromAnActor() async throws {
        actor Counter {
            var value = 0
            func attempt() throws -> Int {
                value += 1
                if value < 2 { throw Flaky.transient(value) }
                return value
            }
            func run() async throws -> Int {
                try await retry(maxAttempts: 2) { try attempt() }
            }
        }
        #expect(try await Counter().run() == 2)
    }
}
