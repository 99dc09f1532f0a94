import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// 20 instances send 200 requests a second in all to one host that answers 503 from 3 s to 8 s; each chain is a
/// jittered RetryPolicy (3 retries, 500 ms base, full jitter), alone or with a budget and a breaker on their
/// defaults. Deterministic: a manual clock and seeded randomness.
@Suite("Recovery after an outage", .timeLimit(.minutes(5)))
struct OutageRecoveryTests {
    static let outage = Duration.seconds(3)..<Duration.seconds(8)

    enum Chain: String, CaseIterable, Sendable {
        case noRetries, retries, retriesAndBudget, retriesBudgetAndBreaker
        /// A breaker open for a fixed 30 s.
        case retriesBudgetAndFixedBreaker
        /// The ratio budget, 10 % of the traffic plus 1 retry a second per instance.
        case retriesAndRatioBudget
    }

    static func session(_ chain: Chain, instance: Int, host: SimulatedHost, clock: ManualClock, seed: UInt64)
        -> Session
    {
        let instance = instance + Int(seed) * 1_000
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
            // The default configuration, with its jitter drawn from a seeded source so that the run repeats.
            let breaker = CircuitBreaker(
                configuration: CircuitBreaker.Configuration(
                    breakDuration: CircuitBreaker.Configuration.defaultBreakDuration(using: .seeded(UInt64(instance)))),
                clock: clock)
            return Session(
                transport: host, adapters: [RetryBudget(), breaker], retriers: [policy], clock: clock)
        case .retriesAndRatioBudget:
            return Session(
                transport: host, adapters: [RetryBudget(ratio: .default, clock: clock)], retriers: [policy],
                clock: clock)
        case .retriesBudgetAndFixedBreaker:
            let breaker = CircuitBreaker(configuration: .init(openDuration: .seconds(30)), clock: clock)
            return Session(
                transport: host, adapters: [RetryBudget(), breaker], retriers: [policy], clock: clock)
        }
    }

    static func run(
        _ chain: Chain, outage: Range<Duration> = outage, duration: Duration = .seconds(15), seed: UInt64 = 1
    ) async -> OutageSimulation.Result {
        await OutageSimulation(outage: outage, duration: duration, seed: seed).run { instance, host, clock in
            session(chain, instance: instance, host: host, clock: clock, seed: seed)
        }
    }

    @Test(
        "After a 5 s outage the default chain hands the host back: 90 % success, load normal within 1 s",
        arguments: [1, 2, 3] as [UInt64])
    func shortOutage(seed: UInt64) async {
        let after = Duration.seconds(8)..<Duration.seconds(13)
        let baseline = await Self.run(.noRetries, seed: seed)
        let result = await Self.run(.retriesBudgetAndBreaker, seed: seed)
        print(
            "seed \(seed): success \(result.success(in: after)), normal \(result.backToNormal(after: .seconds(8), end: .seconds(15)))"
        )
        #expect(result.success(in: after) >= 0.9, "success \(result.success(in: after))")
        let normal = result.backToNormal(after: .seconds(8), end: .seconds(15))
        let baselineNormal = baseline.backToNormal(after: .seconds(8), end: .seconds(15))
        #expect(normal <= baselineNormal + .seconds(1), "back to normal \(normal) after, baseline \(baselineNormal)")
        #expect(result.load(in: Self.outage) <= 1, "the breaker let more through than was offered")
    }

    @Test("In a 60 s outage the attempts that reach the host stay within 0.2× the requests offered")
    func longOutage() async {
        let outage = Duration.seconds(3)..<Duration.seconds(63)
        let result = await Self.run(.retriesBudgetAndBreaker, outage: outage, duration: .seconds(70))
        #expect(result.load(in: outage) <= 0.2, "load \(result.load(in: outage))")
        print(
            "60 s outage: load \(result.load(in: outage)), after \(result.load(in: Duration.seconds(63)..<Duration.seconds(68)))"
        )
    }

    @Test("Retries amplify an outage, a budget less, and a breaker open for a fixed 30 s blacks the host out")
    func table() async {
        let after = Duration.seconds(8)..<Duration.seconds(13)
        let none = await Self.run(.noRetries)
        let retries = await Self.run(.retries)
        let budget = await Self.run(.retriesAndBudget)
        let fixed = await Self.run(.retriesBudgetAndFixedBreaker)
        #expect(none.load(in: Self.outage) == 1 && none.success(in: after) == 1)
        #expect(retries.load(in: Self.outage) > 3, "retries: \(retries.load(in: Self.outage))")
        #expect(budget.load(in: Self.outage) < retries.load(in: Self.outage))
        #expect(budget.load(in: Self.outage) > 2.5, "budget: \(budget.load(in: Self.outage))")
        #expect(fixed.load(in: Self.outage) <= 0.15, "fixed 30 s breaker: \(fixed.load(in: Self.outage))")
        #expect(fixed.success(in: after) == 0, "the fixed 30 s breaker let callers through after the outage")

        // The ratio budget: the outage fits in one 10 s window, in which each instance may retry 10 % of its requests
        // (those before the outage too) plus the floor's 10. Far below the bucket, whatever the traffic.
        let ratio = await Self.run(.retriesAndRatioBudget)
        let offered = Double(ratio.offered(in: Self.outage))
        let allowed = 0.1 * Double(ratio.offered(in: .zero..<Self.outage.upperBound)) + 20 * 10
        #expect(ratio.load(in: Self.outage) <= (offered + allowed) / offered, "ratio: \(ratio.load(in: Self.outage))")
        #expect(ratio.load(in: Self.outage) < budget.load(in: Self.outage) - 1)
        let late = Duration.seconds(7)..<Duration.seconds(8)
        #expect(ratio.success(in: late) > budget.success(in: late), "retries landing after the recovery")
    }

    @Test(
        "With x-should-retry: false the preset sends at most one attempt per request, and 90 % of the next succeed",
        arguments: [20, 2_000])
    func thePresetHearsAServerThatAsksForNoRetry(instances: Int) async {
        var simulation = OutageSimulation(outage: Self.outage, duration: .seconds(15))
        simulation.instances = instances
        simulation.outageFields = [("x-should-retry", "false")]
        // No deadline: the simulation settles when each request in flight sleeps on the clock once (its backoff).
        let result = await simulation.run { instance, host, clock in
            Session(
                transport: host, resilience: Resilience(clock: clock, random: .seeded(UInt64(instance)), deadline: nil),
                clock: clock)
        }
        let after = Self.outage.upperBound..<Self.outage.upperBound + .seconds(5)

        #expect(result.load(in: Self.outage) <= 1.05, "load \(result.load(in: Self.outage))")
        #expect(result.success(in: after) >= 0.9, "success \(result.success(in: after))")
    }
}
