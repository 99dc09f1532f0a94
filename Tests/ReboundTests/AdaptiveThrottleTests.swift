import Foundation
import ReboundTesting
import Testing

@testable import Rebound

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A generator that answers a fixed value and counts how often it was asked: a throttle's draws, counted.
private struct CountedStuck: RandomNumberGenerator, Sendable {
    final class Count: Sendable {
        private let value = Locked(0)
        func increment() { value.withLock { $0 += 1 } }
        var current: Int { value.withLock { $0 } }
    }

    let value: UInt64
    let count: Count

    mutating func next() -> UInt64 {
        count.increment()
        return value
    }
}

/// Draws that never reject (a draw of almost 1 is never below a probability of at most 0.9).
private let neverRejects = RandomSource(Stuck(value: .max))
/// Draws that always reject when the probability is above 0.
private let alwaysRejects = RandomSource(Stuck(value: 0))

@Suite("AdaptiveThrottle", .timeLimit(.minutes(5)))
struct AdaptiveThrottleTests {
    /// A session that sends each request once, through `throttle`.
    private func session(_ throttle: AdaptiveThrottle, _ transport: ScriptedTransport) -> Session {
        Session(transport: transport, adapters: [throttle], clock: FastForwardClock())
    }

    /// The rule without its floor and cap.
    private static let bare = AdaptiveThrottle.Configuration(maximumRejection: 1, minimumRequests: 0)

    @Test("The probability is the SRE book's rule over the window's requests and accepts")
    func theRule() async throws {
        let clock = ManualClock()
        let throttle = AdaptiveThrottle(configuration: Self.bare, clock: clock, random: neverRejects)
        // 6 accepted, then 14 failures: 20 requests, 6 accepts.
        let transport = ScriptedTransport { _, number in number <= 6 ? .status(200) : .status(503) }
        let session = session(throttle, transport)
        for _ in 0..<20 { _ = try? await session.send(request()) }

        let snapshot = throttle.snapshot(for: "api.example.com")
        #expect(snapshot.requests == 20)
        #expect(snapshot.accepts == 6)
        #expect(snapshot.rejectionProbability == (20 - 2 * 6) / 21.0)
        #expect(throttle.snapshot(for: exampleURL) == snapshot)
        #expect(throttle.snapshot(for: "other.example.com") == .init(requests: 0, accepts: 0, rejectionProbability: 0))
    }

    @Test("Before an adapter that moves requests to another host, it draws for the host they are sent to")
    func drawsForTheHostSentTo() async throws {
        let throttle = AdaptiveThrottle(configuration: Self.bare, clock: ManualClock(), random: alwaysRejects)
        // Every request goes to one real host, whichever host it names; the real host fails them all.
        let moving = movingAdapter()
        let transport = ScriptedTransport { _, _ in .status(503) }
        let session = Session(transport: transport, adapters: [throttle, moving], clock: FastForwardClock())

        _ = try? await session.send(URL(string: "https://a.example.com/items")!)
        let error = await #expect(throws: ReboundError.self) {
            try await session.send(URL(string: "https://b.example.com/items")!)
        }

