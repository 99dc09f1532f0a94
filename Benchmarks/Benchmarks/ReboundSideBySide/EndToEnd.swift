import Foundation
import Rebound
import SideBySide

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

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
    ("Session, realistic chain", sharedRealisticChain),
]

/// The names of section 2's calibration contenders: plain URLSession followed, per request, by some client work that
/// is not on the network path. They tell what that much work costs end to end on this machine, whoever does it.
let replayName = "URLSession, then a bare Session's work in memory"
let busyName = "URLSession, then the realistic chain's time in busy work"
let realisticReplayName = "URLSession, then the realistic chain's work in memory"

func endToEnd(base: URL, rounds: Int, concurrentRounds: Int, count: Int) async throws -> Section {
    let url = base.appendingPathComponent("ok")
    // One URLSession for plain URLSession and the calibration contenders, and one URLSessionHTTPTransport() (the
    // session's default transport, with a URLSession of its own) shared by every Session contender: each side keeps
    // its connections warm, and the sessions differ only in what runs on top of the transport.
    let plainSession = URLSession(configuration: plainConfiguration())
    let transport = URLSessionHTTPTransport()
    let plain: @Sendable () async throws -> Void = {
        let (_, response) = try await plainSession.data(for: requestWithRealisticHeaders(to: url))
        guard (response as? HTTPURLResponse)?.statusCode == 200 else { throw BenchmarkError("plain: \(response)") }
    }
    // Calibration 1: the same code a bare Session runs, on an in-memory transport, after each plain request.
    let replaySession = Session(transport: try await CannedTransport(answeringLike: URLRequest(url: url)))
    let replayRequest = requestWithRealisticHeaders(to: url)
    let replay: @Sendable () async throws -> Void = {
        try await plain()
        _ = try await replaySession.send(replayRequest)
    }
    // Calibration 2: as long a busy loop as the realistic chain takes in memory (its adapters setting the headers
    // included, less plain URLSession setting them itself).
    let chainWork = try await inMemoryCost(of: chains.last!.interceptor!, url: url, rounds: 5, count: 20_000)
    let busy: @Sendable () async throws -> Void = {
        try await plain()
        busyWork(for: .nanoseconds(Int64(chainWork)))
    }
    // Calibration 3: the realistic chain's own code (a chain of its own, so that its breaker is not the contender's),
    // on an in-memory transport, after each plain request: what running that code between two requests costs.
    let realisticReplaySession = Session(
        transport: try await CannedTransport(answeringLike: URLRequest(url: url)), interceptor: realisticChain())
    let realisticReplay: @Sendable () async throws -> Void = {
        try await plain()
        _ = try await realisticReplaySession.send(url)
    }
    var operations: [(name: String, operation: @Sendable () async throws -> Void)] = [
        ("URLSession", plain), (replayName, replay), (busyName, busy), (realisticReplayName, realisticReplay),
    ]
    for chain in chains {
        let session = Session(transport: transport, interceptor: chain.interceptor)
        if chain.interceptor == nil {
            // The chain without adapters gets the headers from the caller, as plain URLSession does.
            operations.append((chain.name, { _ = try await session.send(requestWithRealisticHeaders(to: url)) }))
        } else {
            // The chains whose adapters set the headers are sent a URL, as the README sends one.
            operations.append((chain.name, { _ = try await session.send(url) }))
        }
    }
    // Warm everything up: connections opened, code paged in.
    for (_, operation) in operations { try await concurrently(256, inFlight: 64, operation) }

    var rows: [Row] = []
    var ratios: [String: [Double]] = [:]
    for inFlight in [1, 64] {
        let samples = try await interleaved(
            rounds: inFlight == 1 ? rounds : concurrentRounds, count: count,
            operations.map { name, operation in Contender.concurrent(name, inFlight: inFlight, operation) })
        let plainSamples = samples["URLSession"]!
        for (name, _) in operations {
            let these = samples[name]!
            // The ratio of each round's pair, then their median: both ran in the same round, under the same noise.
            let roundRatios = zip(plainSamples, these).map { $1.operationsPerSecond / $0.operationsPerSecond }
            let ratio = median(roundRatios)
            ratios[name, default: []].append(ratio)
            let plain = name == "URLSession"
            rows.append(
                Row(
                    name: "\(name), \(inFlight) in flight",
                    figures: ratioFigures(plain ? nil : roundRatios, as: "Session/URLSession").merging([
                        "requests/s": these.medianRate, "client CPU µs/req": these.medianCPU / 1_000,
                    ]) { $1 }, rounds: plain ? [:] : ["Session/URLSession": roundRatios]))
        }
    }
    func pairs(_ name: String, _ calibration: String) -> String {
        zip(ratios[name]!, ratios[calibration]!).map { String(format: "%.3f vs %.3f", $0, $1) }
            .joined(separator: ", ")
    }
    return Section(
        title: "2. End to end over loopback: URLSession against Session with a realistic chain",
        target: "requests per second of Session with the realistic chain / URLSession ≥ 0.97",
        met: ratios["Session, realistic chain"]!.allSatisfy { $0 >= 0.97 },
        note: "realistic chain: 5 header adapters, RetryPolicy in a silent LoggingRetrier, CircuitBreakerRegistry; "
            + "the server runs in a child process, so CPU is the client's. Calibration, 1 and 64 in flight: "
            + "Session, no interceptor vs URLSession then its work in memory: \(pairs("Session, no interceptor", replayName)); "
            + "realistic chain vs URLSession then "
            + String(format: "%.2f µs", chainWork / 1_000)
            + " of busy work: \(pairs("Session, realistic chain", busyName)); realistic chain vs URLSession then "
            + "its work in memory: \(pairs("Session, realistic chain", realisticReplayName))",
        columns: [
            "requests/s", "client CPU µs/req", "Session/URLSession", "± (standard error)", "ratio p25", "ratio p75",
        ], rows: rows)
}

