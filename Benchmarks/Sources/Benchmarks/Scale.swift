import Foundation
import Rebound
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Measures memory and threads while `count` requests wait in a 1 s backoff on the real clock.
private func waiting(_ count: Int) async throws -> (bytesPerRequest: Double, threadsBefore: Int, threadsDuring: Int) {
    let request = URLRequest(url: URL(string: "http://memory.invalid/item")!)
    let failures = Counter()
    let session = Session(
        transport: MemoryTransport(failsEveryOtherCall: true),
        interceptor: Retrier { _, _ in
            _ = failures.next()
            return .retryWithDelay(.seconds(1))
        })
    // Every request's first call must fail: the transport alternates, so give each request its own transport call
    // pattern by sending them all before any retry (they all wait a second).
    let alwaysFailing = Session(
        transport: FailingTransport(), interceptor: session.interceptor, clock: ContinuousClock())
    let baseline = residentBytes()
    let threadsBefore = threadCount()
    var peak = baseline
    var threadsDuring = threadsBefore
    try await withThrowingTaskGroup(of: Void.self) { group in
        for _ in 0..<count {
            group.addTask { _ = try? await alwaysFailing.send(request) }
        }
        // Sample while every request is asleep in its backoff.
        while failures.current < count { try await Task.sleep(for: .milliseconds(5)) }
        for _ in 0..<10 {
            peak = max(peak, residentBytes())
            threadsDuring = max(threadsDuring, threadCount())
            try await Task.sleep(for: .milliseconds(20))
        }
        group.cancelAll()
        try await group.waitForAll()
    }
    return ((peak - baseline) / Double(count), threadsBefore, threadsDuring)
}

/// A transport whose every call fails with 503.
struct FailingTransport: HTTPTransport {
    let unavailable = MemoryTransport().unavailable

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) { unavailable }
}

func scale() async throws -> Section {
    _ = try await waiting(1_000)  // warm up the allocator and the thread pool
    var rows: [Row] = []
    var worst = 0.0
    var threadsGrew = false
    var threadsAtThousand = 0
    for count in [1_000, 10_000] {
        let result = try await waiting(count)
        worst = max(worst, count == 10_000 ? result.bytesPerRequest : 0)
        if count == 1_000 { threadsAtThousand = result.threadsDuring }
        if count == 10_000 { threadsGrew = result.threadsDuring > threadsAtThousand + 2 }
        rows.append(
            Row(
                name: "\(count) requests waiting in a 1 s backoff",
                figures: [
                    "bytes/waiting request": result.bytesPerRequest, "threads before": Double(result.threadsBefore),
                    "threads while waiting": Double(result.threadsDuring),
                ]))
    }
    return Section(
        title: "4. Scale: requests waiting in backoff at once (real clock)",
        target: "under 4 KiB per waiting request; threads not growing with the number of requests",
        met: worst < 4_096 && !threadsGrew, note: "resident memory growth from /proc/self/statm, divided by requests",
        columns: ["bytes/waiting request", "threads before", "threads while waiting"], rows: rows)
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
