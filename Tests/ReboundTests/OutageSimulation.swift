import Foundation
import Rebound
import ReboundTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One host that many service instances call, on a manual clock: it answers 503 (with `outageFields`) during the
/// outage and 200 otherwise, at once, and counts the attempts that reach it in buckets of 100 ms. Each instance's
/// session sends through it.
final class SimulatedHost: HTTPTransport {
    static let bucket = Duration.milliseconds(100)

    let clock: ManualClock
    let outage: Range<Duration>
    let outageFields: [(String, String)]
    private let hits = Locked<[Int: Int]>([:])

    init(clock: ManualClock, outage: Range<Duration>, outageFields: [(String, String)] = []) {
        self.clock = clock
        self.outage = outage
        self.outageFields = outageFields
    }

    func exchange(_ request: URLRequest) async throws -> (Data, ResponseHead) {
        let now = clock.now.offset
        hits.withLock { $0[Int(now / Self.bucket), default: 0] += 1 }
        let down = outage.contains(now)
        return (
            Data(),
            ResponseHead(url: request.url!, statusCode: down ? 503 : 200, headerFields: down ? outageFields : [])
        )
    }

    /// The attempts that reached the host in `range`.
    func attempts(in range: Range<Duration>) -> Int {
        let first = Int(range.lowerBound / Self.bucket)
        let last = Int(range.upperBound / Self.bucket)
        return hits.withLock { hits in (first..<last).reduce(0) { $0 + (hits[$1] ?? 0) } }
    }
}

/// A run of many instances against one ``SimulatedHost``: requests arrive as a Poisson process, each to a random
/// instance, and every event (an arrival, the end of a backoff) is played one instant at a time on the manual clock,
/// after everything the previous one set off has settled. The same seed gives the same run.
struct OutageSimulation {
    struct Arrival: Sendable {
        let time: Duration
        let instance: Int
    }

    /// What happened: each request's arrival and whether it succeeded, and the host.
    struct Result {
        let arrivals: [(time: Duration, succeeded: Bool)]
        let host: SimulatedHost

        func offered(in range: Range<Duration>) -> Int { arrivals.filter { range.contains($0.time) }.count }

        /// Attempts that reached the host per request offered, in `range`.
        func load(in range: Range<Duration>) -> Double {
            Double(host.attempts(in: range)) / Double(max(offered(in: range), 1))
        }

        /// The share of the requests offered in `range` that succeeded.
        func success(in range: Range<Duration>) -> Double {
            let offered = arrivals.filter { range.contains($0.time) }
            return Double(offered.filter(\.succeeded).count) / Double(max(offered.count, 1))
        }

        /// How long after `from` the host's load is back to normal for good: the start of the first 500 ms window
        /// from which every window to `end` sees between 0.8 and 1.25 attempts per request offered.
        func backToNormal(after from: Duration, end: Duration) -> Duration {
            let window = Duration.milliseconds(500)
            var starts: [Duration] = []
            var start = from
            while start + window <= end {
                starts.append(start)
                start += window
            }
            var normalFrom = end
            for start in starts.reversed() {
                let load = load(in: start..<start + window)
                guard (0.8...1.25).contains(load) else { break }
                normalFrom = start
            }
            return normalFrom - from
        }
    }

    var instances = 20
    var requestsPerSecond = 200.0
    var outage: Range<Duration>
    var duration: Duration
    var seed: UInt64 = 1
    /// The fields of the host's 503s during the outage.
    var outageFields: [(String, String)] = []

    /// Runs the simulation; `chain` makes instance `n`'s session, sending through the transport it is given and
    /// timing everything on the clock it is given.
    ///
    /// Where it can, on a thread of its own (``Simulation``): the loop waits for its requests to settle by yielding,
    /// which on the shared cooperative pool would hold one of its threads for the whole run and starve the tests
    /// beside it on a busy machine.
    func run(chain: (_ instance: Int, _ transport: SimulatedHost, _ clock: ManualClock) -> Session) async -> Result {
        let clock = ManualClock()
        let host = SimulatedHost(clock: clock, outage: outage, outageFields: outageFields)
        let sessions = (0..<instances).map { chain($0, host, clock) }
        let arrivals = poissonArrivals()
        let outcomes: [Int: Bool]
        if #available(macOS 15.0, iOS 18.0, macCatalyst 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) {
            let simulation = Simulation()
            let executor = simulation.executor
            outcomes = await simulation.run {
                await Self.drive(arrivals, sessions: sessions, clock: clock) { body in
                    Task(executorPreference: executor, operation: body)
                }
            }
        } else {
            outcomes = await Self.drive(arrivals, sessions: sessions, clock: clock) { body in Task(operation: body) }
        }
        return Result(
            arrivals: arrivals.indices.map { (arrivals[$0].time, outcomes[$0] ?? false) }, host: host)
    }

    /// Sends each arrival's request at its time, in a task `start` makes, advancing the clock from event to event
    /// until every request ended; whether each succeeded, by its index.
    private static func drive(
        _ arrivals: [Arrival], sessions: [Session], clock: ManualClock,
        start: (@escaping @Sendable () async -> Void) -> Task<Void, Never>
    ) async -> [Int: Bool] {
        let outcomes = Locked<[Int: Bool]>([:])
        let finished = Locked(0)
        var launched = 0
        var next = 0
        var tasks: [Task<Void, Never>] = []
        while true {
            let arrival = next < arrivals.count ? arrivals[next].time : nil
            let deadline = clock.nextDeadline?.offset
            guard arrival != nil || deadline != nil else { break }
            if let arrival, deadline.map({ arrival <= $0 }) ?? true {
                clock.advance(to: TestInstant(offset: arrival))
                let index = next
                let session = sessions[arrivals[index].instance]
                tasks.append(
                    start {
                        let succeeded = (try? await session.send(URL(string: "https://host.example/work")!)) != nil
                        outcomes.withLock { $0[index] = succeeded }
                        finished.withLock { $0 += 1 }
                    })
                launched += 1
                next += 1
            } else if let deadline {
                clock.advance(to: TestInstant(offset: deadline))
            }
            // Settled: every request still in flight sleeps on the clock.
            while clock.pendingSleepCount != launched - finished.withLock({ $0 }) { await Task.yield() }
        }
        for task in tasks { await task.value }
        return outcomes.withLock { $0 }
    }

    private func poissonArrivals() -> [Arrival] {
        let source = RandomSource.seeded(seed)
        var arrivals: [Arrival] = []
        var time = 0.0
        let end = Double(duration.components.seconds)
        while true {
            time += -log(1 - source.unitInterval()) / requestsPerSecond
            guard time < end else { break }
            let instance = min(Int(source.unitInterval() * Double(instances)), instances - 1)
            arrivals.append(Arrival(time: .nanoseconds(Int64(time * 1e9)), instance: instance))
        }
        return arrivals
    }
}
