// Rebound on AsyncHTTPClient against plain AsyncHTTPClient, side by side, on ordo-one/benchmark, over loopback to a
// server in a child process (so that the CPU time measured is the client's alone):
//
//     swift package --package-path Integrations/ReboundAsyncHTTPClient/Benchmarks benchmark
//
// `InFlight1` and `InFlight64` run every contender in interleaved rounds inside one iteration (these machines are
// noisy; a pair measured in the same round sees the same noise) and print, for each, its requests per second over
// plain AsyncHTTPClient's (the median of the rounds' ratios, with their quartiles) and its client CPU per request over
// plain AsyncHTTPClient's; their metrics are each round's ratio in thousandths (ordo-one's p50 is the median) and each
// contender's client CPU per request in µs. `SeamTypes` prints what building a `URLRequest`, an `HTTPURLResponse`
// and AsyncHTTPClient's own request costs here (ns per value). `REBOUND_BENCH_QUICK=1` for a first look;
// `REBOUND_TOOL="profile INDEX COUNT"` on the built executable runs one contender alone for `perf` (see the guide).
import AsyncHTTPClient
import Benchmark
import Foundation
import Rebound
import ReboundAsyncHTTPClient
import ReboundTesting
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// MARK: - The server, in a child process

/// The loopback server: this very executable, told by the environment to serve (ordo-one's runner parses the
/// arguments first), in a child process that ends when its standard input closes.
enum Server {
    static let variable = "REBOUND_BENCHMARK_SERVE"
    private static let started = Mutex<(url: URL, process: Process, input: Pipe)?>(nil)

    /// Serves and exits, when this process is the child.
    static func serveIfAsked() {
        guard ProcessInfo.processInfo.environment[variable] != nil else { return }
        do {
            let server = try LoopbackServer()
            server.route("/ok", handler: { _, _ in .status(200, headers: ["Content-Type": "text/plain"], body: "ok") })
            FileHandle.standardOutput.write(Data("\(server.port)\n".utf8))
            _ = FileHandle.standardInput.readDataToEndOfFile()
            server.stop()
            exit(0)
        } catch {
            FileHandle.standardError.write(Data("server: \(error)\n".utf8))
            exit(1)
        }
    }

    /// The URL of `/ok` on the server, started on first use for the rest of the run.
    static func url() throws -> URL {
        try started.withLock { started in
            if let started { return started.url }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            if !FileManager.default.isExecutableFile(atPath: process.executableURL!.path) {
                process.executableURL = Bundle.main.executableURL
            }
            var environment = ProcessInfo.processInfo.environment
            environment[variable] = "1"
            environment["LD_PRELOAD"] = nil
            environment["DYLD_INSERT_LIBRARIES"] = nil
            process.environment = environment
            let input = Pipe()
            let output = Pipe()
            process.standardInput = input
            process.standardOutput = output
            try process.run()
            var line = Data()
            while !line.contains(UInt8(ascii: "\n")) {
                let chunk = output.fileHandleForReading.availableData
                guard !chunk.isEmpty else { throw BenchmarkFailure("the server ended before printing its port") }
                line.append(chunk)
            }
            guard let port = Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
            else { throw BenchmarkFailure("the server printed \(String(decoding: line, as: UTF8.self))") }
            let url = URL(string: "http://127.0.0.1:\(port)/ok")!
            started = (url, process, input)
            return url
        }
    }
}

struct BenchmarkFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

// MARK: - Contenders

let headerName = "X-Client-Version"
let headerValue = "4.2.0"

/// The realistic chain of issue 23: a policy, a breaker registry, a ratio budget, an idempotency key, one header.
func realisticSession(on transport: any HTTPTransport) -> Session {
    Session(
        transport: transport,
        adapters: [
            Adapter.modifying { request, _ in request.setValue(headerValue, forHTTPHeaderField: headerName) },
            IdempotencyKeyAdapter(), CircuitBreakerRegistry(), RetryBudget(ratio: .default),
        ],
        retriers: [RetryPolicy()])
}

struct Contender: Sendable {
    /// The name in the printed table.
    let name: String
    /// The name in the metrics' names.
    let key: String
    let send: @Sendable () async throws -> Void
}

