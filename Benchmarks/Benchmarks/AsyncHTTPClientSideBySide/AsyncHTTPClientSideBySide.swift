// Rebound on AsyncHTTPClient against plain AsyncHTTPClient, side by side, on ordo-one/benchmark, over loopback to a
// server in a child process (so that the CPU time measured is the client's alone):
//
//     swift package --package-path Benchmarks benchmark --target AsyncHTTPClientSideBySide
//
// `InFlight1` and `InFlight64` run every contender in interleaved rounds inside one iteration (these machines are
// noisy; a pair measured in the same round sees the same noise) and print, for each, its requests per second over
// plain AsyncHTTPClient's (the median of the rounds' ratios, with their quartiles) and its client CPU per request over
// plain AsyncHTTPClient's; their metrics are each round's ratio in thousandths (ordo-one's p50 is the median) and each
// contender's client CPU per request in µs; a calibration row runs plain AsyncHTTPClient followed by busy work as long
// as the realistic chain's own work in memory (measured first), to show what that much client work costs end to end.
// `SeamTypes` prints what building a `URLRequest`, an `HTTPURLResponse`
// and AsyncHTTPClient's own request costs here (ns per value). `REBOUND_BENCH_QUICK=1` for a first look;
// `REBOUND_TOOL="profile INDEX COUNT"` on the built executable runs one contender alone for `perf` (see the guide).
import AsyncHTTPClient
import Benchmark
import Foundation
import Rebound
import ReboundAsyncHTTPClient
import ReboundTesting
import SideBySide

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// MARK: - Contenders

let headerName = "X-Client-Version"
let headerValue = "4.2.0"

/// The realistic chain on AsyncHTTPClient: a policy, a breaker registry, a ratio budget, an idempotency key, a header.
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

/// A transport that answers every request at once with the head AsyncHTTPClient's transport makes: for the realistic
/// chain's own work, measured in memory.
struct InMemoryTransport: HTTPTransport {
    let body = Data("ok".utf8)

    func exchange(_ request: URLRequest) async throws -> (Data, ResponseHead) {
        let head = ResponseHead(
            url: request.url!, statusCode: 200,
            headerFields: [(name: "Content-Type", value: "text/plain"), (name: "Content-Length", value: "2")])
        return (body, head)
    }
}

/// The realistic chain's own work per request (the session and its chain, less the transport), measured in memory
/// with warm caches: the medians of interleaved rounds of a realistic session on ``InMemoryTransport`` and of that
/// transport called directly.
func inMemoryWork(url: URL, settings: Settings) async throws -> Duration {
    let transport = InMemoryTransport()
    let session = realisticSession(on: transport)
    let request = URLRequest(url: url)
    let nanoseconds = try await extraWallPerCall(
        of: { _ = try await session.send(url) }, over: { _ = try await transport.exchange(request) }, rounds: 5,
        count: settings.quick ? 2_000 : 20_000)
    return .nanoseconds(Int64(nanoseconds))
}

/// Plain AsyncHTTPClient first (the baseline), then Rebound on it bare and with the realistic chain, then Rebound's
/// realistic chain on URLSession; with `chainWork`, a calibration: plain AsyncHTTPClient followed by that much busy
/// work per request; with `parts`, the realistic chain's parts one by one and the transport called directly (for
/// `profile`).
func contenders(url: URL, parts: Bool = false, chainWork: Duration? = nil) -> [Contender] {
    let client = AsyncHTTPClientHTTPTransport.sharedClient
    var plainRequest = HTTPClientRequest(url: url.absoluteString)
    plainRequest.headers.add(name: headerName, value: headerValue)
    let plain = plainRequest
    let bare = Session(transport: AsyncHTTPClientHTTPTransport())
    let realisticOnAHC = realisticSession(on: AsyncHTTPClientHTTPTransport())
    let realisticOnURLSession = realisticSession(on: URLSessionHTTPTransport())
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
    if let chainWork {
        list.append(
            Contender(name: "AsyncHTTPClient, then the chain's work as busy work", key: "busy") {
                let response = try await client.execute(plain, timeout: .seconds(30))
                _ = try await response.body.collect(upTo: 1 << 20)
                busyWork(for: chainWork)
            })
    }
    guard parts else { return list }
    let sessions: [(String, Session)] = [
        ("bare + RetryPolicy", Session(transport: AsyncHTTPClientHTTPTransport(), retriers: [RetryPolicy()])),
        (
            "bare + CircuitBreakerRegistry",
            Session(transport: AsyncHTTPClientHTTPTransport(), adapters: [CircuitBreakerRegistry()])
        ),
        (
            "bare + ratio RetryBudget",
            Session(transport: AsyncHTTPClientHTTPTransport(), adapters: [RetryBudget(ratio: .default)])
        ),
        (
            "bare + IdempotencyKeyAdapter and the header adapter",
            Session(
                transport: AsyncHTTPClientHTTPTransport(),
                adapters: [
                    Adapter.modifying { request, _ in request.setValue(headerValue, forHTTPHeaderField: headerName) },
                    IdempotencyKeyAdapter(),
                ])
        ),
    ]
    for (name, session) in sessions {
        list.append(Contender(name: name, key: name) { _ = try await session.send(url) })
    }
    let direct = AsyncHTTPClientHTTPTransport()
    let request = URLRequest(url: url)
    list.append(
        Contender(name: "AsyncHTTPClientHTTPTransport.exchange called directly", key: "direct") {
            _ = try await direct.exchange(request)
        })
    return list
}

