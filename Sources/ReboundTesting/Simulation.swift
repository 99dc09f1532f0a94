import Foundation
import Rebound

/// Runs asynchronous work one job at a time on one thread, in the order the jobs became ready, so that a simulation
/// on a ``ManualClock`` is the same on every run: the same inputs give the same interleaving, the same outcomes, the
/// same numbers.
///
/// Everything ``run(_:)`` starts runs on the simulation's thread: its child tasks (they inherit the executor
/// preference), the tasks Rebound starts for itself (a request's deadline timer and the steps that race it, a
/// backoff that a breaker can end, a queue timeout, a token refresh), and the tasks the body starts with
/// `Task(executorPreference:)` and ``executor``. A task started with plain `Task { }` runs on Swift's global executor
/// instead, outside the simulation's order.
///
/// Nothing else may bring randomness in: give every part that draws (a jittered backoff, a breaker's break, a throttle)
/// a seeded `RandomSource`, and time everything on a ``ManualClock``, which the body advances between ``settle()``s.
/// Dictionaries iterate in an order that changes from process to process unless the environment sets
/// `SWIFT_DETERMINISTIC_HASHING=1`; Rebound's parts iterate none where the order could change an outcome.
///
/// ```swift
/// let simulation = Simulation()
/// let outcomes = await simulation.run {
///     // start requests, then: await simulation.settle(); clock.advance(to: next event); ...
/// }
/// ```
@available(macOS 15.0, iOS 18.0, macCatalyst 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
public final class Simulation: Sendable {
    /// The executor every job of the simulation runs on: for tasks the body starts itself, with
    /// `Task(executorPreference: simulation.executor) { … }`.
    public var executor: any TaskExecutor { serial }
    private let serial: SerialJobQueue

    /// Creates a simulation with a thread of its own, which ends when the simulation is released and no job is left.
    public init() {
        serial = SerialJobQueue()
    }

    deinit {
        serial.stopWhenIdle()
    }

    /// Runs `body` on the simulation's thread, with every task started from it (and every task Rebound starts for
    /// it) on the same thread, and returns its result.
    public func run<Result: Sendable>(_ body: sending @escaping () async -> Result) async -> Result {
        let executor = executor
        return await Task(executorPreference: executor) {
            await Spawn.$executor.withValue(executor) { await body() }
        }.value
    }

    /// Suspends until every other job that is ready has run, and those they made ready: the simulation is settled,
    /// each of its tasks waiting on the clock or on another task. Call it from the simulation's body.
    public func settle() async {
        while serial.hasReadyJobs { await Task.yield() }
    }
}

/// A task executor with a thread of its own that runs its jobs one at a time, first in, first out.
@available(macOS 15.0, iOS 18.0, macCatalyst 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
private final class SerialJobQueue: TaskExecutor, @unchecked Sendable {
    // Invariant: `jobs` and `stopping` are read and written only with `condition` locked; the thread runs jobs outside
    // the lock, one at a time.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var head = 0
    private var stopping = false

    init() {
        let thread = Thread { [self] in loop() }
        thread.name = "ReboundTesting.Simulation"
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Whether a job waits to run.
    var hasReadyJobs: Bool {
        condition.lock()
        defer { condition.unlock() }
        return head < jobs.count
    }

    /// Lets the thread end once no job is left.
    func stopWhenIdle() {
        condition.lock()
        stopping = true
        condition.signal()
        condition.unlock()
    }

    private func loop() {
        while true {
            condition.lock()
            while head == jobs.count, !stopping { condition.wait() }
            guard head < jobs.count else {
                condition.unlock()
                return
            }
            let job = jobs[head]
            head += 1
            if head > 1_024, head * 2 > jobs.count {
                // Drop the jobs already run, now and then, rather than on every job.
                jobs.removeFirst(head)
                head = 0
            }
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
