import Foundation
import ReboundTesting
import Testing

@testable import Rebound

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("AdaptiveRateLimiter, the AWS SDKs' adaptive mode", .timeLimit(.minutes(5)))
struct AdaptiveRateLimiterTests {
    /// Sends `count` requests through `session`, one every `interval` on `clock`.
    private func send(_ count: Int, every interval: Duration, _ session: Session, _ clock: ManualClock) async {
        for _ in 0..<count {
            _ = try? await session.send(request())
            clock.advance(by: interval)
        }
    }

    @Test("Nothing is paced before the host throttles; the rate of responses is measured")
    func nothingBeforeAThrottle() async throws {
        let clock = ManualClock()
        let limiter = AdaptiveRateLimiter(clock: clock)
        let transport = ScriptedTransport { _, _ in .status(200) }
        let session = Session(transport: transport, adapters: [limiter], clock: clock)

        await send(40, every: .milliseconds(100), session, clock)

        let snapshot = try #require(limiter.snapshot(for: exampleURL))
        #expect(!snapshot.isPacing)
        #expect(abs(snapshot.measuredRate - 10) < 0.5, "measured \(snapshot.measuredRate)")
        #expect(transport.requestCount == 40)
        #expect(clock.pendingSleepCount == 0)
    }

    @Test("A throttle cuts the rate to 0.7 of what was sent; then requests wait for their tokens")
    func aThrottlePaces() async throws {
        let clock = ManualClock()
        let limiter = AdaptiveRateLimiter(clock: clock)
        let throttled = ScriptedTransport { _, number in number == 41 ? .status(429) : .status(200) }
        let session = Session(transport: throttled, adapters: [limiter], clock: clock)
        await send(40, every: .milliseconds(100), session, clock)
        let measured = try #require(limiter.snapshot(for: exampleURL)).measuredRate

        _ = try? await session.send(request())  // the 429

        let snapshot = try #require(limiter.snapshot(for: exampleURL))
        #expect(snapshot.isPacing)
        #expect(abs(snapshot.rate - 0.7 * measured) < 0.7, "rate \(snapshot.rate) after \(measured)")
        #expect(snapshot.tokens < 1)

        // The next request has no token: it waits on the clock for one, then goes.
        let waiting = Task { try await session.send(request()) }
        try await clock.waitForSleepers(1)
        #expect(throttled.requestCount == 41)
        clock.advance(by: .seconds(1))
        _ = try await waiting.value
        #expect(throttled.requestCount == 42)
    }

    @Test("Before an adapter that moves requests to another host, it paces them by the host they are sent to")
    func pacesByTheHostSentTo() async throws {
        let clock = ManualClock()
        let limiter = AdaptiveRateLimiter(clock: clock)
        let moving = movingAdapter()
        let throttled = ScriptedTransport { _, number in number == 1 ? .status(429) : .status(200) }
        let session = Session(transport: throttled, adapters: [limiter, moving], clock: clock)

        _ = try? await session.send(URL(string: "https://a.example.com/items")!)  // the real host's 429
        #expect(limiter.snapshot(for: "real.example.com").isPacing)

        // A request naming another host goes to the paced real host: it waits for the real host's token.
        let waiting = Task { try await session.send(URL(string: "https://b.example.com/items")!) }
        // Until it either waits or is sent.
        while clock.pendingSleepCount == 0, throttled.requestCount < 2 { await Task.yield() }
        #expect(throttled.requestCount == 1)
        #expect(clock.pendingSleepCount == 1)
        clock.advance(by: .seconds(10))
        _ = try await waiting.value
        #expect(throttled.requestCount == 2)
        #expect(!limiter.snapshot(for: "b.example.com").isPacing)
    }

    @Test("After a throttle the rate grows back along CUBIC's curve, never above twice the measured rate")
    func theRateGrowsBack() async throws {
        let clock = ManualClock()
        let limiter = AdaptiveRateLimiter(clock: clock)
        let transport = ScriptedTransport { _, number in number == 21 ? .status(503) : .status(200) }
        let session = Session(transport: transport, adapters: [limiter], clock: clock)
        await send(21, every: .milliseconds(100), session, clock)
        let afterThrottle = try #require(limiter.snapshot(for: exampleURL)).rate

        var rates: [Double] = []
        for _ in 0..<20 {
            let task = Task { try await session.send(request()) }
            while clock.pendingSleepCount > 0 || transport.requestCount < 21 + rates.count + 1 {
                if let next = clock.nextDeadline { clock.advance(to: next) } else { await Task.yield() }
            }
            _ = try await task.value
            clock.advance(by: .milliseconds(200))
            let snapshot = try #require(limiter.snapshot(for: exampleURL))
            #expect(snapshot.rate <= max(2 * snapshot.measuredRate, AdaptiveRateLimiter.minimumRate) + 1e-9)
            rates.append(snapshot.rate)
        }
        #expect(rates.last! > afterThrottle)
    }

    @Test("A request cancelled while it waits for a token ends at once and is not sent")
    func cancelledWhileWaiting() async throws {
        let clock = ManualClock()
        let limiter = AdaptiveRateLimiter(clock: clock)
        let transport = ScriptedTransport { _, _ in .status(429) }
        let session = Session(transport: transport, adapters: [limiter], clock: clock)
        _ = try? await session.send(request())

        let waiting = Task { try await session.send(request()) }
        try await clock.waitForSleepers(1)
        waiting.cancel()

        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(transport.requestCount == 1)
    }

    @Test("Hosts are paced apart, and a wrapper that forwards adapt keeps the limiter's learning")
    func perHostAndWrapped() async throws {
        let clock = ManualClock()
        let limiter = AdaptiveRateLimiter(clock: clock)
        let session = Session(
            transport: ScriptedTransport { _, _ in .status(429) }, adapters: [ForwardingAdapter(wrapped: limiter)],
            clock: clock)
        _ = try? await session.send(request())

        #expect(limiter.snapshot(for: exampleURL)?.isPacing == true)
        #expect(limiter.snapshot(for: "other.example.com").isPacing == false)
    }
}
