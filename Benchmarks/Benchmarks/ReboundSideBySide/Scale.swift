import Foundation
import Rebound
import SideBySide
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The part of a benchmark's iteration that ordo-one measures: its memory metrics (memoryLeakedBytes: bytes allocated
/// and not freed) are taken between `start` and `stop`.
struct MeasurementWindow {
    let start: () -> Void
    let stop: () -> Void

    static var none: MeasurementWindow { MeasurementWindow(start: {}, stop: {}) }
}

/// What `count` tasks, each sleeping in `body`, hold: resident bytes per task and the process's threads, before and
/// while they wait. The heap they hold is what ordo-one measures over `window`, which closes once every task sleeps.
private func waiting(
    _ count: Int, started: Counter, window: MeasurementWindow, _ body: @escaping @Sendable () async -> Void
) async throws -> (resident: Double, threadsBefore: Int, threadsDuring: Int) {
    let residentBefore = residentBytes()
    let threadsBefore = threadCount()
    var resident = residentBefore
    var threadsDuring = threadsBefore
    window.start()
    try await withThrowingTaskGroup(of: Void.self) { group in
        for _ in 0..<count { group.addTask { await body() } }
        // Sample while every task is asleep.
        while started.current < count { try await Task.sleep(for: .milliseconds(5)) }
        window.stop()
        for _ in 0..<5 {
            try await Task.sleep(for: .milliseconds(20))
            resident = max(resident, residentBytes())
            threadsDuring = max(threadsDuring, threadCount())
        }
        group.cancelAll()
        try await group.waitForAll()
    }
    return ((resident - residentBefore) / Double(count), threadsBefore, threadsDuring)
}

/// `count` requests, each waiting in a 1 s backoff after its first attempt failed.
func waitingRequests(_ count: Int, window: MeasurementWindow = .none) async throws -> (
    resident: Double, threadsBefore: Int, threadsDuring: Int
) {
    let request = URLRequest(url: URL(string: "http://memory.invalid/item")!)
    let failures = Counter()
    let session = Session(
        transport: FailingTransport(),
        retriers: [
            Retrier { _, _ in
                _ = failures.next()
                return .retryWithDelay(.seconds(1))
            }
        ])
    return try await waiting(count, started: failures, window: window) { _ = try? await session.send(request) }
}

/// `count` requests of the realistic chain (five header adapters, `RetryPolicy` with a 1 s backoff in a silent
/// `LoggingRetrier`, a `CircuitBreakerRegistry` that does not trip) each waiting after its first attempt failed: a
/// chain with observers and composite interceptors, the deepest the failure path gets.
func waitingRealisticRequests(_ count: Int, window: MeasurementWindow = .none) async throws -> (
    resident: Double, threadsBefore: Int, threadsDuring: Int
) {
    let request = URLRequest(url: URL(string: "http://memory.invalid/item")!)
    let attempts = Counter()
    let breakers = CircuitBreakerRegistry(
        configuration: CircuitBreaker.Configuration(tripCondition: .consecutiveFailures(count + 1)))
    let session = Session(
        transport: FailingTransport(sent: attempts),
        adapters: headerAdapters + [breakers],
        retriers: [LoggingRetrier(wrapping: RetryPolicy(backoff: .constant(.seconds(1))), sink: { _ in })])
    return try await waiting(count, started: attempts, window: window) { _ = try? await session.send(request) }
}

/// `count` requests whose one attempt waits 1 s in the transport: the deepest the chain's frames get.
func requestsInFlight(_ count: Int, window: MeasurementWindow = .none) async throws -> (
    resident: Double, threadsBefore: Int, threadsDuring: Int
) {
    let started = Counter()
    let session = Session(transport: SleepingTransport(started: started))
    let request = URLRequest(url: URL(string: "http://memory.invalid/item")!)
    return try await waiting(count, started: started, window: window) { _ = try? await session.send(request) }
}

/// A transport that sleeps 1 s, then answers 200.
struct SleepingTransport: HTTPTransport {
    let started: Counter

    func exchange(_ request: URLRequest) async throws -> (Data, ResponseHead) {
        _ = started.next()
        try await Task.sleep(for: .seconds(1))
        return MemoryTransport().ok
    }
}

/// `count` bare tasks, each sleeping 1 s: what any waiting task costs, without Rebound.
func waitingTasks(_ count: Int, window: MeasurementWindow = .none) async throws -> (
    resident: Double, threadsBefore: Int, threadsDuring: Int
) {
    let started = Counter()
    return try await waiting(count, started: started, window: window) {
        _ = started.next()
        try? await Task.sleep(for: .seconds(1))
    }
}

