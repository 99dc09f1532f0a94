import Foundation
import Rebound

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The five headers a realistic chain adds; plain URLSession sets the same ones, so only the framework differs.
let realisticHeaders = [
    ("Accept", "application/json"), ("User-Agent", "Benchmarks/1.0"), ("X-Client-Version", "42"),
    ("X-Request-Source", "benchmark"), ("Accept-Language", "en"),
]

/// The five adapters of a realistic chain, each setting one header in place (`.modifying`, the idiom the docs
/// recommend).
let headerAdapters: [any RequestAdapter] = realisticHeaders.map { name, value in
    Adapter.modifying { request, _ in request.setValue(value, forHTTPHeaderField: name) }
}

/// The same adapters written with the `var request = request` idiom, which copies the request on Linux.
let copyingHeaderAdapters: [any RequestAdapter] = realisticHeaders.map { name, value in
    Adapter { request, _ in
        var request = request
        request.setValue(value, forHTTPHeaderField: name)
        return request
    }
}

/// The chains compared with plain URLSession, from none to the realistic one: five adapters that each set a header,
/// RetryPolicy wrapped in a silent LoggingRetrier, and a CircuitBreakerRegistry.
let chains: [(name: String, interceptor: (any RequestInterceptor)?)] = [
    ("Session, no interceptor", nil),
    ("Session, 5 header adapters", Interceptor(adapters: headerAdapters)),
    ("Session, 5 adapters + RetryPolicy", Interceptor(adapters: headerAdapters, retriers: [RetryPolicy()])),
    (
        "Session, realistic chain",
        Interceptor(
            adapters: headerAdapters, retriers: [LoggingRetrier(wrapping: RetryPolicy(), sink: { _ in })],
            interceptors: [CircuitBreakerRegistry()])
    ),
]

/// Runs `count` operations, `inFlight` at a time.
func concurrently(_ count: Int, inFlight: Int, _ operation: @escaping @Sendable () async throws -> Void) async throws {
    try await withThrowingTaskGroup(of: Void.self) { group in
        let perWorker = count / inFlight
        for _ in 0..<inFlight {
            group.addTask { for _ in 0..<perWorker { try await operation() } }
        }
        try await group.waitForAll()
    }
}

func endToEnd(base: URL, rounds: Int, count: Int) async throws -> Section {
    let url = base.appendingPathComponent("ok")
    // One URLSession for every contender, so that they share its connections and threads and differ only in what
    // runs on top of it.
    let plainSession = URLSession(configuration: .default)
    let plain: @Sendable () async throws -> Void = {
        var request = URLRequest(url: url)
        for (name, value) in realisticHeaders { request.setValue(value, forHTTPHeaderField: name) }
        let (_, response) = try await plainSession.data(for: request)
        guard (response as? HTTPURLResponse)?.statusCode == 200 else { throw BenchmarkError("plain: \(response)") }
    }
    var operations: [(name: String, operation: @Sendable () async throws -> Void)] = [("URLSession", plain)]
    for chain in chains {
        let session = Session(transport: URLSessionTransport(session: plainSession), interceptor: chain.interceptor)
        // The chains without adapters get the headers from the caller, as plain URLSession does.
        let headers = chain.interceptor == nil ? realisticHeaders : []
        operations.append(
            (
                chain.name,
                {
                    var request = URLRequest(url: url)
                    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
                    _ = try await session.send(request)
                }
            ))
    }
    // Warm everything up: connections opened, code paged in.
    for (_, operation) in operations { try await concurrently(256, inFlight: 64, operation) }

    var rows: [Row] = []
    var realisticRatios: [Double] = []
    for inFlight in [1, 64] {
        let samples = try await interleaved(
            rounds: rounds, count: count,
            operations.map { name, operation in
                Contender(name: name) { count in
                    try await measure(count: count) { try await concurrently(count, inFlight: inFlight, operation) }
                }
            })
        let plainSamples = samples["URLSession"]!
        for (name, _) in operations {
            let these = samples[name]!
            // The ratio of each round's pair, then their median: both ran in the same round, under the same noise.
            let ratio = median(zip(plainSamples, these).map { $1.operationsPerSecond / $0.operationsPerSecond })
            if name == "Session, realistic chain" { realisticRatios.append(ratio) }
            rows.append(
                Row(
                    name: "\(name), \(inFlight) in flight",
                    figures: [
                        "requests/s": these.medianRate, "client CPU µs/req": these.medianCPU / 1_000,
                        "Session/URLSession": name == "URLSession" ? .nan : ratio,
                    ]))
        }
    }
    return Section(
        title: "2. End to end over loopback: URLSession against Session with a realistic chain",
        target: "requests per second of Session with the realistic chain / URLSession ≥ 0.97",
        met: realisticRatios.allSatisfy { $0 >= 0.97 },
        note: "realistic chain: 5 header adapters, RetryPolicy in a silent LoggingRetrier, CircuitBreakerRegistry; "
            + "the server runs in a child process, so CPU is the client's",
        columns: ["requests/s", "client CPU µs/req", "Session/URLSession"], rows: rows)
}