/// Plain AsyncHTTPClient first (the baseline), then Rebound on it bare and with the realistic chain, then Rebound's
/// realistic chain on URLSession; with `parts`, the realistic chain's parts one by one and the transport called
/// directly (for `profile`).
func contenders(url: URL, parts: Bool = false) -> [Contender] {
    let client = AsyncHTTPClientTransport.sharedClient
    var plainRequest = HTTPClientRequest(url: url.absoluteString)
    plainRequest.headers.add(name: headerName, value: headerValue)
    let plain = plainRequest
    let bare = Session(transport: AsyncHTTPClientTransport())
    let realisticOnAHC = realisticSession(on: AsyncHTTPClientTransport())
    let realisticOnURLSession = realisticSession(on: URLSessionTransport())
    var list = [
        Contender(name: "AsyncHTTPClient", key: "ahc") {
            let response = try await client.execute(plain, timeout: .seconds(30))
            _ = try await response.body.collect(upTo: 1 << 20)
        },
        Contender(name: "Rebound on AsyncHTTPClient, no chain", key: "bare") { _ = try await bare.send(url) },
        Contender(name: "Rebound on AsyncHTTPClient, realistic chain", key: "realistic") {
            _ = try await realisticOnAHC.send(url)
        },
        Contender(name: "Rebound on URLSession, realistic chain", key: "urlsession") {
            _ = try await realisticOnURLSession.send(url)
        },
    ]
    guard parts else { return list }
    let sessions: [(String, Session)] = [
        ("bare + RetryPolicy", Session(transport: AsyncHTTPClientTransport(), retriers: [RetryPolicy()])),
        (
            "bare + CircuitBreakerRegistry",
            Session(transport: AsyncHTTPClientTransport(), adapters: [CircuitBreakerRegistry()])
        ),
        (
            "bare + ratio RetryBudget",
            Session(transport: AsyncHTTPClientTransport(), adapters: [RetryBudget(ratio: .default)])
        ),
        (
            "bare + IdempotencyKeyAdapter and the header adapter",
            Session(
                transport: AsyncHTTPClientTransport(),
                adapters: [
                    Adapter.modifying { request, _ in request.setValue(headerValue, forHTTPHeaderField: headerName) },
                    IdempotencyKeyAdapter(),
                ])
        ),
    ]
    for (name, session) in sessions {
        list.append(Contender(name: name, key: name) { _ = try await session.send(url) })
    }
    let direct = AsyncHTTPClientTransport()
    let request = URLRequest(url: url)
    list.append(
        Contender(name: "AsyncHTTPClientTransport.exchange called directly", key: "direct") {
            _ = try await direct.exchange(request)
        })
    return list
}

// MARK: - Measuring

func cpuNanoseconds() -> Double {
    var usage = rusage()
    #if os(Linux)
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    #else
        getrusage(RUSAGE_SELF, &usage)
    #endif
    let user = Double(usage.ru_utime.tv_sec) * 1e9 + Double(usage.ru_utime.tv_usec) * 1e3
    let system = Double(usage.ru_stime.tv_sec) * 1e9 + Double(usage.ru_stime.tv_usec) * 1e3
    return user + system
}

