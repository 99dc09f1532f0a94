import Foundation
import Rebound
import SideBySide

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Section 6's baseline: a transport that calls `URLSession.data(for:)` on a session without a delegate, whose
/// completion runs inline, without a hop through the session's delegate queue. (`URLSessionHTTPTransport` does not call
/// `data(for:)`: see its documentation.)
struct DataForTransport: HTTPTransport {
    let session: URLSession

    func exchange(_ request: URLRequest) async throws -> (Data, ResponseHead) {
        try Task.checkCancellation()
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await session.data(for: request)
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw error
        }
        if Task.isCancelled { throw CancellationError() }
        guard let httpResponse = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
        return (data, ResponseHead(httpResponse))
    }
}

/// Section 6: `URLSessionHTTPTransport` (its own session, and a caller's session) against `URLSession.data(for:)`, each
/// called directly, one at a time and 64 in flight.
func transportCost(base: URL, rounds: Int, concurrentRounds: Int, count: Int) async throws -> Section {
    let url = base.appendingPathComponent("ok")
    let baselineName = "URLSession.data(for:)"
    let transports: [(name: String, transport: any HTTPTransport)] = [
        (baselineName, DataForTransport(session: URLSession(configuration: plainConfiguration()))),
        ("URLSessionHTTPTransport(), its own session", URLSessionHTTPTransport()),
        (
            "URLSessionHTTPTransport(session:), a task delegate",
            URLSessionHTTPTransport(session: URLSession(configuration: plainConfiguration()))
        ),
    ]
    let request = URLRequest(url: url)
    let operations = transports.map { name, transport in
        (
            name,
            { @Sendable () async throws -> Void in
                let (_, response) = try await transport.send(request)
                guard response.statusCode == 200 else { throw BenchmarkError("\(name): \(response.statusCode)") }
            }
        )
    }
    for (_, operation) in operations { try await concurrently(256, inFlight: 64, operation) }

    var rows: [Row] = []
    var ratios: [Double] = []
    for inFlight in [1, 64] {
        let samples = try await interleaved(
            rounds: inFlight == 1 ? rounds : concurrentRounds, count: count,
            operations.map { name, operation in Contender.concurrent(name, inFlight: inFlight, operation) })
        let baseline = samples[baselineName]!
        for (name, _) in operations {
            let these = samples[name]!
            let roundRatios = zip(baseline, these).map { $1.operationsPerSecond / $0.operationsPerSecond }
            let isBaseline = name == baselineName
            if name.hasPrefix("URLSessionHTTPTransport()") { ratios.append(median(roundRatios)) }
            rows.append(
                Row(
                    name: "\(name), \(inFlight) in flight",
                    figures: ratioFigures(isBaseline ? nil : roundRatios, as: "ratio").merging([
                        "requests/s": these.medianRate, "client CPU µs/req": these.medianCPU / 1_000,
                    ]) { $1 }, rounds: isBaseline ? [:] : ["ratio": roundRatios]))
        }
    }
    return Section(
        title: "6. Transport: URLSessionHTTPTransport against URLSession.data(for:)",
        target: "requests per second of URLSessionHTTPTransport() / data(for:) ≥ 0.99",
        met: ratios.allSatisfy { $0 >= 0.99 },
        note: "each transport called directly, over loopback; the server runs in a child process",
        columns: ["requests/s", "client CPU µs/req", "ratio", "± (standard error)", "ratio p25", "ratio p75"],
        rows: rows)
}
