import Foundation
import Rebound
import SideBySide
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A transport that answers from memory with one prebuilt response, so that only the chain is measured.
struct MemoryTransport: HTTPTransport {
    let ok: (Data, ResponseHead)
    let unavailable: (Data, ResponseHead)
    /// When set, every odd call answers 503: a sequential request fails once, then succeeds.
    let failsEveryOtherCall: Bool
    private let calls = Counter()

    init(failsEveryOtherCall: Bool = false) {
        let url = URL(string: "http://memory.invalid/item")!
        ok = (Data("{}".utf8), ResponseHead(url: url, statusCode: 200, headerFields: []))
        unavailable = (Data(), ResponseHead(url: url, statusCode: 503, headerFields: []))
        self.failsEveryOtherCall = failsEveryOtherCall
    }

    func exchange(_ request: URLRequest) async throws -> (Data, ResponseHead) {
        guard failsEveryOtherCall else { return ok }
        return calls.next() % 2 == 1 ? unavailable : ok
    }
}

/// An atomic counter; the benchmark's shared state.
final class Counter: Sendable {
    private let value = Atomic<Int>(0)

    func next() -> Int {
        value.add(1, ordering: .relaxed).newValue
    }

    var current: Int { value.load(ordering: .relaxed) }
}

/// An adapter that changes nothing.
struct NoOpAdapter: RequestInterceptor {}

func chainCost(rounds: Int, count: Int) async throws -> [Section] {
    let request = URLRequest(url: URL(string: "http://memory.invalid/item")!)
    let clock = ContinuousClock()

    // 1. Adapters on a request that succeeds at once.
    // Called through the protocol, as the session does, so that the compiler cannot inline it away.
    let transport: any HTTPTransport = MemoryTransport()
    var contenders = [
        Contender(name: "transport called directly") { count in
            try await measure(count: count) {
                for _ in 0..<count { _ = try await transport.send(request) }
            }
        }
    ]
    for adapters in [0, 1, 10, 100] {
        let interceptor: (any RequestInterceptor)? =
            adapters == 0 ? nil : Interceptor(adapters: Array(repeating: NoOpAdapter(), count: adapters))
        let session = Session(transport: transport, interceptor: interceptor, clock: clock)
        contenders.append(
            Contender(name: "Session, \(adapters) no-op adapters") { count in
                try await measure(count: count) {
                    for _ in 0..<count { _ = try await session.send(request) }
                }
            })
    }
    let adapterSamples = try await interleaved(rounds: rounds, count: count, contenders)
    let direct = adapterSamples["transport called directly"]!.medianWall
    let rows = costRows(contenders, adapterSamples, baseline: direct)
    var perAdapter: [Int: Double] = [:]
    for adapters in [0, 1, 10, 100] {
        perAdapter[adapters] = adapterSamples["Session, \(adapters) no-op adapters"]!.medianWall
    }
    let slope = (perAdapter[100]! - perAdapter[10]!) / 90
    let emptyOverhead = perAdapter[0]! - direct
    let slopeSmall = (perAdapter[10]! - perAdapter[0]!) / 10
    let linear = abs(slope - slopeSmall) <= max(25, 0.5 * slope)
    let adaptersSection = Section(
        title: "1a. Chain cost: adapters (in-memory transport, sequential)",
        target: "empty session ≤ 2 µs over the transport; ≤ 50 ns per extra adapter, growing linearly",
        met: emptyOverhead <= 2_000 && slope <= 50 && linear,
        note: String(
            format: "empty session adds %.0f ns; %.1f ns per adapter from 10 to 100, %.1f ns from 0 to 10",
            emptyOverhead, slope, slopeSmall),
        columns: ["ns/request", "over direct (ns)"], rows: rows)

    // 2. Retriers on a request that fails once, then succeeds, retried at once.
    let flaky: any HTTPTransport = MemoryTransport(failsEveryOtherCall: true)
    var retryContenders = [
        Contender(name: "transport called twice") { count in
            try await measure(count: count) {
                for _ in 0..<count {
                    _ = try await flaky.send(request)
                    _ = try await flaky.send(request)
                }
            }
        }
    ]
    for retriers in [1, 10] {
        let chain: [any RequestRetrier] =
            Array(repeating: NoOpRetrier(), count: retriers - 1) + [Retrier { _, _ in .retry }]
        let session = Session(transport: flaky, interceptor: Interceptor(retriers: chain), clock: clock)
        retryContenders.append(
            Contender(name: "Session, \(retriers) retriers, fails once") { count in
                try await measure(count: count) {
                    for _ in 0..<count { _ = try await session.send(request) }
                }
            })
    }
    let retrySamples = try await interleaved(rounds: rounds, count: count / 2, retryContenders)
    let twice = retrySamples["transport called twice"]!.medianWall
    let retryRows = costRows(retryContenders, retrySamples, baseline: twice)
    let retrySection = Section(
        title: "1b. Chain cost: retriers on a request that fails once (in-memory transport)",
        target: "reported (the retry path's cost end to end is section 3)", met: nil, note: nil,
        columns: ["ns/request", "over direct (ns)"], rows: retryRows)

    // 3. Adapters that each set a header, against setting the same headers on the request directly.
    let headerSession = Session(transport: transport, interceptor: Interceptor(adapters: headerAdapters), clock: clock)
    let copyingSession = Session(
        transport: transport, interceptor: Interceptor(adapters: copyingHeaderAdapters), clock: clock)
    let realisticSession = Session(transport: transport, interceptor: chains.last!.interceptor, clock: clock)
    let headerContenders = [
        Contender(name: "5 headers set directly, then the transport") { count in
            try await measure(count: count) {
                for _ in 0..<count {
                    var request = request
                    for (name, value) in realisticHeaders { request.setValue(value, forHTTPHeaderField: name) }
                    _ = try await transport.send(request)
                }
            }
        },
        Contender(name: "Session, 5 adapters, .modifying { }") { count in
            try await measure(count: count) {
                for _ in 0..<count { _ = try await headerSession.send(request) }
            }
        },
        Contender(name: "Session, 5 adapters, var request = request") { count in
            try await measure(count: count) {
                for _ in 0..<count { _ = try await copyingSession.send(request) }
            }
        },
        Contender(name: "Session, realistic chain of section 2") { count in
            try await measure(count: count) {
                for _ in 0..<count { _ = try await realisticSession.send(request) }
            }
        },
    ]
    let headerSamples = try await interleaved(rounds: rounds, count: count / 4, headerContenders)
    let directHeaders = headerSamples[headerContenders[0].name]!.medianWall
    let headerRows = costRows(headerContenders, headerSamples, baseline: directHeaders)
    let headerSection = Section(
        title: "1c. Chain cost: adapters that set headers (URLRequest copies)",
        target: "reported: .modifying adapters cost about what setting the headers directly costs", met: nil,
        note: "on Linux a URLRequest is a reference underneath; a mutation of a shared one copies it",
        columns: ["ns/request", "over direct (ns)"], rows: headerRows)
    return [adaptersSection, retrySection, headerSection]
}

/// One row per contender: median time per request and its excess over `baseline` (allocations per request are
/// ReboundAllocations').
private func costRows(_ contenders: [Contender], _ samples: [String: [Sample]], baseline: Double) -> [Row] {
    contenders.map { contender in
        let these = samples[contender.name]!
        return Row(
            name: contender.name,
            figures: [
                "ns/request": these.medianWall, "over direct (ns)": these.medianWall - baseline,
            ])
    }
}