/// Wall and CPU nanoseconds of `count` requests, `inFlight` at a time.
func measure(_ contender: Contender, count: Int, inFlight: Int) async throws -> (wall: Double, cpu: Double) {
    let clock = ContinuousClock()
    let cpuBefore = cpuNanoseconds()
    let start = clock.now
    try await withThrowingTaskGroup(of: Void.self) { group in
        for worker in 0..<inFlight {
            let share = count / inFlight + (worker < count % inFlight ? 1 : 0)
            group.addTask { for _ in 0..<share { try await contender.send() } }
        }
        try await group.waitForAll()
    }
    let (seconds, attoseconds) = (clock.now - start).components
    return (Double(seconds) * 1e9 + Double(attoseconds) / 1e9, cpuNanoseconds() - cpuBefore)
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1
        ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

func quartiles(_ values: [Double]) -> (Double, Double) {
    let sorted = values.sorted()
    return (sorted[sorted.count / 4], sorted[(sorted.count * 3) / 4])
}

func pad(_ text: String, _ width: Int) -> String { text.padding(toLength: width, withPad: " ", startingAt: 0) }

/// How long a run is: the full one, or a first look.
struct Settings {
    let quick = ProcessInfo.processInfo.environment["REBOUND_BENCH_QUICK"] != nil
    var rounds: Int { quick ? 9 : 31 }
    var perRound: Int { quick ? 128 : 256 }
}

/// The interleaved rounds of every contender with `inFlight` requests at a time: per contender, each round's ratio of
/// requests per second to plain AsyncHTTPClient's, its client CPU per request (µs) and its requests per second.
func rounds(_ contenders: [Contender], inFlight: Int, settings: Settings) async throws -> (
    ratios: [[Double]], cpu: [[Double]], rates: [[Double]]
) {
    // Warm up every contender's connections.
    for contender in contenders { _ = try await measure(contender, count: inFlight * 4, inFlight: inFlight) }
    var ratios = [[Double]](repeating: [], count: contenders.count)
    var cpu = [[Double]](repeating: [], count: contenders.count)
    var rates = [[Double]](repeating: [], count: contenders.count)
    for round in 0..<settings.rounds {
        // The order rotates, and every other round runs backwards: no contender always runs first.
        var order = Array(contenders.indices)
        order = Array(order[(round % order.count)...] + order[..<(round % order.count)])
        if round % 2 == 1 { order.reverse() }
        var results = [(wall: Double, cpu: Double)](repeating: (0, 0), count: contenders.count)
        for index in order {
            results[index] = try await measure(contenders[index], count: settings.perRound, inFlight: inFlight)
        }
        for index in contenders.indices {
            ratios[index].append(results[0].wall / results[index].wall)
            cpu[index].append(results[index].cpu / Double(settings.perRound) / 1_000)
            rates[index].append(Double(settings.perRound) / (results[index].wall / 1e9))
        }
    }
    return (ratios, cpu, rates)
}

/// Prints the table of one run of rounds, with the issue's targets.
func printTable(
    _ contenders: [Contender], inFlight: Int, _ run: (ratios: [[Double]], cpu: [[Double]], rates: [[Double]])
) {
    print("\n## Rebound on AsyncHTTPClient against plain AsyncHTTPClient, \(inFlight) in flight")
    print(
        pad("contender", 46) + pad("requests/s", 12) + pad("CPU µs/req", 12) + pad("ratio", 8) + pad("p25", 8)
            + pad("p75", 8) + "CPU µs over AHC")
    for index in contenders.indices {
        let over = median(zip(run.cpu[index], run.cpu[0]).map { $0 - $1 })
        let (p25, p75) = quartiles(run.ratios[index])
        var line =
            pad(contenders[index].name, 46) + pad(String(format: "%.0f", median(run.rates[index])), 12)
            + pad(String(format: "%.1f", median(run.cpu[index])), 12)
        if index > 0 {
            line +=
                pad(String(format: "%.3f", median(run.ratios[index])), 8) + pad(String(format: "%.3f", p25), 8)
                + pad(String(format: "%.3f", p75), 8) + String(format: "%+.1f", over)
        }
        print(line)
    }
    let realistic = contenders.firstIndex { $0.key == "realistic" }!
    let ratio = median(run.ratios[realistic])
    let over = median(zip(run.cpu[realistic], run.cpu[0]).map { $0 - $1 })
    let met = ratio >= 0.95 && over <= 10
    print(
        "target: the realistic chain at ≥ 0.95× plain AsyncHTTPClient's requests/s and ≤ 10 µs more client CPU per "
            + "request → \(met ? "met" : "MISSED") (\(String(format: "%.3f", ratio)), \(String(format: "%+.1f", over)) µs)"
    )
}

/// What the seam's Foundation types cost on this platform, against AsyncHTTPClient's own request (ns per value).
func seamTypeCosts(url: URL, iterations: Int) -> [(String, Double)] {
    func nanosecondsPerCall(_ body: () -> Void) -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        for _ in 0..<iterations { body() }
        let (seconds, attoseconds) = (clock.now - start).components
        return (Double(seconds) * 1e9 + Double(attoseconds) / 1e9) / Double(iterations)
    }
    var sink = 0
    let costs = [
        (
            "URLRequest with one header",
            nanosecondsPerCall {
                var request = URLRequest(url: url)
                request.setValue(headerValue, forHTTPHeaderField: headerName)
                sink &+= request.allHTTPHeaderFields?.count ?? 0
            }
        ),
        (
            "HTTPURLResponse with three headers",
            nanosecondsPerCall {
                let response = HTTPURLResponse(
                    url: url, statusCode: 200, httpVersion: "HTTP/1.1",
                    headerFields: ["Content-Type": "text/plain", "Content-Length": "2", "Connection": "keep-alive"])
                sink &+= response?.statusCode ?? 0
            }
        ),
        (
            "ResponseHead with three headers",
            nanosecondsPerCall {
                let head = ResponseHead(
                    url: url, statusCode: 200,
                    headerFields: [
                        (name: "Content-Type", value: "text/plain"), (name: "Content-Length", value: "2"),
                        (name: "Connection", value: "keep-alive"),
                    ])
                sink &+= head.statusCode
            }
        ),
        (
            "HTTPClientRequest with one header",
            nanosecondsPerCall {
                var request = HTTPClientRequest(url: url.absoluteString)
                request.headers.add(name: headerName, value: headerValue)
                sink &+= request.headers.count
            }
        ),
    ]
    blackHole(sink)
    return costs
}

