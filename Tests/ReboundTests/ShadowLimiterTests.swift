import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Parts that hold requests (a concurrency limiter, a pacer) in shadow mode: they hold nobody, and tell each refusal
/// they would have made.
@Suite("Shadow enforcement of the parts that hold")
struct ShadowLimiterTests {
    typealias ShadowRecorder = ShadowEnforcementTests.ShadowRecorder

    /// What one burst came to.
    struct Burst {
        /// The requests that failed with the limiter's error.
        var refused = 0
        /// The refusals told.
        var told: [ShadowRefusal] = []
        /// The attempts that reached the transport before any answered.
        var sentAtOnce = 0
        /// The places held and the attempts queued before any answered.
        var inFlight = 0
        var queued = 0
        /// The places held at the end.
        var placesHeld = 0
    }

    /// Ten GETs at once to one host, through the limiter `configuration` and `enforcement` make: `expectSent` of them
    /// take a place and answer after 1 s, `expectQueued` wait for a place and `expectRefused` are refused at once; once
    /// each is where it is expected, the clock moves past the answers.
    static func burst(
        _ configuration: ConcurrencyLimiter.Configuration, _ enforcement: Enforcement, expectSent: Int,
        expectQueued: Int = 0, expectRefused: Int = 0
    ) async throws -> Burst {
        let clock = ManualClock()
        let limiter = ConcurrencyLimiter(configuration: configuration, clock: clock, enforcement: enforcement)
        // The first wave answers after 1 s; an attempt that waited for a place, at once.
        let transport = ScriptedTransport(clock: clock) { _, number in
            number <= expectSent ? .status(200).delayed(by: .seconds(1)) : .status(200)
        }
        let recorder = ShadowRecorder()
        let session = Session(
            transport: transport, adapters: [limiter], retriers: [RetryPolicy()], observers: [recorder], clock: clock)
        let (refusals, refused) = AsyncStream<Void>.makeStream()
        var burst = Burst()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<10 {
                group.addTask {
                    do {
                        _ = try await session.send(
                            URLRequest(url: URL(string: "https://api.example.com/items/\(index)")!))
                    } catch let error as ReboundError where error.stopReason == .concurrencyLimit {
                        refused.yield()
                    }
                }
            }
            // Every request where it is expected before the clock moves: refused and back, waiting in the queue (its
            // timeout sleeping), or sent (its answer's delay sleeping).
            var refusal = refusals.makeAsyncIterator()
            for _ in 0..<expectRefused { await refusal.next() }
            try await transport.waitForRequests(expectSent)
            try await clock.waitForSleepers(expectSent + expectQueued)
            burst.sentAtOnce = transport.requestCount
            let snapshot = limiter.snapshot(for: "api.example.com")
            (burst.inFlight, burst.queued) = (snapshot.inFlight, snapshot.queued)
            burst.refused = expectRefused
            clock.advance(by: .seconds(1))
            try await group.waitForAll()
            refused.finish()
            // None refused after the clock moved.
            while await refusal.next() != nil { burst.refused += 1 }
        }
        burst.told = recorder.refusals
        burst.placesHeld = limiter.placesHeld
        return burst
    }

    @Test func aShadowLimiterTellsTheRefusalsTheEnforcedOneMakesWithNoQueue() async throws {
        let noQueue = ConcurrencyLimiter.Configuration(limit: .fixed(4))
        let enforced = try await Self.burst(noQueue, .enforced, expectSent: 4, expectRefused: 6)
        let shadow = try await Self.burst(noQueue, .shadow, expectSent: 10)

        #expect(enforced.refused == 6)
        #expect(enforced.told.isEmpty)
        #expect(shadow.refused == 0)
        #expect(shadow.sentAtOnce == 10)
        // The six the limiter would have refused hold no place.
        #expect(shadow.inFlight == 4)
        #expect(shadow.told.count == enforced.refused)
        #expect(Set(shadow.told.map(\.requestID)).count == 6)
        #expect(
            shadow.told.allSatisfy {
                $0.reason == .concurrencyLimit && $0.part == "ConcurrencyLimiter" && $0.key == "api.example.com"
                    && $0.stage == .attempt
                    && ($0.error as? ConcurrencyLimitExceeded).map { $0.limitHit == .inFlight && $0.inFlight == 4 }
                        == true
            })
        #expect(enforced.placesHeld == 0)
        #expect(shadow.placesHeld == 0)
    }

    @Test func aShadowLimiterQueuesNobody() async throws {
        // Enforced, 4 go, 2 wait for a place and 4 are refused; in shadow every one goes at once, and the 6 that
        // found every place taken are told.
        let queue = ConcurrencyLimiter.Configuration(limit: .fixed(4), maximumQueued: 2, queueTimeout: .seconds(5))
        let enforced = try await Self.burst(queue, .enforced, expectSent: 4, expectQueued: 2, expectRefused: 4)
        let shadow = try await Self.burst(queue, .shadow, expectSent: 10)

        #expect(enforced.queued == 2)
        #expect(enforced.refused == 4)
        #expect(shadow.queued == 0)
        #expect(shadow.inFlight == 4)
        #expect(shadow.sentAtOnce == 10)
        #expect(shadow.refused == 0)
        #expect(shadow.told.count == 6)
        #expect(shadow.placesHeld == 0)
    }

    /// What one paced run came to.
    struct Paced {
        /// The requests the pacer refused, by their index.
        var refused: [String] = []
        /// The refusals told, each as its request's label.
        var told: [String] = []
        var toldParts: Set<String> = []
        /// The longest an attempt took: a pacer's wait is in it.
        var longestAttempt = Duration.zero
        var sent = 0
        var kept = 0
    }

    /// A request every 100 ms for 6 s to one host, whose answers at 0 and 0.5 s of every 2 s say that 2 requests are
    /// left for 1 s (the answers are the same whatever the pacer sends; the second comes to a request an enforced
    /// pacer refuses, so it never reaches the pacer); `makePacer` paces them.
    static func paced(_ makePacer: (FastForwardClock) -> RateLimitPacer) async -> Paced {
        let clock = FastForwardClock()
        let pacer = makePacer(clock)
        let transport = ScriptedTransport(clock: clock) { _, _ in
            let slot = Int(clock.now.offset / .milliseconds(100))
            guard [0, 5].contains(slot % 20) else { return .status(200) }
            return .response(headers: ["RateLimit-Remaining": "2", "RateLimit-Reset": "1"])
        }
        let recorder = ShadowRecorder()
        let session = Session(
            transport: transport, adapters: [pacer], retriers: [RetryPolicy()], observers: [recorder], clock: clock)
        var run = Paced()
        for index in 0..<60 {
            try? await clock.sleep(until: TestInstant(offset: .milliseconds(100 * index)))
            do {
                let response = try await session.send(
                    URLRequest(url: URL(string: "https://api.example.com/items")!), label: "\(index)")
                run.longestAttempt = max(run.longestAttempt, response.attempts.map(\.duration).max() ?? .zero)
            } catch let error as ReboundError {
                if error.stopReason == .rateLimited { run.refused.append("\(index)") }
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
        run.told = recorder.refusals.map { $0.label ?? "-" }
        run.toldParts = Set(recorder.refusals.map { "\($0.part) \($0.reason.name) \($0.stage) \($0.key ?? "-")" })
        run.sent = transport.requestCount
        run.kept = pacer.requestsKept
        return run
    }

    @Test func aShadowPacerTellsTheRefusalsTheEnforcedOneMakesWithNoWaitAndHoldsNobody() async {
        let enforced = await Self.paced { RateLimitPacer(maximumWait: .zero, clock: $0) }
        // A pacer in shadow mode holds nobody, whatever its maximum wait.
        let shadow = await Self.paced { RateLimitPacer(clock: $0, enforcement: .shadow) }
        let waiting = await Self.paced { RateLimitPacer(clock: $0) }

        // Of every 20 requests, the first says the quota, 2 take it and 7 find it spent until the renewal.
        #expect(enforced.refused.count == 21)
        #expect(shadow.told == enforced.refused)
        #expect(shadow.toldParts == ["RateLimitPacer rateLimited attempt api.example.com"])
        #expect(shadow.refused.isEmpty)
        #expect(shadow.sent == 60)
        #expect(shadow.longestAttempt == .zero)
        #expect(waiting.longestAttempt > .milliseconds(500))
        #expect(shadow.kept == 0)
        #expect(enforced.kept == 0)
    }
}