// MARK: - Measuring

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
    for contender in contenders { try await concurrently(inFlight * 4, inFlight: inFlight, contender.send) }
    let samples = try await interleaved(
        rounds: settings.rounds, count: settings.perRound,
        contenders.map { SideBySide.Contender.concurrent($0.name, inFlight: inFlight, $0.send) })
    let plain = samples[contenders[0].name]!
    let runs = contenders.map { samples[$0.name]! }
    return (
        runs.map { zip(plain, $0).map { $1.operationsPerSecond / $0.operationsPerSecond } },
        runs.map { $0.map { $0.cpuPerOperation / 1_000 } }, runs.map { $0.map(\.operationsPerSecond) }
    )
}

/// Prints the table of one run of rounds, with the issue's targets.
func printTable(
    _ contenders: [Contender], inFlight: Int, chainWork: Duration,
    _ run: (ratios: [[Double]], cpu: [[Double]], rates: [[Double]])
) {
    print("\n## Rebound on AsyncHTTPClient against plain AsyncHTTPClient, \(inFlight) in flight")
    print(
        "(the realistic chain's own work, in memory with warm caches: "
            + String(format: "%.2f", chainWork.nanoseconds / 1_000) + " µs per request; the busy-work row spends that "
            + "much after each plain request)")
    print(
        pad("contender", 46) + pad("requests/s", 12) + pad("CPU µs/req", 12) + pad("ratio", 8) + pad("p25", 8)
            + pad("p75", 8) + "CPU µs over AHC")
    for index in contenders.indices {
        let over = median(zip(run.cpu[index], run.cpu[0]).map { $0 - $1 })
        var line =
            pad(contenders[index].name, 46) + pad(String(format: "%.0f", median(run.rates[index])), 12)
            + pad(String(format: "%.1f", median(run.cpu[index])), 12)
        if index > 0 {
            line +=
                pad(String(format: "%.3f", median(run.ratios[index])), 8)
                + pad(String(format: "%.3f", percentile(run.ratios[index], 25)), 8)
                + pad(String(format: "%.3f", percentile(run.ratios[index], 75)), 8) + String(format: "%+.1f", over)
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
    runToolAndExit(tool) {
        let all = contenders(url: try ChildServer.url().appendingPathComponent("ok"), parts: true)
        let contender = all[min(index, all.count - 1)]
        for _ in 0..<200 { try await contender.send() }
        let sample = try await measure(count: count) { for _ in 0..<count { try await contender.send() } }
        print("\(contender.name): \(sample.cpuPerOperation / 1_000) µs CPU per request")
    }
}

let benchmarks: @Sendable () -> Void = {
    ChildServer.serveIfAsked { server in
        server.route("/ok", handler: { _, _ in .status(200, headers: ["Content-Type": "text/plain"], body: "ok") })
    }
    profileIfAsked()
    let settings = Settings()
    Benchmark.defaultConfiguration = .init(metrics: [], warmupIterations: 0, maxDuration: .seconds(3_600))
    let keys = ["bare", "realistic", "urlsession", "busy"]
    for inFlight in [1, 64] {
        var metrics: [BenchmarkMetric] = keys.map {
            .custom("ratio_\($0)", polarity: .prefersLarger, useScalingFactor: false)
        }
        metrics += (["ahc"] + keys).map { .custom("cpu_us_\($0)", polarity: .prefersSmaller, useScalingFactor: false) }
        Benchmark("InFlight\(inFlight)", configuration: .init(metrics: metrics, maxIterations: 1)) { benchmark in
            let url = try ChildServer.url().appendingPathComponent("ok")
            let chainWork = try await inMemoryWork(url: url, settings: settings)
            let list = contenders(url: url, chainWork: chainWork)
            let run = try await rounds(list, inFlight: inFlight, settings: settings)
            printTable(list, inFlight: inFlight, chainWork: chainWork, run)
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