/// `REBOUND_TOOL="profile INDEX COUNT"`: COUNT sequential requests of one contender (0 plain, 1 bare, 2 realistic, 3
/// URLSession; 4 to 7 the realistic chain's parts alone on a bare session: RetryPolicy, CircuitBreakerRegistry, ratio
/// RetryBudget, IdempotencyKeyAdapter with the header adapter; 8 the transport called directly), for `perf record`;
/// prints the client CPU per request.
func profileIfAsked() {
    guard let tool = ProcessInfo.processInfo.environment["REBOUND_TOOL"] else { return }
    let words = tool.split(separator: " ")
    guard words.count == 3, words[0] == "profile", let index = Int(words[1]), let count = Int(words[2]) else {
        print("REBOUND_TOOL: profile INDEX COUNT")
        exit(2)
    }
    let done = DispatchSemaphore(value: 0)
    // The runner calls this from its main thread, outside the cooperative pool, so waiting here starves nothing.
    Task.detached {
        do {
            let all = contenders(url: try Server.url(), parts: true)
            let contender = all[min(index, all.count - 1)]
            for _ in 0..<200 { try await contender.send() }
            let before = cpuNanoseconds()
            for _ in 0..<count { try await contender.send() }
            print("\(contender.name): \((cpuNanoseconds() - before) / Double(count) / 1_000) µs CPU per request")
        } catch {
            print("profile: \(error)")
        }
        done.signal()
    }
    done.wait()
    exit(0)
}

let benchmarks: @Sendable () -> Void = {
    Server.serveIfAsked()
    profileIfAsked()
    let settings = Settings()
    Benchmark.defaultConfiguration = .init(metrics: [], warmupIterations: 0, maxDuration: .seconds(3_600))
    let keys = ["bare", "realistic", "urlsession"]
    for inFlight in [1, 64] {
        var metrics: [BenchmarkMetric] = keys.map {
            .custom("ratio_\($0)", polarity: .prefersLarger, useScalingFactor: false)
        }
        metrics += (["ahc"] + keys).map { .custom("cpu_us_\($0)", polarity: .prefersSmaller, useScalingFactor: false) }
        Benchmark("InFlight\(inFlight)", configuration: .init(metrics: metrics, maxIterations: 1)) { benchmark in
            let list = contenders(url: try Server.url())
            let run = try await rounds(list, inFlight: inFlight, settings: settings)
            printTable(list, inFlight: inFlight, run)
            for (index, contender) in list.enumerated() {
                if index > 0 {
                    let ratio = BenchmarkMetric.custom(
                        "ratio_\(contender.key)", polarity: .prefersLarger, useScalingFactor: false)
                    for value in run.ratios[index] { benchmark.measurement(ratio, Int((value * 1_000).rounded())) }
                }
                let cpu = BenchmarkMetric.custom(
                    "cpu_us_\(contender.key)", polarity: .prefersSmaller, useScalingFactor: false)
                for value in run.cpu[index] { benchmark.measurement(cpu, Int(value.rounded())) }
            }
        }
    }
    let seamMetrics = ["URLRequest", "HTTPURLResponse", "ResponseHead", "HTTPClientRequest"].map {
        BenchmarkMetric.custom("ns_\($0)", polarity: .prefersSmaller, useScalingFactor: false)
    }
    Benchmark("SeamTypes", configuration: .init(metrics: seamMetrics, maxIterations: 1)) { benchmark in
        let costs = seamTypeCosts(
            url: URL(string: "http://127.0.0.1:8080/ok")!, iterations: settings.quick ? 20_000 : 200_000)
        print("\n## What the transport seam's types cost here (ns per value)")
        for ((name, cost), metric) in zip(costs, seamMetrics) {
            print(pad(name + ":", 40) + "\(Int(cost))")
            benchmark.measurement(metric, Int(cost.rounded()))
        }
    }
}