func retryPath(base: URL, rounds: Int, count: Int) async throws -> Section {
    let sessionURL = base.appendingPathComponent("flaky-a")
    let handURL = base.appendingPathComponent("flaky-b")
    let plainSession = URLSession(configuration: plainConfiguration())
    let session = Session(transport: URLSessionHTTPTransport(), retriers: [RetryPolicy(backoff: .zero)])
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
        [Contender.concurrent("hand", inFlight: 1, handWritten), Contender.concurrent("Session", inFlight: 1, rebound)])
    let hand = samples["hand"]!
    let reboundSamples = samples["Session"]!
    let roundRatios = zip(hand, reboundSamples).map { $1.operationsPerSecond / $0.operationsPerSecond }
    let ratio = median(roundRatios)
    let cpuRatio = median(zip(hand, reboundSamples).map { $1.cpuPerOperation / $0.cpuPerOperation })
    return Section(
        title: "3. Retry path: every request fails once with 503, then succeeds, no delay",
        target: "requests per second of Session / hand-written loop ≥ 0.95", met: ratio >= 0.95,
        note: String(format: "client CPU per request, Session / hand-written: %.3f", cpuRatio),
        columns: ["requests/s", "client CPU µs/req", "Session/hand", "ratio p25", "ratio p75"],
        rows: [
            Row(
                name: "hand-written retry loop on URLSession",
                figures: ["requests/s": hand.medianRate, "client CPU µs/req": hand.medianCPU / 1_000]),
            Row(
                name: "Session with RetryPolicy(backoff: .zero)",
                figures: ratioFigures(roundRatios, as: "Session/hand").merging([
                    "requests/s": reboundSamples.medianRate, "client CPU µs/req": reboundSamples.medianCPU / 1_000,
                ]) { $1 }, rounds: ["Session/hand": roundRatios]),
        ])
}
