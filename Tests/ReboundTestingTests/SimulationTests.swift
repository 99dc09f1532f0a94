import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A server on a manual clock: each request takes `service` of its time, fails while the outage lasts or while more
/// than `capacity` requests are in flight, and succeeds otherwise.
private final class SlowServer: HTTPTransport {
    let clock: ManualClock
    let outage: Range<Duration>
    let capacity: Int
    let service: Duration
    private let inFlight = Locked(0)

    init(clock: ManualClock, outage: Range<Duration>, capacity: Int, service: Duration) {
        self.clock = clock
        self.outage = outage
        self.capacity = capacity
        self.service = service
    }

    func exchange(_ request: URLRequest) async throws -> (Data, ResponseHead) {
        let overloaded = inFlight.withLock { count in
            count += 1
            return count > capacity
        }
        defer { inFlight.withLock { $0 -= 1 } }
        try await clock.sleep(for: service)
        let failed = overloaded || outage.contains(clock.now.offset)
        return (Data(), ResponseHead(url: request.url!, statusCode: failed ? 503 : 200, headerFields: []))
    }
}

@Suite("Simulation", .timeLimit(.minutes(5)))
struct SimulationTests {
    /// One request's record: when it arrived, how it ended, after how many attempts, and when.
    struct Record: Equatable, Sendable {
        let arrival: Int
        let succeeded: Bool
        let attempts: Int
        let ended: Duration
    }

    /// 40 clients, each with the whole resilience chain (seeded), sending to one slow server through an outage; every
    /// request's record, in the order the requests ended.
    @available(macOS 15.0, iOS 18.0, macCatalyst 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    private func outage(seed: UInt64) async -> [Record] {
        let simulation = Simulation()
        return await simulation.run {
            let clock = ManualClock()
            let server = SlowServer(
                clock: clock, outage: Duration.seconds(2)..<Duration.seconds(5), capacity: 12,
                service: .milliseconds(30))
            let limiter = ConcurrencyLimiter(
                configuration: .init(limit: .aimd(.init(initial: 10)), maximumQueued: 20), clock: clock)
            let sessions = (0..<40).map { client in
                let random = RandomSource.seeded(seed &+ UInt64(client))
                let breakers = CircuitBreakerRegistry(
                    configuration: .init(
                        breakDuration: CircuitBreaker.Configuration.defaultBreakDuration(using: random)),
                    clock: clock)
                return Session(
                    transport: server,
                    adapters: [
                        AdaptiveThrottle(clock: clock, random: random), breakers,
                        RetryBudget(ratio: .default, clock: clock), limiter,
                    ],
                    retriers: [
                        RetryPolicy(backoff: .exponential(a: .milliseconds(100), b: 2).fullJitter(using: random))
                    ],
                    clock: clock)
            }
            let arrivals = RandomSource.seeded(seed)
            let records = Locked<[Record]>([])
            var time = Duration.zero
            var arrival = 0
            while time < .seconds(8) {
                // The events before the next arrival, one instant at a time.
                while let deadline = clock.nextDeadline, deadline.offset <= time {
                    clock.advance(to: deadline)
                    await simulation.settle()
                }
                clock.advance(to: TestInstant(offset: time))
                let session = sessions[Int(arrivals.unitInterval() * 40)]
                let number = arrival
                Task(executorPreference: simulation.executor) {
                    let outcome: (Bool, Int)
                    do {
                        let response = try await session.send(URL(string: "https://server.example/work")!)
                        outcome = (true, response.attempts.count)
                    } catch let error as ReboundError {
                        outcome = (false, error.attempts.count)
                    } catch {
                        outcome = (false, 0)
                    }
                    let record = Record(
                        arrival: number, succeeded: outcome.0, attempts: outcome.1, ended: clock.now.offset)
                    records.withLock { $0.append(record) }
                }
                await simulation.settle()
                arrival += 1
                time += .milliseconds(Int64(1 + arrivals.unitInterval() * 20))
            }
            while let deadline = clock.nextDeadline {
                clock.advance(to: deadline)
                await simulation.settle()
            }
            return records.withLock { $0 }
        }
    }

    @Test("The same seeds give the same run, request for request, through every part that shares state")
    func theSameSeedsGiveTheSameRun() async throws {
        guard #available(macOS 15.0, iOS 18.0, macCatalyst 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) else {
            return
        }
        let first = await outage(seed: 7)
        let second = await outage(seed: 7)
        let other = await outage(seed: 8)

        #expect(first.count > 500)
        #expect(first.count == Set(first.map(\.arrival)).count, "a request ended twice")
        #expect(first.contains { !$0.succeeded } && first.contains { $0.succeeded })
        #expect(first.contains { $0.attempts > 1 }, "no request was retried")
        #expect(first == second)
        #expect(first != other)
    }
}
