// Rebound side by side with plain URLSession and hand-written code, on ordo-one/benchmark: each benchmark runs its
// contenders in interleaved rounds inside one iteration (these machines are noisy; a pair measured in the same round
// sees the same noise), prints its section as a table with its target (met or MISSED; not with --no-progress, which
// silences the benchmarks' output), writes it into Benchmarks/results.json, and records its headline figures as
// metrics: one value per round for a ratio, so that ordo-one's percentiles are the rounds' (its p50 is their median;
// for a ratio, which prefers larger values, its p25 is the upper quartile). Ratios are in thousandths (949 is 0.949×),
// CPU and lateness in µs, in-memory costs in ns. Memory is measured by ordo-one's malloc interposer (memoryLeakedBytes,
// per request where the scaling factor is 1,000). Timings, so never run in CI: see Docs/Performance.md.
//
//     swift package --package-path Benchmarks benchmark --target ReboundSideBySide [--filter EndToEnd]
//
// `REBOUND_BENCH_QUICK=1` for a first look with fewer rounds (not written into results.json).
import Benchmark
import Foundation
import Rebound
import SideBySide

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How long each benchmark runs: the full run, or a first look.
struct Settings {
    let quick = ProcessInfo.processInfo.environment["REBOUND_BENCH_QUICK"] != nil
    var rounds: Int { quick ? 3 : 9 }
    var networkRounds: Int { quick ? 9 : 61 }
    /// Rounds with 64 requests in flight, where a round's ratio spreads about four times as wide as one at a time: three
    /// times as many, so that a run's median resolves about ±1% (its standard error is printed beside it).
    var concurrentRounds: Int { quick ? 9 : 183 }
}

/// One figure of a section recorded as an ordo-one metric.
struct Headline {
    /// The metric's name, without spaces.
    let metric: String
    /// The row's name, as the section names it.
    let row: String
    let column: String
    /// What the figure is multiplied by before it is rounded to an integer: 1,000 for a ratio.
    var scale: Double = 1
    var prefersLarger = false

    var benchmarkMetric: BenchmarkMetric {
        .custom(metric, polarity: prefersLarger ? .prefersLarger : .prefersSmaller, useScalingFactor: false)
    }

    /// A ratio of a row's requests per second to its baseline's, one value per round.
    static func ratio(_ metric: String, row: String, column: String) -> Headline {
        Headline(metric: metric, row: row, column: column, scale: 1_000, prefersLarger: true)
    }
}

/// Registers a benchmark that runs `sections` once and records `headlines` from them.
func sideBySide(
    _ name: String, headlines: [Headline], _ sections: @escaping () async throws -> [Section]
) {
    Benchmark(
        name, configuration: .init(metrics: headlines.map(\.benchmarkMetric), warmupIterations: 0, maxIterations: 1)
    ) { benchmark in
        let sections = try await sections()
        for section in sections { printTable(section) }
        for headline in headlines {
            guard let row = sections.lazy.flatMap(\.rows).first(where: { $0.name == headline.row }) else {
                benchmark.error("\(name): no row named \(headline.row)")
                return
            }
            let values = row.rounds[headline.column] ?? row.figures[headline.column].map { [$0] } ?? []
            for value in values where value.isFinite {
                benchmark.measurement(headline.benchmarkMetric, Int((value * headline.scale).rounded()))
            }
        }
        ResultsFile.merge(sections)
    }
}

/// Benchmarks/results.json: the sections of the latest run of each benchmark, for Docs/Performance.md to cite.
enum ResultsFile {
    static let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("results.json").path

    static func merge(_ sections: [Section]) {
        // A first look is not worth keeping: the file holds full runs only.
        guard !Settings().quick else { return }
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        let existing = (try? Data(contentsOf: URL(fileURLWithPath: path))).flatMap {
            try? decoder.decode(Report.self, from: $0)
        }
        var merged = existing?.sections.filter { old in !sections.contains { $0.title == old.title } } ?? []
        merged += sections
        merged.sort { $0.title.localizedStandardCompare($1.title) == .orderedAscending }
        let report = Report(
            date: ISO8601DateFormatter().string(from: Date()), machine: machineDescription(),
            command: "swift package --package-path Benchmarks benchmark --target ReboundSideBySide",
            sections: merged)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        do {
            try encoder.encode(report).write(to: URL(fileURLWithPath: path))
        } catch {
            // On macOS the plugin's sandbox refuses it without --allow-writing-to-package-directory.
            print("could not write \(path): \(error)")
        }
    }
}