/// A transport whose every call fails with 503, counting the calls when given a counter.
struct FailingTransport: HTTPTransport {
    var sent: Counter?
    let unavailable = MemoryTransport().unavailable

    func exchange(_ request: URLRequest) async throws -> (Data, ResponseHead) {
        _ = sent?.next()
        return unavailable
    }
}

/// Section 4 without its heap figures, which the `Waiting…` benchmarks measure with ordo-one's memoryLeakedBytes:
/// resident memory and threads while 1,000 and 10,000 requests wait at once.
func scale() async throws -> Section {
    _ = try await waitingRequests(1_000)  // warm up the allocator and the thread pool
    var rows: [Row] = []
    var threadsGrew = false
    var threadsAtThousand = 0
    for count in [1_000, 10_000] {
        let result = try await waitingRequests(count)
        if count == 1_000 { threadsAtThousand = result.threadsDuring }
        if count == 10_000 { threadsGrew = result.threadsDuring > threadsAtThousand + 2 }
        rows.append(waitingRow("\(count) requests waiting in a 1 s backoff", result))
    }
    rows.append(
        waitingRow(
            "10000 requests of the realistic chain waiting in a 1 s backoff",
            try await waitingRealisticRequests(10_000)))
    rows.append(
        waitingRow("10000 requests whose attempt waits 1 s in the transport", try await requestsInFlight(10_000)))
    rows.append(waitingRow("10000 bare tasks in Task.sleep (reference)", try await waitingTasks(10_000)))
    return Section(
        title: "4. Scale: requests waiting in backoff at once (real clock)",
        target: "threads not growing with the number of requests (the heap target, under 4 KiB per waiting "
            + "request, is the WaitingInBackoff benchmark's)",
        met: !threadsGrew,
        note: "resident: /proc/self/statm growth per waiting request; the heap each holds is the memoryLeakedBytes "
            + "of the Waiting… benchmarks (bytes allocated and not freed while 1,000 wait)",
        columns: ["resident bytes/waiting", "threads before", "threads while waiting"],
        rows: rows)
}

func sleepAccuracy(samplesPerDelay: Int) async throws -> Section {
    var rows: [Row] = []
    var worstMedian = 0.0
    for delay in [Duration.milliseconds(1), .milliseconds(10), .milliseconds(50)] {
        let lateness = LatenessRecorder(requested: delay)
        let session = Session(
            transport: MemoryTransport(failsEveryOtherCall: true),
            interceptor: Interceptor(
                adapters: [
                    Adapter { request, context in
                        if context.attempt == 2 { lateness.attemptStarted() }
                        return request
                    }
                ],
                retriers: [Retrier { request, _ in request.retryCount == 0 ? .retryWithDelay(delay) : .doNotRetry }],
                observers: [lateness]))
        for _ in 0..<samplesPerDelay {
            _ = try await session.send(URL(string: "http://memory.invalid/item")!)
        }
        let values = lateness.values.map { $0 / 1_000 }
        worstMedian = max(worstMedian, median(values))
        rows.append(
            Row(
                name: "backoff of \(Int(delay.nanoseconds / 1e6)) ms (\(values.count) samples)",
                figures: ["median late (µs)": median(values), "p99 late (µs)": percentile(values, 99)]))
    }
    return Section(
        title: "5. Sleep accuracy: requested against actual backoff delay (ContinuousClock)",
        target: "reported", met: nil,
        note: "lateness is from the observer's retry decision to the next attempt's adapter, minus the delay",
        columns: ["median late (µs)", "p99 late (µs)"], rows: rows)
}

/// Records when each retry was decided and when the next attempt started.
final class LatenessRecorder: AttemptObserver {
    private let requested: Duration
    private let state = Mutex<(decided: ContinuousClock.Instant?, lateness: [Double])>((nil, []))

    init(requested: Duration) { self.requested = requested }

    func attemptDidFinish(_ outcome: AttemptOutcome) async {
        if case .retry = outcome.decision { state.withLock { $0.decided = .now } }
    }

    func attemptStarted() {
        let now = ContinuousClock.now
        state.withLock { state in
            guard let decided = state.decided else { return }
            state.lateness.append((now - decided - requested).nanoseconds)
            state.decided = nil
        }
    }

    var values: [Double] { state.withLock { $0.lateness } }
}

/// A row of the scale section.
private func waitingRow(_ name: String, _ result: (resident: Double, threadsBefore: Int, threadsDuring: Int)) -> Row {
    Row(
        name: name,
        figures: [
            "resident bytes/waiting": result.resident, "threads before": Double(result.threadsBefore),
            "threads while waiting": Double(result.threadsDuring),
        ])
}
