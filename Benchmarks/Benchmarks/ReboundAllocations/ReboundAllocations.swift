// Allocations per request of the session's paths, on an in-memory transport, and the memory a request holds while it
// waits in backoff, counted by ordo-one/benchmark's malloc interposer. They are deterministic, so CI holds them: `swift package benchmark thresholds check` fails when one grows
// more than 10% over the figures stored in Benchmarks/Thresholds (update them with `swift package
// --allow-writing-to-package-directory benchmark thresholds update --target ReboundAllocations` after a deliberate
// change, and say why in the commit).
import Benchmark
import Foundation
import Rebound
import ReboundTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A transport that answers every request at once with the next status of its list, round and round.
///
/// `@unchecked Sendable`: `count` is read and written only while `lock` is held.
final class InstantTransport: HTTPTransport, @unchecked Sendable {
    let responses: [ResponseHead]
    private let lock = NSLock()
    private var count = 0

    init(statuses: [Int]) {
        responses = statuses.map {
            ResponseHead(url: URL(string: "http://a.example")!, statusCode: $0, headerFields: [])
        }
    }

    func exchange(_ request: URLRequest) async throws -> (Data, ResponseHead) {
        let index = lock.withLock {
            defer { count += 1 }
            return count
        }
        return (Data(), responses[index % responses.count])
    }
}

/// A clock whose sleeps end at once.
struct NoWaitClock: Clock {
    var now: ContinuousClock.Instant { ContinuousClock.now }
    var minimumResolution: Duration { .zero }
    func sleep(until deadline: ContinuousClock.Instant, tolerance: Duration?) async throws {
        try Task.checkCancellation()
    }
}

let url = URL(string: "https://api.example.com/items")!

/// The realistic chain of Docs/Performance.md: five header adapters, a silent logger around the policy, a breaker
/// registry.
func realisticSession(statuses: [Int] = [200], clock: ManualClock? = nil) -> Session {
    let headers: [any RequestAdapter] = (1...5).map { number in
        Adapter.modifying { request, _ in request.setValue("\(number)", forHTTPHeaderField: "X-Header-\(number)") }
    }
    let adapters =
        headers + [CircuitBreakerRegistry(configuration: .init(tripCondition: .consecutiveFailures(Int.max)))]
    let retriers = [
        LoggingRetrier(wrapping: RetryPolicy(retryLimit: 1, backoff: .constant(.seconds(1))), sink: { _ in })
    ]
    if let clock {
        return Session(
            transport: InstantTransport(statuses: statuses), adapters: adapters, retriers: retriers, clock: clock)
    }
    return Session(transport: InstantTransport(statuses: statuses), adapters: adapters, retriers: retriers)
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.mallocCountTotal], warmupIterations: 10, scalingFactor: .kilo, maxDuration: .seconds(5),
        maxIterations: 20, thresholds: [.mallocCountTotal: BenchmarkThresholds(relative: [.p50: 10.0, .p90: 10.0])])

    let sessions: [(String, Session)] = [
        ("NoChain", Session(transport: InstantTransport(statuses: [200]))),
        (
            "OneAdapterOneRetrier",
            Session(
                transport: InstantTransport(statuses: [200]), adapters: [Adapter.modifying { _, _ in }],
                retriers: [RetryPolicy()])
        ),
        ("RealisticChain", realisticSession()),
        (
            "RetriedOnce",
            Session(
                transport: InstantTransport(statuses: [503, 200]), retriers: [RetryPolicy()], clock: NoWaitClock())
        ),
        // A hedged round whose first attempt answers before the delay: the round's stream, the attempt's task and the
        // timer's, which the answer cancels.
        (
            "HedgedAnsweredAtOnce",
            Session(
                transport: InstantTransport(statuses: [200]), retriers: [RetryPolicy()],
                hedging: Hedging(delay: .seconds(1)))
        ),
    ]
    for (name, session) in sessions {
        Benchmark(name) { benchmark in
            for _ in benchmark.scaledIterations {
                blackHole(try? await session.send(url))
            }
        }
    }

    // The bytes a request holds while it waits in a 1 s backoff (allocated and not freed while 1,000 wait at once, on
    // a manual clock, whose sleepers cost more than `Task.sleep`'s): the task-allocator slabs its frames reached and
    // what the chain keeps (Docs/Performance.md, section 4, which explains how a slab fills). Section 4's target, under
    // 4 KiB, is measured on the real clock by ReboundSideBySide's WaitingInBackoff; these hold the figure in CI.
    let waiting: [(String, @Sendable (ManualClock) -> Session)] = [
        (
            "WaitingInBackoff",
            { clock in
                Session(
                    transport: InstantTransport(statuses: [503]),
                    retriers: [RetryPolicy(retryLimit: 1, backoff: .constant(.seconds(1)))], clock: clock)
            }
        ),
        ("WaitingInBackoffRealisticChain", { clock in realisticSession(statuses: [503], clock: clock) }),
    ]
    for (name, makeSession) in waiting {
        Benchmark(
            name,
            configuration: .init(
                metrics: [.memoryLeakedBytes], warmupIterations: 2, scalingFactor: .kilo, maxIterations: 10,
                // 3%: the figure CI enforces, its tolerance included, stays within the ceilings a waiting request is
                // held to (6,500 bytes with one retrier, 9,500 with the realistic chain); the figures repeat exactly.
                thresholds: [.memoryLeakedBytes: BenchmarkThresholds(relative: [.p50: 3.0, .p90: 3.0])])
        ) { benchmark in
            let clock = ManualClock()
            let session = makeSession(clock)
            benchmark.startMeasurement()
            let tasks = benchmark.scaledIterations.map { _ in Task { _ = try? await session.send(url) } }
            try await clock.waitForSleepers(tasks.count)
            benchmark.stopMeasurement()
            clock.advance(by: .seconds(1))
            for task in tasks { await task.value }
        }
    }

    // The large allocations (a page or more) made while 1,000 waits queued behind a host's one place time out: a wait
    // leaves its queue in constant time and copies nothing, so the figure stays near zero; a queue copied as each wait
    // leaves it makes one large allocation per wait, and the thousandth waits behind all the copies before it.
    Benchmark(
        "QueueTimingOut",
        configuration: .init(
            metrics: [.mallocCountLarge], warmupIterations: 2, scalingFactor: .kilo, maxIterations: 10,
            thresholds: [.mallocCountLarge: BenchmarkThresholds(absolute: [.p50: 50, .p90: 50])])
    ) { benchmark in
        let clock = ManualClock()
        let waits = benchmark.scaledIterations.count
        let limiter = ConcurrencyLimiter(
            configuration: .init(limit: .fixed(1), maximumQueued: waits, queueTimeout: .seconds(1)), clock: clock)
        let transport = ScriptedTransport([.hang])
        let session = Session(transport: transport, adapters: [limiter], clock: clock)
        let holder = Task { _ = try? await session.send(url) }
        try await transport.waitForRequests(1)
        let tasks = (0..<waits).map { _ in Task { _ = try? await session.send(url) } }
        try await clock.waitForSleepers(waits)
        benchmark.startMeasurement()
        clock.advance(by: .seconds(1))
        for task in tasks { await task.value }
        benchmark.stopMeasurement()
        holder.cancel()
        await holder.value
    }
}
