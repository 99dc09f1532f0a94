import Foundation
import ReboundTesting
import Testing

@testable import Rebound

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Every per-host part keeps a bounded number of hosts: requests to ever new hosts (user-supplied URLs, redirects to
/// fresh hosts, a crawler) do not grow its memory without limit.
@Suite("Per-host memory", .timeLimit(.minutes(5)))
struct PerHostMemoryTests {
    /// One request to each of `count` distinct hosts through `adapters`, 4 ms apart on `clock`, each answered 200.
    private func visit(
        _ count: Int, hosts first: Int = 0, through adapters: [any RequestAdapter], clock: ManualClock
    ) async throws {
        let session = Session(
            transport: ScriptedTransport { _, _ in .status(200) }, adapters: adapters,
            retriers: [RetryPolicy(backoff: .zero)], clock: clock)
        for index in first..<(first + count) {
            _ = try await session.send(URL(string: "https://h\(index).example.com/")!)
            clock.advance(by: .milliseconds(4))
        }
    }

    /// The preset on `clock`, and a session on it that has sent one request to each of `count` distinct hosts, `spacing`
    /// apart, each answered 200.
    private func preset(
        visiting count: Int, every spacing: Duration, clock: ManualClock
    ) async throws -> (Resilience, Session) {
        let resilience = Resilience(clock: clock)
        let session = Session(
            transport: ScriptedTransport { _, _ in .status(200) }, resilience: resilience, clock: clock)
        for index in 0..<count {
            _ = try await session.send(URL(string: "https://h\(index).example.com/")!)
            clock.advance(by: spacing)
        }
        return (resilience, session)
    }

    /// The parts, each with `maximumHosts`, and how many hosts each keeps.
    private func parts(
        maximumHosts: Int, clock: ManualClock
    ) -> [(name: String, part: any RequestAdapter, kept: @Sendable () -> Int)] {
        let registry = CircuitBreakerRegistry(clock: clock, maximumHosts: maximumHosts)
        let bucket = RetryBudget(maximumHosts: maximumHosts)
        let ratio = RetryBudget(ratio: .default, clock: clock, maximumHosts: maximumHosts)
        let fixed = ConcurrencyLimiter(clock: clock, maximumHosts: maximumHosts)
        let aimd = ConcurrencyLimiter(
            configuration: .init(limit: .aimd(.init())), clock: clock, maximumHosts: maximumHosts)
        let throttle = AdaptiveThrottle(clock: clock, maximumHosts: maximumHosts)
        let pacing = AdaptiveRateLimiter(clock: clock, maximumHosts: maximumHosts)
        return [
            ("registry", registry, { registry.breakers.count }),
            ("token bucket", bucket, { bucket.hostsKept }),
            ("ratio budget", ratio, { ratio.hostsKept }),
            ("fixed limiter", fixed, { fixed.hostsKept }),
            ("AIMD limiter", aimd, { aimd.hostsKept }),
            ("throttle", throttle, { throttle.hostsKept }),
            ("rate limiter", pacing, { pacing.hostsKept }),
        ]
    }

    @Test("Hosts visited once and idle since are forgotten as new hosts come, by every per-host part")
    func idleHostsAreForgotten() async throws {
        let clock = ManualClock()
        let parts = parts(maximumHosts: 10_000, clock: clock)
        // 24 s of new hosts, 2,500 in each 10 s window: the first hosts' windows are empty again.
        try await visit(6_000, through: parts.map(\.part), clock: clock)

        // At most the hosts of one window, and those the hand has not reached again since.
        let learning = ["AIMD limiter", "rate limiter"]
        for (name, _, kept) in parts where !learning.contains(name) {
            #expect(kept() < 4_000, "\(name) keeps \(kept()) of 6,000 hosts")
        }
        // Parts whose state is at rest at once (closed breaker, full bucket, idle fixed limit) keep few.
        for (name, _, kept) in parts where !["ratio budget", "throttle"].contains(name) && !learning.contains(name) {
            #expect(kept() < 500, "\(name) keeps \(kept()) of 6,000 hosts")
        }
        // The limiters keep what they learned of a host used within the last minute: every host, here. A minute on,
        // new hosts make them forget those idle since, and only the hosts of the last minute stay.
        for (name, _, kept) in parts where learning.contains(name) {
            #expect(kept() == 6_000, "\(name) keeps \(kept()) of 6,000 hosts")
        }
        clock.advance(by: ConcurrencyLimiter.idleHorizon)
        try await visit(6_000, hosts: 6_000, through: parts.map(\.part), clock: clock)
        for (name, _, kept) in parts where learning.contains(name) {
            #expect(kept() < 8_000, "\(name) keeps \(kept()) of 12,000 hosts")
        }
    }

    @Test("Idle hosts are forgotten as requests go on to a known host, though none is new")
    func idleHostsAreForgottenWithoutNewHosts() async throws {
        let clock = ManualClock()
        let parts = parts(maximumHosts: 10_000, clock: clock)
        let resilience = Resilience(clock: clock)
        let preset = Session(
            transport: ScriptedTransport { _, _ in .status(200) }, resilience: resilience, clock: clock)
        try await visit(1_000, through: parts.map(\.part), clock: clock)
        for index in 0..<1_000 { _ = try await preset.send(URL(string: "https://h\(index).example.com/")!) }
        let presetBefore = [resilience.throttle.hostsKept, resilience.budget.hostsKept]

        // An hour later, requests to one host already kept: each moves the hand of every part's table.
        clock.advance(by: .seconds(3_600))
        let session = Session(
            transport: ScriptedTransport { _, _ in .status(200) }, adapters: parts.map(\.part), clock: clock)
        let known = URL(string: "https://h0.example.com/")!
        for _ in 0..<2_000 {
            _ = try await session.send(known)
            _ = try await preset.send(known)
        }

        // Two rounds of the hand (a step on each request): every host but the one in use is forgotten.
        #expect(presetBefore.allSatisfy { $0 > 100 })
        for (name, _, kept) in parts {
            #expect(kept() <= 2, "\(name) keeps \(kept()) of 1,000 hosts")
        }
        #expect(resilience.throttle.hostsKept <= 1 && resilience.budget.hostsKept <= 1)
        #expect(resilience.breakers.breakers.count <= 1)
    }

    @Test("A concurrency limiter forgets the hosts of a burst once they are idle, as requests go on to a known host")
    func aLimiterForgetsABurstsHostsWithoutNewHosts() async throws {
        let clock = ManualClock()
        let limiter = ConcurrencyLimiter(configuration: .init(limit: .aimd(.init())), clock: clock)
        let known = URL(string: "https://known.example.com/")!
        // The burst's requests are answered after a second; the known host at once.
        let transport = ScriptedTransport(clock: clock) { request, _ in
            request.url == known ? .status(200) : .status(200).delayed(by: .seconds(1))
        }
        let session = Session(transport: transport, adapters: [limiter], clock: clock)
        _ = try await session.send(known)
        // 500 requests in flight at once, each to a host of its own: none can be forgotten while it holds a place.
        let burst = (0..<500).map { index in
            Task { try await session.send(URL(string: "https://h\(index).example.com/")!) }
        }
        try await clock.waitForSleepers(500)
        #expect(limiter.hostsKept >= 500)
        clock.advance(by: .seconds(1))
        for request in burst { _ = try await request.value }

        // Idle now, with what the limit learned of each. Within a minute, requests to the known host keep them all;
        // once they have sat idle for a minute, two rounds of the hand, a step on each request, forget them.
        for _ in 0..<1_100 { _ = try await session.send(known) }
        #expect(limiter.hostsKept >= 500)
        clock.advance(by: ConcurrencyLimiter.idleHorizon)
        for _ in 0..<1_100 { _ = try await session.send(known) }
        #expect(limiter.hostsKept == 1)
    }

    @Test("A host used now and then keeps what its adaptive limit learned while other hosts take most requests")
    func aHostUsedNowAndThenKeepsItsLimit() async throws {
        let clock = ManualClock()
        let limiter = ConcurrencyLimiter(configuration: .init(limit: .aimd(.init())), clock: clock)
        let (a, b) = (URL(string: "https://a.example.com/")!, URL(string: "https://b.example.com/")!)
        // b fails, a answers: each failure of b shrinks its limit.
        let transport = ScriptedTransport(clock: clock) { request, _ in request.url == b ? .status(503) : .status(200) }
        let session = Session(transport: transport, adapters: [limiter], clock: clock)
        for _ in 0..<5 { _ = try? await session.send(b) }
        let learned = limiter.snapshot(for: "b.example.com").limit
        #expect(learned < 10)

        // Three requests to a for each to b: the limiter's look at its hosts passes b, idle, between b's requests.
        for _ in 0..<20 {
            for _ in 0..<3 { _ = try await session.send(a) }
            _ = try? await session.send(b)
        }
        // b's limit only went on shrinking: it was never forgotten and started again at 10.
        #expect(limiter.snapshot(for: "b.example.com").limit <= learned)
    }

    @Test("The first request after a quiet window forgets every host of the throttle and the budget idle since")
    func aQuietWindowForgetsIdleHostsAtOnce() async throws {
        let clock = ManualClock()
        let (resilience, session) = try await preset(visiting: 1_000, every: .milliseconds(1), clock: clock)
        let known = URL(string: "https://h0.example.com/")!
        let keptAfterVisits = (resilience.throttle.hostsKept, resilience.budget.hostsKept)

        // Within their windows (the throttle's 5 s, the budget's 10 s), the hosts still say something: kept.
        clock.advance(by: .seconds(1))
        _ = try await session.send(known)
        #expect(resilience.throttle.hostsKept >= keptAfterVisits.0 - 1)
        #expect(resilience.budget.hostsKept >= keptAfterVisits.1 - 1)

        // Past both windows, one request is enough: every host whose window is empty goes in one pass.
        clock.advance(by: .seconds(3_600))
        _ = try await session.send(known)
        #expect(keptAfterVisits.0 > 900 && keptAfterVisits.1 > 900)
        #expect(resilience.throttle.hostsKept == 1)
        #expect(resilience.budget.hostsKept == 1)
    }

    @Test("No part keeps more hosts than its cap, whatever their state")
    func theCapHolds() async throws {
        let clock = ManualClock()
        let parts = parts(maximumHosts: 100, clock: clock)
        // Every host fails once (a 500, retried): not at rest in any part that learns from failures.
        let session = Session(
            transport: ScriptedTransport { _, number in number.isMultiple(of: 2) ? .status(200) : .status(500) },
            adapters: parts.map(\.part), retriers: [RetryPolicy(backoff: .zero)], clock: clock)
        for index in 0..<1_000 {
            _ = try? await session.send(URL(string: "https://h\(index).example.com/")!)
        }

        for (name, _, kept) in parts {
            #expect(kept() <= 100, "\(name) keeps \(kept()) hosts")
        }
        // The last host is kept, with what it learned.
        let registry = try #require(parts.first?.part as? CircuitBreakerRegistry)
        #expect(registry.breakers["h999.example.com"] != nil)
    }

    @Test("The preset's memory stays bounded over 6,000 distinct hosts, 200 new ones a second")
    func thePresetStaysBounded() async throws {
        let (resilience, _) = try await preset(visiting: 6_000, every: .milliseconds(5), clock: ManualClock())
        // The breakers are at rest at once; the budget's 10 s window (2,000 hosts) and the throttle's 5 s one (1,000)
        // hold what they saw, and what the hand has not reached again.
        #expect(resilience.breakers.breakers.count < 500)
        #expect(resilience.budget.hostsKept < 3_200)
        #expect(resilience.throttle.hostsKept < 1_600)
    }

    @Test func anInvalidCapTrapsNamingIt() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = ConcurrencyLimiter(maximumHosts: 0)
        }
        expectStandardError(of: result, contains: "ConcurrencyLimiter.maximumHosts must be at least 1, got 0")
    }
}