func retryPath(base: URL, rounds: Int, count: Int) async throws -> Section {
    let sessionURL = base.appendingPathComponent("flaky-a")
    let handURL = base.appendingPathComponent("flaky-b")
    let plainSession = URLSession(configuration: .default)
    let session = Session(
        transport: URLSessionTransport(session: plainSession), interceptor: try RetryPolicy(backoff: .none))
    let handWritten: @Sendable () async throws -> Void = {
        for _ in 0..<3 {
            let (_, response) = try await plainSession.data(for: URLRequest(url: handURL))
            if (response as? HTTPURLResponse)?.statusCode == 200 { return }
        }
        throw BenchmarkError("the hand-written loop gave up")
    }
    let rebound: @Sendable () async throws -> Void = {
        let response = try await session.send(sessionURL)
        guard response.retryCount == 1 else { throw BenchmarkError("expected one retry, got \(response.retryCount)") }
    }
    try await concurrently(64, inFlight: 1, handWritten)
    try await concurrently(64, inFlight: 1, rebound)

    let samples = try await interleaved(
        rounds: rounds, count: count,
        [
            Contender(name: "hand") { count in
                try await measure(count: count) { try await concurrently(count, inFlight: 1, handWritten) }
            },
            Contender(name: "Session") { count in
                try await measure(count: count) { try await concurrently(count, inFlight: 1, rebound) }
            },
        ])
    let hand = samples["hand"]!
    let reboundSamples = samples["Session"]!
    let ratio = median(zip(hand, reboundSamples).map { $1.operationsPerSecond / $0.operationsPerSecond })
    let cpuRatio = median(zip(hand, reboundSamples).map { $1.cpuPerOperation / $0.cpuPerOperation })
    return Section(
        title: "3. Retry path: every request fails once with 503, then succeeds, no delay",
        target: "requests per second of Session / hand-written loop ≥ 0.95", met: ratio >= 0.95,
        note: String(format: "client CPU per request, Session / hand-written: %.3f", cpuRatio),
        columns: ["requests/s", "client CPU µs/req", "Session/hand"],
        rows: [
            Row(
                name: "hand-written retry loop on URLSession",
                figures: ["requests/s": hand.medianRate, "client CPU µs/req": hand.medianCPU / 1_000]),
            Row(
                name: "Session with RetryPolicy(backoff: .none)",
                figures: [
                    "requests/s": reboundSamples.medianRate, "client CPU µs/req": reboundSamples.medianCPU / 1_000,
                    "Session/hand": ratio,
                ]),
        ])
}

/// Sends `count` sequential requests to `/ok` through one contender, for a profiler to look at.
func profile(_ contender: String, count: Int) async throws {
    let server = try ServerProcess.start()
    defer { ServerProcess.stop(server) }
    let url = server.url.appendingPathComponent("ok")
    let urlSession = URLSession(configuration: .default)
    let interceptor: (any RequestInterceptor)? =
        switch contender {
        case "realistic": chains.last!.interceptor
        case "adapters": Interceptor(adapters: headerAdapters)
        default: nil
        }
    let session = Session(transport: URLSessionTransport(session: urlSession), interceptor: interceptor)
    for _ in 0..<count {
        var request = URLRequest(url: url)
        if contender == "plain" || contender == "session" {
            for (name, value) in realisticHeaders { request.setValue(value, forHTTPHeaderField: name) }
        }
        if contender == "plain" {
            _ = try await urlSession.data(for: request)
        } else {
            _ = try await session.send(request)
        }
    }
}
