import Foundation
import Rebound
import ReboundTesting
import Synchronization

/// One scenario: a server, the clients that share its traffic, and the load they offer.
struct Scenario: Sendable {
    var name: String
    var model = ServerModel()
    /// How many clients (app instances), each with its own session and parts; each request goes to one at random.
    var clients = 100
    /// Requests a second offered in all, arriving as a Poisson process.
    var offered: Double
    /// How long the run lasts.
    var duration = Duration.seconds(40)
    var seed: UInt64 = 1
    /// The policies compared.
    var policies = Policy.outagePolicies
    /// How many servers serve the service, each at its own host: the first as `model` says, the others without its
    /// outage; 1 for one server.
    var endpoints = 1

    /// Whether the server has an outage (otherwise the scenario is about its slow tail).
    var hasOutage: Bool { !model.outage.isEmpty }
}

/// What one policy did in one scenario.
struct Outcome: Sendable {
    let policy: Policy
    let scenario: Scenario
    /// Each request's arrival, and its latency if it succeeded.
    let requests: [(arrival: Duration, latency: Duration?)]
    let attemptsPerBucket: [Int]
    /// Attempts that reached the servers per request offered during the outage, and in the 10 s after it.
    let duringOutage: Double
    let afterOutage: Double
    let backToNormal: Duration
    let noRetriesBackToNormal: Duration?
    /// The requests the server answered 429 because their client was past its quota.
    let throttled: Int
    /// With several endpoints: attempts that reached the servers per request offered from 2 s into the outage to its
    /// end, and how long after the outage the first server took a request again (`nil` if it did not, or if it never
    /// stopped taking them in the outage's last second).
    var attemptsOnceMoved: Double?
    var firstServerBack: Duration?

    /// The share of the requests that arrived in `range` and succeeded.
    func success(in range: Range<Duration>) -> Double {
        let arrived = requests.filter { range.contains($0.arrival) }
        return Double(arrived.filter { $0.latency != nil }.count) / Double(max(arrived.count, 1))
    }

    /// The most attempts that reached the server in any 500 ms of the 10 s after the outage, per second.
    var peakAfterOutage: Double {
        let perWindow = 5  // 100 ms buckets
        let first = Int(scenario.model.outage.upperBound / SimulatedServer.bucket)
        let last = min(first + 100, attemptsPerBucket.count)
        let peak =
            stride(from: first, to: last, by: perWindow).map { start in
                attemptsPerBucket[start..<min(start + perWindow, last)].reduce(0, +)
            }.max() ?? 0
        return Double(peak) / (SimulatedServer.bucket.seconds * Double(perWindow))
    }

    /// Attempts that reached the server per request offered, over the whole run.
    var load: Double {
        Double(attemptsPerBucket.reduce(0, +)) / Double(max(requests.count, 1))
    }

    /// The `p`th percentile (0 to 100) of the latency of the requests that succeeded, the nearest rank.
    func latency(_ p: Double) -> Duration {
        let sorted = requests.compactMap(\.latency).sorted()
        guard !sorted.isEmpty else { return .zero }
        return sorted[min(sorted.count - 1, Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1)]
    }
}

/// The records of the requests of one run, in the order they ended.
@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
private final class Records: Sendable {
    private let records = Mutex<[(index: Int, latency: Duration?)]>([])

    func add(_ index: Int, latency: Duration?) {
        records.withLock { $0.append((index, latency)) }
    }

    /// The latency of each request by its index; `nil` for one that failed.
    func latencies(count: Int) -> [Duration?] {
        var latencies = [Duration?](repeating: nil, count: count)
        for record in records.withLock({ $0 }) { latencies[record.index] = record.latency }
        return latencies
    }
}