let benchmarks: @Sendable () -> Void = {
    runEntryPointIfAsked()
    let settings = Settings()
    Benchmark.defaultConfiguration = .init(metrics: [], warmupIterations: 0, maxDuration: .seconds(3_600))

    // 1. What the chain costs in memory.
    let adapterRows = [
        ("direct", "transport called directly"), ("adapters0", "Session, 0 no-op adapters"),
        ("adapters1", "Session, 1 no-op adapters"), ("adapters10", "Session, 10 no-op adapters"),
        ("adapters100", "Session, 100 no-op adapters"), ("twice", "transport called twice"),
        ("retriers1", "Session, 1 retriers, fails once"), ("retriers10", "Session, 10 retriers, fails once"),
        ("headersDirect", "5 headers set directly, then the transport"),
        ("headerAdapters", "Session, 5 adapters, .modifying { }"),
        ("headerAdaptersCopying", "Session, 5 adapters, var request = request"),
        ("realisticInMemory", "Session, realistic chain of section 2"),
    ]
    sideBySide(
        "ChainCost",
        headlines: adapterRows.map { Headline(metric: "ns_\($0.0)", row: $0.1, column: "ns/request") }
    ) {
        try await chainCost(rounds: settings.rounds, count: settings.quick ? 20_000 : 100_000)
    }

    // 2. End to end over loopback against URLSession, with the server's capacity beside it.
    var endToEndHeadlines: [Headline] = []
    for inFlight in [1, 64] {
        let rows = [
            ("bare", "Session, no interceptor"), ("adapters", "Session, 5 header adapters"),
            ("adaptersPolicy", "Session, 5 adapters + RetryPolicy"), ("realistic", "Session, realistic chain"),
            ("calibrationBare", replayName), ("calibrationRealistic", busyName),
            ("calibrationRealisticMemory", realisticReplayName),
        ]
        for (metric, row) in rows {
            endToEndHeadlines.append(
                .ratio(
                    "ratio_\(metric)_\(inFlight)", row: "\(row), \(inFlight) in flight", column: "Session/URLSession"))
        }
        for (metric, row) in [("URLSession", "URLSession"), ("realistic", "Session, realistic chain")] {
            endToEndHeadlines.append(
                Headline(
                    metric: "cpu_us_\(metric)_\(inFlight)", row: "\(row), \(inFlight) in flight",
                    column: "client CPU µs/req"))
        }
    }
    endToEndHeadlines.append(
        Headline(
            metric: "server_requests_per_s", row: "LoopbackServer (child process)", column: "requests/s",
            prefersLarger: true))
    sideBySide("EndToEnd", headlines: endToEndHeadlines) {
        let base = try ChildServer.url()
        let capacity = serverCapacity(port: base.port!, threads: 4, seconds: settings.quick ? 1 : 3)
        let section = try await endToEnd(
            base: base, rounds: settings.networkRounds, concurrentRounds: settings.concurrentRounds,
            count: settings.quick ? 128 : 256)
        let fastest = section.rows.map { $0.figures["requests/s"] ?? 0 }.max() ?? 0
        return [
            section,
            Section(
                title: "2s. Server capacity: the loopback server against a raw-socket client (4 connections)",
                target: "well above the fastest URLSession rate of section 2, so that the server is not the bottleneck",
                met: capacity > 1.5 * fastest,
                note: String(format: "%.1f× the fastest client rate", capacity / max(fastest, 1)),
                columns: ["requests/s"],
                rows: [Row(name: "LoopbackServer (child process)", figures: ["requests/s": capacity])]),
        ]
    }

    // 3. The retry path against a hand-written loop.
    sideBySide(
        "RetryPath",
        headlines: [
            .ratio("ratio_session_hand", row: "Session with RetryPolicy(backoff: .zero)", column: "Session/hand"),
            Headline(metric: "cpu_us_hand", row: "hand-written retry loop on URLSession", column: "client CPU µs/req"),
            Headline(
                metric: "cpu_us_session", row: "Session with RetryPolicy(backoff: .zero)", column: "client CPU µs/req"),
        ]
    ) {
        [
            try await retryPath(
                base: try ChildServer.url(), rounds: settings.networkRounds, count: settings.quick ? 64 : 192)
        ]
    }

    // 6. The transport against URLSession.data(for:).
    var transportHeadlines: [Headline] = []
    for inFlight in [1, 64] {
        transportHeadlines += [
            .ratio(
                "ratio_own_\(inFlight)", row: "URLSessionHTTPTransport(), its own session, \(inFlight) in flight",
                column: "ratio"),
            .ratio(
                "ratio_theirs_\(inFlight)",
                row: "URLSessionHTTPTransport(session:), a task delegate, \(inFlight) in flight", column: "ratio"),
        ]
    }
    sideBySide("TransportCost", headlines: transportHeadlines) {
        [
            try await transportCost(
                base: try ChildServer.url(), rounds: settings.networkRounds,
                concurrentRounds: settings.concurrentRounds, count: settings.quick ? 128 : 256)
        ]
    }

    // 4. Resident memory and threads while many requests wait (the heap: the Waiting… benchmarks below).
    var scaleHeadlines: [Headline] = []
    for (metric, row) in [
        ("1000", "1000 requests waiting in a 1 s backoff"), ("10000", "10000 requests waiting in a 1 s backoff"),
        ("realistic10000", "10000 requests of the realistic chain waiting in a 1 s backoff"),
        ("inTransport10000", "10000 requests whose attempt waits 1 s in the transport"),
        ("bareTasks10000", "10000 bare tasks in Task.sleep (reference)"),
    ] {
        scaleHeadlines += [
            Headline(metric: "resident_bytes_\(metric)", row: row, column: "resident bytes/waiting"),
            Headline(metric: "threads_\(metric)", row: row, column: "threads while waiting"),
        ]
    }
    sideBySide("Scale", headlines: scaleHeadlines) { [try await scale()] }

    // The heap a waiting request holds, on the real clock: bytes allocated and not freed while 1,000 wait.
    let waiting: [(String, (Int, MeasurementWindow) async throws -> Void)] = [
        ("WaitingInBackoff", { _ = try await waitingRequests($0, window: $1) }),
        ("WaitingInBackoffRealisticChain", { _ = try await waitingRealisticRequests($0, window: $1) }),
        ("WaitingInTransport", { _ = try await requestsInFlight($0, window: $1) }),
        ("WaitingBareTasks", { _ = try await waitingTasks($0, window: $1) }),
    ]
    for (name, run) in waiting {
        Benchmark(
            name,
            configuration: .init(
                metrics: [.memoryLeakedBytes], warmupIterations: 1, scalingFactor: .kilo,
                maxIterations: settings.quick ? 2 : 5)
        ) { benchmark in
            try await run(
                1_000,
                MeasurementWindow(start: { benchmark.startMeasurement() }, stop: { benchmark.stopMeasurement() }))
        }
    }

    // 5. How late a backoff sleep ends.
    var sleepHeadlines: [Headline] = []
    for delay in [1, 10, 50] {
        let row = "backoff of \(delay) ms (\(settings.quick ? 30 : 100) samples)"
        sleepHeadlines += [
            Headline(metric: "late_us_median_\(delay)ms", row: row, column: "median late (µs)"),
            Headline(metric: "late_us_p99_\(delay)ms", row: row, column: "p99 late (µs)"),
        ]
    }
    sideBySide("SleepAccuracy", headlines: sleepHeadlines) {
        [try await sleepAccuracy(samplesPerDelay: settings.quick ? 30 : 100)]
    }

    // 7. Memory over a long run: 10,000 requests of warm-up, then 1,000 per iteration; the heap each keeps for good
    // (memoryLeakedBytes, per request) and the resident memory's growth over the first measured iteration's, in
    // thousandths (the target: at most 100 after 100,000 requests, that is p100).
    let soakIterations = settings.quick ? 3 : 90
    for name in soakNames {
        let growth = BenchmarkMetric.custom(
            "resident_growth_permille", polarity: .prefersSmaller, useScalingFactor: false)
        let state = SoakState()
        Benchmark(
            name,
            configuration: .init(
                metrics: [.memoryLeakedBytes, growth], warmupIterations: settings.quick ? 1 : 10, scalingFactor: .kilo,
                maxIterations: soakIterations)
        ) { benchmark in
            let iteration = state.nextIteration()
            let warmups = benchmark.configuration.warmupIterations
            if state.send == nil { state.send = soakContender(name, base: try ChildServer.url()) }
            guard let send = state.send else { return }
            if iteration == warmups + 1 { state.early = residentBytes() }
            for _ in benchmark.scaledIterations { try await send() }
            guard iteration > warmups else { return }
            let ratio = residentBytes() / max(state.early, 1)
            benchmark.measurement(growth, Int(((ratio - 1) * 1_000).rounded()))
            if iteration == warmups + soakIterations {
                print(
                    "\(name): resident after \(soakIterations * 1_000) more requests / before: "
                        + String(format: "%.3f", ratio)
                        + (name == "Soak_RealisticChainInMemory"
                            ? (ratio <= 1.10 ? " → met (≤ 1.10)" : " → MISSED (≤ 1.10)") : ""))
            }
        }
    }
}

/// A soak benchmark's own count of its iterations (warm-up included) and its resident memory when measuring began.
/// ordo-one runs a benchmark's iterations one after another, so nothing else touches it meanwhile.
final class SoakState {
    private var iterations = 0
    var early = 0.0
    /// The contender, made on the first iteration (the server starts with the first benchmark that needs it).
    var send: (@Sendable () async throws -> Void)?

    func nextIteration() -> Int {
        iterations += 1
        return iterations
    }
}
