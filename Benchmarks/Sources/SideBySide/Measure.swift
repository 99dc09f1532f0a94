import Foundation

/// What one timed run of `count` operations cost.
public struct Sample: Sendable {
    public var count: Int
    public var wall: Duration
    public var cpu: Duration

    public init(count: Int, wall: Duration, cpu: Duration) {
        self.count = count
        self.wall = wall
        self.cpu = cpu
    }

    public var wallPerOperation: Double { wall.nanoseconds / Double(count) }
    public var cpuPerOperation: Double { cpu.nanoseconds / Double(count) }
    public var operationsPerSecond: Double { Double(count) / (wall.nanoseconds / 1e9) }
}

extension Duration {
    public var nanoseconds: Double {
        Double(components.seconds) * 1e9 + Double(components.attoseconds) / 1e9
    }
}

/// The process's CPU time so far, user and system, over all its threads.
public func processCPUTime() -> Duration {
    var usage = rusage()
    #if os(Linux)
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    #else
        getrusage(RUSAGE_SELF, &usage)
    #endif
    func duration(_ time: timeval) -> Duration {
        .seconds(Int64(time.tv_sec)) + .microseconds(Int64(time.tv_usec))
    }
    return duration(usage.ru_utime) + duration(usage.ru_stime)
}

/// Runs `body` and measures its wall time and the process's CPU time (allocations are ordo-one's metrics' job).
public func measure(count: Int, _ body: () async throws -> Void) async rethrows -> Sample {
    let clock = ContinuousClock()
    let cpuStart = processCPUTime()
    let start = clock.now
    try await body()
    let wall = clock.now - start
    return Sample(
        count: count, wall: wall, cpu: processCPUTime() - cpuStart)
}

/// One contender in a side-by-side comparison: a name and a run of `count` operations.
public struct Contender {
    public let name: String
    public let run: (_ count: Int) async throws -> Sample

    public init(name: String, run: @escaping (_ count: Int) async throws -> Sample) {
        self.name = name
        self.run = run
    }

    /// A contender whose run is `count` calls of `operation`, `inFlight` at a time (``concurrently(_:inFlight:_:)``),
    /// measured as a whole.
    public static func concurrent(
        _ name: String, inFlight: Int, _ operation: @escaping @Sendable () async throws -> Void
    ) -> Contender {
        Contender(name: name) { count in
            try await measure(count: count) { try await concurrently(count, inFlight: inFlight, operation) }
        }
    }
}

/// What `work` costs per call over `baseline`, in nanoseconds (never below zero), both called one at a time in a
/// loop: the median wall time per call of each over `rounds` interleaved rounds of `count` calls, after one warm-up
/// run of each. A chain's own work in memory, measured as the difference between a session on an in-memory
/// transport and that transport called directly.
public func extraWallPerCall(
    of work: @escaping @Sendable () async throws -> Void, over baseline: @escaping @Sendable () async throws -> Void,
    rounds: Int, count: Int
) async throws -> Double {
    let direct = Contender(name: "baseline") { count in
        try await measure(count: count) { for _ in 0..<count { try await baseline() } }
    }
    let chain = Contender(name: "work") { count in
        try await measure(count: count) { for _ in 0..<count { try await work() } }
    }
    _ = try await direct.run(count)
    _ = try await chain.run(count)
    let samples = try await interleaved(rounds: rounds, count: count, [direct, chain])
    return max(samples["work"]!.medianWall - samples["baseline"]!.medianWall, 0)
}

/// Runs every contender once per round and returns each one's samples; medians of interleaved rounds are what the
/// report shows, because these machines are noisy.
///
/// The order changes from round to round: it rotates, and every other round runs backwards, so that no contender
/// always runs first or always follows the same other one (a fixed order was measured to favour the first one by up
/// to 10% over loopback).
public func interleaved(rounds: Int, count: Int, _ contenders: [Contender]) async throws -> [String: [Sample]] {
    var samples: [String: [Sample]] = [:]
    for round in 0..<rounds {
        var order = contenders.indices.map { contenders[($0 + round / 2) % contenders.count] }
        if round % 2 == 1 { order.reverse() }
        for contender in order {
            samples[contender.name, default: []].append(try await contender.run(count))
        }
    }
    return samples
}

/// The median; NaN for no values.
public func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    return sorted.count % 2 == 1
        ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

/// The `p`th percentile (0 to 100), the nearest rank; NaN for no values.
public func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    let rank = Int((p / 100 * Double(sorted.count - 1)).rounded())
    return sorted[min(max(rank, 0), sorted.count - 1)]
}

/// The standard error of the median of `values`, estimated from their spread: 1.2533 σ / √n, with σ taken from the
/// interquartile range (IQR / 1.349), so that a few wild rounds do not inflate it. NaN for fewer than four values.
public func standardErrorOfMedian(_ values: [Double]) -> Double {
    guard values.count >= 4 else { return .nan }
    let sigma = (percentile(values, 75) - percentile(values, 25)) / 1.349
    return 1.2533 * sigma / Double(values.count).squareRoot()
}

extension Array where Element == Sample {
    public var medianWall: Double { median(map(\.wallPerOperation)) }
    public var medianCPU: Double { median(map(\.cpuPerOperation)) }
    public var medianRate: Double { median(map(\.operationsPerSecond)) }
}

/// The resident memory of the process in bytes, from /proc on Linux; 0 elsewhere.
public func residentBytes() -> Double {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Double(fields[1]) else { return 0 }
    return pages * Double(sysconf(Int32(_SC_PAGESIZE)))
}

/// The number of threads of the process, from /proc on Linux; 0 elsewhere.
public func threadCount() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in text.split(separator: "\n") where line.hasPrefix("Threads:") {
        return Int(line.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces)) ?? 0
    }
    return 0
}

/// Runs `count` operations, `inFlight` at a time.
public func concurrently(
    _ count: Int, inFlight: Int, _ operation: @escaping @Sendable () async throws -> Void
) async throws {
    try await withThrowingTaskGroup(of: Void.self) { group in
        let perWorker = count / inFlight
        for _ in 0..<inFlight {
            group.addTask { for _ in 0..<perWorker { try await operation() } }
        }
        try await group.waitForAll()
    }
}

/// Keeps the thread busy for `duration`: a calibration contender's stand-in for a chain's own work, which tells what
/// that much client work costs end to end, whoever does it.
public func busyWork(for duration: Duration) {
    let clock = ContinuousClock()
    let end = clock.now + duration
    while clock.now < end {}
}