        // The first request's failure is the real host's, and the second request is drawn for the real host: rejected
        // (every draw rejects once the window has a failure), never sent.
        #expect(transport.requestCount == 1)
        let rejection = error?.underlyingError as? AdaptiveThrottleRejection
        #expect(rejection?.key == "real.example.com")
        #expect(error?.stopReason == .throttled)
        #expect(throttle.snapshot(for: "a.example.com").requests == 0)
        #expect(throttle.snapshot(for: "real.example.com").requests == 2)
    }

    @Test("A host that accepts half the requests or more is never throttled")
    func halfAcceptedIsEnough() async throws {
        let throttle = AdaptiveThrottle(configuration: Self.bare, clock: ManualClock(), random: alwaysRejects)
        let transport = ScriptedTransport { _, number in number % 2 == 1 ? .status(200) : .status(503) }
        let session = session(throttle, transport)
        // Accepted, failed, accepted, …: never below half, so never a rejection, though every draw would reject.
        for _ in 0..<100 {
            _ = try? await session.send(request())
            _ = try? await session.send(request())
        }
        #expect(transport.requestCount == 200)
        #expect(throttle.snapshot(for: exampleURL)?.rejectionProbability == 0)
    }

    @Test("The floor: nothing is rejected below the minimum of requests in the window")
    func theFloor() async throws {
        let configuration = AdaptiveThrottle.Configuration(minimumRequests: 10)
        let throttle = AdaptiveThrottle(configuration: configuration, clock: ManualClock(), random: alwaysRejects)
        let transport = ScriptedTransport { _, _ in .status(503) }
        let session = session(throttle, transport)
        for _ in 0..<9 { _ = try? await session.send(request()) }
        #expect(throttle.snapshot(for: exampleURL)?.rejectionProbability == 0)
        _ = try? await session.send(request())
        #expect(throttle.snapshot(for: exampleURL)?.rejectionProbability == 0.9, "10/11 capped at 0.9")
        #expect(transport.requestCount == 10)
    }

    @Test("A rejected request never leaves the client, fails with the rejection and counts as a request")
    func aRejection() async throws {
        let throttle = AdaptiveThrottle(configuration: Self.bare, clock: ManualClock(), random: alwaysRejects)
        let transport = ScriptedTransport { _, _ in .status(503) }
        let session = session(throttle, transport)
        _ = try? await session.send(request())
        #expect(throttle.snapshot(for: exampleURL)?.rejectionProbability == 0.5)

        let error = try await #require(throws: ReboundError.self) { try await session.send(request()) }

        #expect(transport.requestCount == 1)
        #expect(error.errorType == "throttled")
        guard case .adaptationFailed(let rejection as AdaptiveThrottleRejection) = error.reason else {
            Issue.record("reason: \(error.reason)")
            return
        }
        #expect(
            rejection
                == AdaptiveThrottleRejection(key: "api.example.com", rejectionProbability: 0.5, requests: 2, accepts: 0)
        )
        #expect(
            rejection.description
                == "request to api.example.com rejected by the client's adaptive throttle (probability 0.5: "
                + "2 requests, 0 accepted in its window)")
        #expect(throttle.snapshot(for: exampleURL)?.requests == 2)
        #expect(throttle.snapshot(for: exampleURL)?.accepts == 0)
    }

    @Test("Rejections not counted: the probability follows what reached the host, and falls as soon as it accepts")
    func rejectionsNotCounted() async throws {
        let clock = ManualClock()
        let configuration = AdaptiveThrottle.Configuration(minimumRequests: 0, countsRejections: false)
        let counted = AdaptiveThrottle(configuration: .init(minimumRequests: 0), clock: clock, random: alwaysRejects)
        let notCounted = AdaptiveThrottle(configuration: configuration, clock: clock, random: alwaysRejects)
        for throttle in [counted, notCounted] {
            let session = session(throttle, ScriptedTransport([.status(503)]))
            _ = try? await session.send(request())
            // Rejected ten times at p = 0.5: counted, they push the probability to 11/12 (capped at 0.9).
            for _ in 0..<10 { _ = try? await session.send(request()) }
        }
        #expect(counted.snapshot(for: exampleURL)?.requests == 11)
        #expect(counted.snapshot(for: exampleURL)?.rejectionProbability == 0.9)
        #expect(notCounted.snapshot(for: exampleURL)?.requests == 1)
        #expect(notCounted.snapshot(for: exampleURL)?.rejectionProbability == 0.5)
        let error = try await #require(throws: ReboundError.self) {
            try await session(notCounted, ScriptedTransport([])).send(request())
        }
        #expect(
            error.underlyingError as? AdaptiveThrottleRejection
                == .init(key: "api.example.com", rejectionProbability: 0.5, requests: 1, accepts: 0))
    }

    @Test("What counts as accepted: any response but 5xx, 408 and 429; cancellations count for nothing")
    func whatCountsAsAccepted() async throws {
        let throttle = AdaptiveThrottle(configuration: Self.bare, clock: ManualClock(), random: neverRejects)
        let steps: [ScriptedTransport.Step] = [
            .status(200), .status(404), .status(401), .status(500), .status(503), .status(408), .status(429),
            .urlError(.timedOut), .failure(CancellationError()),
        ]
        let session = session(throttle, ScriptedTransport(steps))
        for _ in steps { _ = try? await session.send(request()) }

        #expect(throttle.snapshot(for: exampleURL)?.requests == 8)
        #expect(throttle.snapshot(for: exampleURL)?.accepts == 3)
    }

    @Test("A classify of the caller's own decides, and is asked only about attempts that were sent")
    func aClassifyOfItsOwn() async throws {
        let asked = Locked<[Int]>([])
        let throttle = AdaptiveThrottle(
            configuration: Self.bare, clock: ManualClock(), random: neverRejects,
            classify: { outcome in
                asked.withLock { $0.append(outcome.attempt.statusCode ?? 0) }
                return outcome.attempt.statusCode == 404 ? .failure : .success
            })
        let refuse = Adapter { _, _ in throw TestError("refused") }
        let transport = ScriptedTransport([.status(404), .status(503)])
        let session = Session(transport: transport, adapters: [throttle], clock: FastForwardClock())
        _ = try? await session.send(request())
        _ = try? await session.send(request())
        // An attempt the throttle let through and a later adapter failed was never sent.
        _ = try? await session.send(request(), adapters: [refuse])

        #expect(asked.withLock { $0 } == [404, 503])
        #expect(throttle.snapshot(for: exampleURL)?.requests == 2)
        #expect(throttle.snapshot(for: exampleURL)?.accepts == 1)
    }

    @Test("An attempt refused after the throttle let it through (an open breaker) is not counted")
    func anAttemptNeverSent() async throws {
        let throttle = AdaptiveThrottle(configuration: Self.bare, clock: ManualClock(), random: neverRejects)
        let breaker = CircuitBreaker(clock: ManualClock())
        breaker.forceOpen()
        let transport = ScriptedTransport { _, _ in .status(200) }
        let session = Session(transport: transport, adapters: [throttle, breaker], clock: FastForwardClock())
        for _ in 0..<5 { _ = try? await session.send(request()) }

        #expect(transport.requestCount == 0)
        #expect(throttle.snapshot(for: exampleURL)?.requests == 0)
    }

    @Test("A retry is drawn for once, when it is granted; a rejected one is refused before its backoff")
    func retriesAreDrawnForAtTheirGrant() async throws {
        let count = CountedStuck.Count()
        let clock = ManualClock()
        let throttle = AdaptiveThrottle(
            configuration: Self.bare, clock: ManualClock(), random: RandomSource(CountedStuck(value: 0, count: count)))
        let transport = ScriptedTransport { _, _ in .status(503) }
        let session = Session(
            transport: transport, adapters: [throttle], retriers: [RetryPolicy(backoff: .constant(.seconds(1)))],
            clock: clock)

        // The first attempt is not drawn for (nothing counted yet); its failure is counted when its retry is asked
        // for, the retry drawn for and rejected at once, so nothing sleeps (the manual clock is never advanced).
        let error = try await #require(throws: ReboundError.self) { try await session.send(request()) }

        #expect(transport.requestCount == 1)
        #expect(clock.sleeps.isEmpty)
        #expect(error.errorType == "throttled")
        guard case .retryAborted(is AdaptiveThrottleRejection, .unacceptableStatusCode(503)) = error.reason else {
            Issue.record("reason: \(error.reason)")
            return
        }
        #expect(count.current == 1)
        #expect(throttle.snapshot(for: exampleURL)?.requests == 2, "the failed attempt and the rejected retry")
        #expect(throttle.grantsKept == 0)
    }

    @Test("A granted retry is not drawn for again when it is sent")
    func aGrantedRetryIsNotDrawnForAgain() async throws {
        let count = CountedStuck.Count()
        let throttle = AdaptiveThrottle(
            configuration: Self.bare, clock: ManualClock(),
            random: RandomSource(CountedStuck(value: .max, count: count)))
        let transport = ScriptedTransport([.status(503), .status(503), .status(200)])
        let session = Session(
            transport: transport, adapters: [throttle], retriers: [RetryPolicy(backoff: .zero)],
            clock: FastForwardClock())

        let response = try await session.send(request())

        #expect(response.retryCount == 2)
        // Each retry was drawn for once, at its grant, after its failed attempt was counted (the first attempt had
        // nothing to draw against); a second draw when a retry was sent would make four.
        #expect(count.current == 2)
        #expect(throttle.snapshot(for: exampleURL)?.requests == 3)
        #expect(throttle.snapshot(for: exampleURL)?.accepts == 1)
        #expect(throttle.grantsKept == 0)
    }

    @Test("A retry granted by the throttle and denied by a later gate leaves nothing behind")
    func aGrantDeniedLater() async throws {
        let throttle = AdaptiveThrottle(configuration: Self.bare, clock: ManualClock(), random: neverRejects)
        let transport = ScriptedTransport { _, _ in .status(503) }
        let session = Session(
            transport: transport, adapters: [throttle], retriers: [RetryPolicy(backoff: .zero)],
            gates: [DenyingGate()], clock: FastForwardClock())
        for _ in 0..<3 { _ = try? await session.send(request()) }

        #expect(transport.requestCount == 3)
        #expect(throttle.grantsKept == 0)
    }

    @Test("The window slides: a recovered host is let through again, and forgotten hosts are dropped")
    func theWindowSlides() async throws {
        let clock = ManualClock()
        let throttle = AdaptiveThrottle(configuration: Self.bare, clock: clock, random: neverRejects)
        let session = session(throttle, ScriptedTransport { _, _ in .status(503) })
        for _ in 0..<10 { _ = try? await session.send(request()) }
        #expect(throttle.snapshot(for: exampleURL)?.requests == 10)
        #expect(throttle.hostsKept == 1)

        clock.advance(by: .seconds(9))
        #expect(throttle.snapshot(for: exampleURL)?.requests == 10, "within the window")
        clock.advance(by: .seconds(1))
        #expect(throttle.snapshot(for: exampleURL)?.requests == 0, "a window later")
        #expect(throttle.snapshot(for: exampleURL)?.rejectionProbability == 0)

        // A new host makes the throttle drop the hosts it has not heard from within a window.
        _ = try? await session.send(request(.get, URL(string: "https://other.example.com/")!))
        #expect(throttle.hostsKept == 1)
    }

    @Test("Hosts are throttled apart, and sessions sharing a throttle share its counts")
    func perHostAndShared() async throws {
        let throttle = AdaptiveThrottle(configuration: Self.bare, clock: ManualClock(), random: alwaysRejects)
        let failing = session(throttle, ScriptedTransport { _, _ in .status(503) })
        let otherTransport = ScriptedTransport { _, _ in .status(200) }
        let other = session(throttle, otherTransport)
        _ = try? await failing.send(request())

        // The other session's request to the failing host is rejected: it shares the throttle's counts.
        await #expect(throws: ReboundError.self) { try await other.send(request()) }
        // Its request to another host is not.
        _ = try await other.send(request(.get, URL(string: "https://other.example.com/")!))
        #expect(otherTransport.requestCount == 1)
    }

    @Test("Wrapped in a decorator that forwards adapt, the throttle keeps its whole behaviour")
    func behindAWrapper() async throws {
        let throttle = AdaptiveThrottle(configuration: Self.bare, clock: ManualClock(), random: alwaysRejects)
        let transport = ScriptedTransport { _, _ in .status(503) }
        let session = Session(
            transport: transport, adapters: [ForwardingAdapter(wrapped: throttle)],
            retriers: [RetryPolicy(backoff: .zero)], clock: FastForwardClock())

        let error = try await #require(throws: ReboundError.self) { try await session.send(request()) }

        // The attempt was counted and the retry refused by the throttle as the request's gate.
        #expect(transport.requestCount == 1)
        #expect(error.errorType == "throttled")
        #expect(throttle.snapshot(for: exampleURL)?.requests == 2)
    }

    @Test("In a long outage about a tenth of the requests reach the host; after it, all of them again")
    func aLongOutageAndTheRecovery() async throws {
        let clock = ManualClock()
        let throttle = AdaptiveThrottle(clock: clock, random: .seeded(7))
        let healthy = Locked(true)
        let transport = ScriptedTransport { _, _ in healthy.withLock { $0 } ? .status(200) : .status(503) }
        let session = session(throttle, transport)
        /// Sends `seconds` of 100 requests a second; returns how many reached the host.
        func run(seconds: Int) async -> Int {
            let before = transport.requestCount
            for _ in 0..<(seconds * 100) {
                _ = try? await session.send(request())
                clock.advance(by: .milliseconds(10))
            }
            return transport.requestCount - before
        }
        _ = await run(seconds: 10)
        healthy.withLock { $0 = false }
        _ = await run(seconds: 10)  // the window fills with failures
        let duringTheOutage = await run(seconds: 30)
        #expect((240...360).contains(duringTheOutage), "\(duringTheOutage) of 3,000 requests reached the host")
        #expect(throttle.snapshot(for: exampleURL)?.rejectionProbability == 0.9)

        healthy.withLock { $0 = true }
        // Second by second after the outage: the figures Docs/AdaptiveThrottle.md quotes.
        var passed: [Int] = []
        for _ in 0..<30 { passed.append(await run(seconds: 1)) }
        let halfBy = try #require(passed.firstIndex { $0 >= 50 }) + 1
        let allBy = try #require(passed.firstIndex { $0 == 100 }) + 1
        #expect(halfBy == 15, "half let through by second \(halfBy): \(passed)")
        #expect(allBy == 19, "all let through by second \(allBy): \(passed)")
        #expect(throttle.snapshot(for: exampleURL)?.rejectionProbability == 0)
        #expect(await run(seconds: 1) == 100)
    }

    @Test("Every request ends once, and every attempt is counted once, under concurrency")
    func underConcurrency() async throws {
        let throttle = AdaptiveThrottle(configuration: Self.bare, clock: ManualClock(), random: .seeded(1))
        let transport = ScriptedTransport { _, number in number.isMultiple(of: 3) ? .status(200) : .status(503) }
        let session = Session(
            transport: transport, adapters: [throttle], retriers: [RetryPolicy(backoff: .zero)],
            clock: FastForwardClock())
        // Each request's end: `nil` for a success, else its error's type.
        let ends = await withTaskGroup(of: String?.self) { group in
            for _ in 0..<300 {
                group.addTask {
                    do {
                        _ = try await session.send(request())
                        return nil
                    } catch {
                        return (error as? ReboundError)?.errorType ?? "\(error)"
                    }
                }
            }
            return await group.reduce(into: [String?]()) { $0.append($1) }
        }

        #expect(ends.count == 300)
        let rejections = ends.filter { $0 == "throttled" }.count
        #expect(rejections > 0)
        let snapshot = try #require(throttle.snapshot(for: exampleURL))
        // Every attempt the host saw, and every rejection, is counted once.
        #expect(snapshot.requests == transport.requestCount + rejections)
        #expect(snapshot.accepts == transport.requestCount / 3)
        #expect(throttle.grantsKept == 0)
    }

    @Test func anInvalidSettingReadAtRunTimeIsATypedError() throws {
        #expect(throws: ConfigurationError.self) { try AdaptiveThrottle.Configuration.validated(multiplier: 0.5) }
        #expect(throws: ConfigurationError.self) { try AdaptiveThrottle.Configuration.validated(window: .zero) }
        #expect(throws: ConfigurationError.self) {
            try AdaptiveThrottle.Configuration.validated(maximumRejection: 1.5)
        }
        #expect(throws: ConfigurationError.self) { try AdaptiveThrottle.Configuration.validated(minimumRequests: -1) }
        let error = #expect(throws: ConfigurationError.self) {
            try AdaptiveThrottle.Configuration.validated(multiplier: .nan)
        }
        #expect(error?.message == "AdaptiveThrottle.Configuration.multiplier must be at least 1, got nan")
        #expect(try AdaptiveThrottle.Configuration.validated() == .default)
    }

    @Test func anInvalidSettingWrittenInCodeTrapsNamingIt() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = AdaptiveThrottle.Configuration(maximumRejection: 2)
        }

        expectStandardError(
            of: result, contains: "AdaptiveThrottle.Configuration.maximumRejection must be between 0 and 1, got 2.0")
    }
}
