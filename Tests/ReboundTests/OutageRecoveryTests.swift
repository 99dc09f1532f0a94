import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue 17: 20 instances send 200 requests a second in all to one host that answers 503 from 3 s to 8 s; each chain
/// is a jittered RetryPolicy (3 retries, 500 ms base, full jitter), alone or with a budget and a breaker on their
/// defaults. Deterministic: a manual clock and seeded randomness.
@Suite("Recovery after an outage", .timeLimit(.minutes(2)))
struct OutageRecoveryTests {
    static let outage = Duration.seconds(3)..<Duration.seconds(8)

    enum Chain: String, CaseIterable, Sendable {
        case noRetries, retries, retriesAndBudget, retriesBudgetAndBreaker
    }

    static func session(_ chain: Chain, instance: Int, host: SimulatedHost, clock: ManualClock) -> Session {
        let policy = RetryPolicy(
            retryLimit: 3,
            backoff: .exponential(a: .milliseconds(500), b: 2).fullJitter(using: .seeded(UInt64(instance) + 100)))
        switch chain {
        case .noRetries:
            return Session(transport: host, clock: clock)
        case .retries:
            return Session(transport: host, retriers: [policy], clock: clock)
        case .retriesAndBudget:
            return Session(transport: host, adapters: [RetryBudget()], retriers: [policy], clock: clock)
        case .retriesBudgetAndBreaker:
            return Session(
                transport: host, adapters: [RetryBudget(), CircuitBreaker(clock: clock)], retriers: [policy],
                clock: clock)
        }
    }

    static func run(_ chain: Chain, outage: Range<Duration> = outage, duration: Duration = .seconds(15)) async
        -> OutageSimulation.Result
    {
        await OutageSimulation(outage: outage, duration: duration).run { instance, host, clock in
            session(chain, instance: instance, host: host, clock: clock)
        }
    }

    @Test("Report", arguments: Chain.allCases)
    func report(chain: Chain) async {
        let result = await Self.run(chain)
        let after = Duration.seconds(8)..<Duration.seconds(13)
        print(
            "\(chain): load in outage \(result.load(in: Self.outage)), after \(result.load(in: after)), "
                + "success after \(result.success(in: after)), back to normal "
                + "\(result.backToNormal(after: .seconds(8), end: .seconds(15)))")
    }
}