/// Runs `policy` through `scenario` on a `Simulation`: every event (an arrival, the end of a service time, a backoff,
/// a breaker's break) one instant at a time on a manual clock, after everything the previous one set off has settled.
@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
func simulate(_ policy: Policy, in scenario: Scenario) async -> (
    outcome: [(Duration, Duration?)], servers: [SimulatedServer]
) {
    let simulation = Simulation()
    return await simulation.run {
        let clock = ManualClock()
        // The first server as the scenario's model says; the others without its outage.
        var healthy = scenario.model
        healthy.outage = .zero..<Duration.zero
        let servers = (0..<scenario.endpoints).map { index in
            SimulatedServer(model: index == 0 ? scenario.model : healthy, clock: clock, executor: simulation.executor)
        }
        let server: any HTTPTransport = servers.count == 1 ? servers[0] : SimulatedEndpoints(servers)
        var sessions = [Session?](repeating: nil, count: scenario.clients)
        let records = Records()
        let arrivals = RandomSource.seeded(scenario.seed)
        var requests: [Duration] = []
        var time = Duration.zero
        while true {
            time += .nanoseconds(Int64(-log(1 - arrivals.unitInterval()) / scenario.offered * 1e9))
            guard time < scenario.duration else { break }
            while let deadline = clock.nextDeadline, deadline.offset <= time {
                clock.advance(to: deadline)
                await simulation.settle()
            }
            clock.advance(to: TestInstant(offset: time))
            let client = min(Int(arrivals.unitInterval() * Double(scenario.clients)), scenario.clients - 1)
            let session =
                sessions[client]
                ?? policy.session(
                    transport: server, clock: clock, random: .seeded(scenario.seed &* 7_919 &+ UInt64(client)))
            sessions[client] = session
            let index = requests.count
            let arrival = time
            requests.append(arrival)
            // The client's number in the query: the quota server's way to tell clients apart. With several endpoints, the
            // request is written for the first.
            let host = scenario.endpoints == 1 ? "server.example" : "server0.example"
            let url = URL(string: "https://\(host)/work?client=\(client)")!
            Task(executorPreference: simulation.executor) {
                let succeeded = (try? await session.send(url)) != nil
                records.add(index, latency: succeeded ? clock.now.offset - arrival : nil)
            }
            await simulation.settle()
        }
        while let deadline = clock.nextDeadline {
            clock.advance(to: deadline)
            await simulation.settle()
        }
        let latencies = records.latencies(count: requests.count)
        return (Array(zip(requests, latencies)), servers)
    }
}

/// Runs every policy through `scenario` and measures them.
@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
func outcomes(of scenario: Scenario) async -> [Outcome] {
    let outage = scenario.model.outage
    let after = outage.upperBound..<outage.upperBound + .seconds(10)
    var results: [Outcome] = []
    var noRetries: Duration?
    for policy in scenario.policies {
        let (requests, servers) = await simulate(policy, in: scenario)
        let server = servers[0]
        func amplification(_ range: Range<Duration>, servers: [SimulatedServer]) -> Double {
            let offered = requests.filter { range.contains($0.0) }.count
            return Double(servers.reduce(0) { $0 + $1.attempts(in: range) }) / Double(max(offered, 1))
        }
        let backToNormal = server.backToNormal(after: outage.upperBound, end: scenario.duration)
        if policy == .none { noRetries = backToNormal }
        var outcome = Outcome(
            policy: policy, scenario: scenario, requests: requests.map { ($0.0, $0.1) },
            attemptsPerBucket: server.attemptsPerBucket(until: scenario.duration),
            duringOutage: amplification(outage, servers: servers), afterOutage: amplification(after, servers: servers),
            backToNormal: backToNormal, noRetriesBackToNormal: noRetries, throttled: server.throttled)
        if servers.count > 1 {
            outcome.attemptsOnceMoved = amplification(
                outage.lowerBound + .seconds(2)..<outage.upperBound, servers: servers)
            let buckets = outcome.attemptsPerBucket
            let first = Int(outage.upperBound / SimulatedServer.bucket)
            let lastSecond = max(first - Int(Duration.seconds(1) / SimulatedServer.bucket), 0)..<first
            if buckets[lastSecond].allSatisfy({ $0 == 0 }) {
                outcome.firstServerBack = buckets.indices.dropFirst(first).first { buckets[$0] > 0 }.map {
                    SimulatedServer.bucket * $0 - outage.upperBound
                }
            }
        }
        results.append(outcome)
    }
    return results
}
