import Foundation
import ReboundTesting
import Testing

@testable import Rebound

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Hedges and the parts that hold room for attempts (a concurrency limiter's places, a pacer's quota, an adaptive rate
/// limiter's tokens): a hedge starts only where there is room for it now, and never waits on the client for it.
@Suite("Hedges and the parts that hold room", .timeLimit(.minutes(1)))
struct HedgeRoomTests {
    static let slow = URLRequest(url: URL(string: "https://api.example.com/slow")!)
    static let prime = URLRequest(url: URL(string: "https://api.example.com/prime")!)

    /// A part with no room left for a hedge of a request to api.example.com once that request's first attempt was
    /// let through, after a priming request: a limiter of one place, a pacer to which the host said one request is left this minute, or an
    /// adaptive rate limiter that paces the host (a 429) with one token in its bucket.
    static func partWithRoomForOne(
        _ part: String, clock: ManualClock, transport: ScriptedTransport, enforcement: Enforcement
    ) async -> any RequestAdapter {
        switch part {
        case "limiter":
            let limiter = ConcurrencyLimiter(
                configuration: .init(limit: .fixed(1)), clock: clock, enforcement: enforcement)
            // Sent like the others' priming request, so that the request's first attempt is the transport's second.
            _ = try? await Session(transport: transport, adapters: [limiter], clock: clock).send(prime)
            return limiter
        case "pacer":
            let pacer = RateLimitPacer(clock: clock, enforcement: enforcement)
            _ = try? await Session(transport: transport, adapters: [pacer], clock: clock).send(prime)
            return pacer
        default:
            let pacing = AdaptiveRateLimiter(clock: clock)
            _ = try? await Session(transport: transport, adapters: [pacing], clock: clock).send(prime)
            // The bucket fills at the lowest rate, half a token a second: one token in 2 s.
            clock.advance(by: .seconds(2))
            return pacing
        }
    }

    /// An adapter that holds every attempt after the first for 50 ms on `clock`, as one whose credential is refreshing
    /// holds a hedge.
    static func slowForHedges(on clock: ManualClock) -> Adapter {
        Adapter { request, context in
            if context.attempt > 1 { try await clock.sleep(for: .milliseconds(50)) }
            return request
        }
    }

    /// Sends a request (`send`) on `simulation`, moving `clock` by each of `steps` once every task settled; returns what
    /// `recorder` was told after the last step, and the response once the clock moved `rest` more.
    @available(macOS 15.0, iOS 18.0, macCatalyst 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    fileprivate static func send(
        on simulation: Simulation, clock: ManualClock, steps: [Duration], reading recorder: AttemptLog,
        then rest: Duration, _ send: @escaping @Sendable () async -> Response?
    ) async -> ([String], Response?) {
        await simulation.run { () -> ([String], Response?) in
            let task = Task(executorPreference: simulation.executor) { await send() }
            for step in steps {
                await simulation.settle()
                clock.advance(by: step)
            }
            await simulation.settle()
            let told = recorder.told
            clock.advance(by: rest)
            await simulation.settle()
            return (told, await task.value)
        }
    }

    /// What a hedged GET of /slow through `room` (after a budget) got, and what the observers heard of refusals, run on
    /// a simulation: the first attempt answers "slow" after 1 s, any other "fast" at once. The clock passes the hedging
    /// delay, then the first attempt's second, each once every task settled.
    @available(macOS 15.0, iOS 18.0, macCatalyst 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    static func sendHedged(
        through part: String, enforcement: Enforcement
    ) async -> (response: Response?, transport: ScriptedTransport, spent: Bool, refusals: [ShadowRefusal]) {
        let simulation = Simulation()
        let clock = ManualClock()
        return await simulation.run { [clock] in
            // The priming request tells the host's state: a quota of one request left, or a 429 that has the host paced.
            let transport = ScriptedTransport(clock: clock) { request, number in
                guard request.url?.path != "/prime" else {
                    return part == "rateLimiter"
                        ? .status(429) : .response(headers: ["RateLimit-Remaining": "1", "RateLimit-Reset": "60"])
                }
                return number == 2 ? .response(body: "slow").delayed(by: .seconds(1)) : .response(body: "fast")
            }
            let room = await Self.partWithRoomForOne(part, clock: clock, transport: transport, enforcement: enforcement)
            let budget = RetryBudget()
            let before = budget.tokens(for: exampleURL)
            let observed = ShadowEnforcementTests.ShadowRecorder()
            let session = Session(
                transport: transport, adapters: [budget, room], retriers: [RetryPolicy()], observers: [observed],
                hedging: Hedging(delay: .milliseconds(100)), clock: clock)
            let task = Task(executorPreference: simulation.executor) { try? await session.send(Self.slow) }
            for step in [100, 1_000] {
                await simulation.settle()
                clock.advance(by: .milliseconds(step))
            }
            let response = await task.value
            return (response, transport, budget.tokens(for: exampleURL) != before, observed.refusals)
        }
    }

    @Test(
        "A part with no room for a hedge starts none: the hedge takes no attempt number, spends no budget and waits for nothing",
        arguments: ["limiter", "pacer", "rateLimiter"])
    func noRoomNoHedge(part: String) async throws {
        guard #available(macOS 15.0, iOS 18.0, macCatalyst 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) else {
            return
        }
        let (response, transport, spent, refusals) = await Self.sendHedged(through: part, enforcement: .enforced)

        let attempts = try #require(response?.attempts)
        #expect(response.map { String(decoding: $0.data, as: UTF8.self) } == "slow")
        #expect(attempts.map(\.number) == [1], "the hedge took no attempt number: \(attempts)")
        #expect(transport.requestCount == 2, "the priming request and the first attempt only")
        #expect(!spent, "a hedge that did not start spends nothing")
        #expect(refusals.isEmpty)
    }

    @Test(
        "In shadow mode, a limiter or a pacer with no room for a hedge lets it start and tells the refusal it would have made",
        arguments: ["limiter", "pacer"])
    func noRoomInShadowStartsTheHedge(part: String) async throws {
        guard #available(macOS 15.0, iOS 18.0, macCatalyst 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) else {
            return
        }
        let (response, _, spent, refusals) = await Self.sendHedged(through: part, enforcement: .shadow)

        let attempts = try #require(response?.attempts)
        #expect(response.map { String(decoding: $0.data, as: UTF8.self) } == "fast")
        #expect(attempts.map(\.hedge) == [0, 1])
        #expect(spent, "the budget paid for the hedge that was sent")
        #expect(refusals.map(\.stage) == [.hedge])
        #expect(refusals.first?.attempt == 2)
        #expect(refusals.first?.reason == (part == "limiter" ? .concurrencyLimit : .rateLimited))
    }

    @Test(
        "A hedge whose room went to another request while an earlier adapter held it is refused, not queued or paced",
        arguments: ["limiter", "pacer"])
    func aHedgeNeverWaitsForRoomInAdapt(part: String) async throws {
        guard #available(macOS 15.0, iOS 18.0, macCatalyst 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) else {
            return
        }
        let simulation = Simulation()
        let clock = ManualClock()
        let (queued, waits, attempts) = await simulation.run { [clock] () -> (Int?, Int, [Int]) in
            // Two places (or two requests of the quota), and a queue the hedge could wait in.
            let limiter = ConcurrencyLimiter(
                configuration: .init(limit: .fixed(2), maximumQueued: 5, queueTimeout: .seconds(30)), clock: clock)
            let pacer = RateLimitPacer(clock: clock)
            let transport = ScriptedTransport(clock: clock) { request, number in
                switch request.url?.path {
                case "/prime": .response(headers: ["RateLimit-Remaining": "2", "RateLimit-Reset": "5"])
                case "/other": .status(200).delayed(by: .seconds(10))
                default: number <= 2 ? .response(body: "slow").delayed(by: .seconds(1)) : .response(body: "fast")
                }
            }
            let room: any RequestAdapter = part == "limiter" ? limiter : pacer
            if part == "pacer" {
                _ = try? await Session(transport: transport, adapters: [pacer], clock: clock).send(Self.prime)
            }
            // Holds the hedge back before it reaches the part, until the gate opens.
            let gate = Gate()
            let holdsTheHedge = Adapter { request, context in
                if context.attempt == 2 { await gate.wait() }
                return request
            }
            let session = Session(
                transport: transport, adapters: [holdsTheHedge, room], retriers: [RetryPolicy()],
                hedging: Hedging(delay: .milliseconds(100)), clock: clock)
            let hedged = Task(executorPreference: simulation.executor) { try? await session.send(Self.slow) }
            await simulation.settle()
            clock.advance(by: .milliseconds(100))
            await simulation.settle()
            // The hedge was let start with room left, and waits at the gate; another request takes that room.
            let other = Task(executorPreference: simulation.executor) {
                try? await session.send(URLRequest(url: URL(string: "https://api.example.com/other")!))
            }
            await simulation.settle()
            await gate.open()
            await simulation.settle()
            let queued = part == "limiter" ? limiter.snapshot(for: "api.example.com").queued : nil
            // A wait for the renewal, about 5 s away: longer than the first attempt's second, shorter than /other's ten.
            let waits = clock.sleeps.filter { $0 > .seconds(1) && $0 < .seconds(10) }.count
            clock.advance(by: .seconds(1))
            await simulation.settle()
            let response = await hedged.value
            clock.advance(by: .seconds(10))
            _ = await other.value
            return (queued, waits, response?.attempts.map(\.hedge) ?? [])
        }

        #expect(attempts == [1, 0], "the hedge was refused, then the first attempt answered")
        if part == "limiter" { #expect(queued == 0, "the hedge did not queue") }
        #expect(waits == 0, "the hedge did not wait for the quota's renewal")
    }

    @Test(
        "A hedge an adapter stops before it is sent is refunded, starts no other hedge and is told as a loser, not as a retry",
        arguments: [false, true])
    func aHedgeStoppedInAdaptEndsTheRoundsHedging(ratio: Bool) async throws {
        guard #available(macOS 15.0, iOS 18.0, macCatalyst 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) else {
            return
        }
        let simulation = Simulation()
        let clock = ManualClock()
        let budget =
            ratio
            ? RetryBudget(ratio: .init(percent: 0, window: .seconds(10), minimumRetriesPerSecond: 1), clock: clock)
            : RetryBudget()
        let before = budget.tokens(for: exampleURL)
        // Lets the first attempt through and stops every other, as a part with no room for it would.
        let stopped = Locked(0)
        let stopsHedges = Adapter { request, context in
            guard context.attempt == 1 else {
                stopped.withLock { $0 += 1 }
                throw TestError("no room")
            }
            return request
        }
        let recorder = AttemptLog()
        let transport = ScriptedTransport(clock: clock) { _, number in
            number == 1 ? .response(body: "slow").delayed(by: .seconds(1)) : .response(body: "fast")
        }
        let session = Session(
            transport: transport, adapters: [budget, stopsHedges], retriers: [RetryPolicy()], observers: [recorder],
            hedging: Hedging(delay: .milliseconds(100), maximumInFlight: 3, maximumAttempts: 3), clock: clock)
        // Read once the hedge was stopped and its failure handled, while the first attempt is still in flight.
        let (toldMidRound, response) = await Self.send(
            on: simulation, clock: clock, steps: [.milliseconds(100)], reading: recorder, then: .seconds(1)
        ) { try? await session.send(Self.slow) }

        #expect(toldMidRound.isEmpty, "a hedge stopped before it was sent is not told as a retry")
        #expect(response.map { String(decoding: $0.data, as: UTF8.self) } == "slow")
        #expect(stopped.withLock { $0 } == 1, "no other hedge started")
        #expect(transport.requestCount == 1)
        #expect(response?.attempts.map(\.hedge) == [1, 0])
        #expect(recorder.told == ["#2 hedge 1 cancelled", "#1 hedge 0 succeeded"])
        #expect(budget.tokens(for: exampleURL) == before, "a hedge never sent is refunded")
        #expect(budget.requestsWithHedges == 0)
    }

    /// How the retriers answer the first attempt's 503 in ``aHedgeThatNeverLeftIsNotTheRoundsLastWord(answer:)``.
    enum FirstAnswer: String, CaseIterable, CustomTestStringConvertible {
        /// A retry, at once (the policy's answer comes before the hedge is refused).
        case retry
        /// A retry, after the hedge is refused (a retrier that takes its time, as one that refreshes a credential).
        case slowRetry
        /// No retry: the policy's limit is reached.
        case limitReached
        /// None: the caller cancels the request while the retrier takes its time.
        case cancelled

        var testDescription: String { rawValue }
    }

    @Test(
        "A hedge refused when it reaches the limiter, the last attempt in flight, leaves the request going on as without hedging",
        arguments: FirstAnswer.allCases)
    func aHedgeThatNeverLeftIsNotTheRoundsLastWord(answer: FirstAnswer) async throws {
        guard #available(macOS 15.0, iOS 18.0, macCatalyst 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) else {
            return
        }
        let simulation = Simulation()
        let clock = ManualClock()
        let limiter = ConcurrencyLimiter(
            configuration: .init(limit: .fixed(2), maximumQueued: 5, queueTimeout: .seconds(30)), clock: clock)
        // A hedge takes 50 ms to reach the limiter: meanwhile other requests take the limiter's places.
        let slowForHedges = Self.slowForHedges(on: clock)
        let itemsAsked = Locked(0)
        let transport = ScriptedTransport(clock: clock) { request, _ in
            if request.url?.path == "/other" { return .status(200).delayed(by: .seconds(5)) }
            let asked = itemsAsked.withLock { count in
                count += 1
                return count
            }
            return asked == 1 ? .status(503).delayed(by: .milliseconds(120)) : .status(200)
        }
        let policy = RetryPolicy(retryLimit: answer == .limitReached ? 0 : 2, backoff: .constant(.seconds(1)))
        let slowly = Retrier { request, error in
            try? await clock.sleep(for: .milliseconds(100))
            return await policy.retry(request, dueTo: error)
        }
        let recorder = AttemptLog()
        let session = Session(
            transport: transport, adapters: [slowForHedges, limiter],
            retriers: [answer == .slowRetry || answer == .cancelled ? slowly : policy],
            observers: [recorder], hedging: Hedging(delay: .milliseconds(100)), clock: clock)
        let others = Session(transport: transport, adapters: [limiter], clock: clock)
        let other = URLRequest(url: URL(string: "https://api.example.com/other")!)
        let outcome = await simulation.run { [clock] () -> Result<Response, any Error> in
            let task = Task(executorPreference: simulation.executor) { () -> Result<Response, any Error> in
                do { return .success(try await session.send(exampleURL)) } catch { return .failure(error) }
            }
            var taking: [Task<Void, Never>] = []
            // 100 ms: the hedge starts, with a place free, and another request takes it; 120 ms: the first attempt's
            // 503 gives its place back, which a third request takes; 150 ms: the hedge reaches the limiter.
            for step in [100, 20, 30] {
                await simulation.settle()
                clock.advance(by: .milliseconds(step))
                await simulation.settle()
                if step != 30 {
                    taking.append(Task(executorPreference: simulation.executor) { _ = try? await others.send(other) })
                }
            }
            if answer == .cancelled {
                // The hedge was refused; the retrier still decides about the first attempt's 503.
                clock.advance(by: .milliseconds(10))
                await simulation.settle()
                task.cancel()
                await simulation.settle()
            }
            while let next = clock.nextDeadline {
                clock.advance(to: next)
                await simulation.settle()
            }
            for request in taking { await request.value }
            return await task.value
        }

        #expect(limiter.placesHeld == 0)
        switch answer {
        case .retry, .slowRetry:
            // The hedge is a loser, and the request goes on with the first attempt's failure as without hedging: the
            // policy's backoff, then a retry, which waits for a place.
            let response = try outcome.get()
            #expect(response.attempts.map(\.statusCode) == [nil, 503, 200])
            #expect(response.attempts.map(\.hedge) == [1, 0, 0])
            #expect(recorder.told == ["#2 hedge 1 cancelled", "#1 hedge 0 retry in 1 s", "#3 hedge 0 succeeded"])
        case .limitReached:
            // The request ends with the failure the policy declined, not with the hedge's refusal.
            let error = try #require(throws: ReboundError.self) { try outcome.get() }
            #expect(error.statusCode == 503)
            #expect(error.stopReason == .retryLimit)
            #expect(error.attempts.map(\.statusCode) == [nil, 503])
            #expect(recorder.told == ["#2 hedge 1 cancelled", "#1 hedge 0 failed"])
        case .cancelled:
            // Each attempt is told once: the first attempt's failure, whose question the request no longer needs, as
            // a loser, then the newest, with the request's cancellation.
            #expect(throws: CancellationError.self) { try outcome.get() }
            #expect(recorder.told == ["#1 hedge 0 cancelled", "#2 hedge 1 cancelled"])
            #expect(itemsAsked.withLock { $0 } == 1)
        }
    }

    @Test("A retry granted while the only attempt in flight waits in an adapter is told once that attempt is sent")
    func aRetryIsToldWhenAnAttemptCarriesIt() async throws {
        guard #available(macOS 15.0, iOS 18.0, macCatalyst 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) else {
            return
        }
        let simulation = Simulation()
        let clock = ManualClock()
        // The hedge takes 50 ms to reach the transport; the first attempt's 503 comes while it waits.
        let slowForHedges = Self.slowForHedges(on: clock)
        let transport = ScriptedTransport(clock: clock) { _, number in
            number == 1 ? .status(503).delayed(by: .milliseconds(120)) : .status(200)
        }
        let recorder = AttemptLog()
        let session = Session(
            transport: transport, adapters: [slowForHedges], retriers: [RetryPolicy()], observers: [recorder],
            hedging: Hedging(delay: .milliseconds(100)), clock: clock)
        let (toldWhileTheHedgeWaits, response) = await Self.send(
            on: simulation, clock: clock, steps: [.milliseconds(100), .milliseconds(20), .milliseconds(10)],
            reading: recorder, then: .milliseconds(20)
        ) { try? await session.send(exampleURL) }

        #expect(toldWhileTheHedgeWaits.isEmpty, "no attempt sent carries the retry yet")
        // Once the hedge was sent, the retry also started the next hedge, which the hedge's 200 then cancelled.
        #expect(response?.attempts.map(\.statusCode) == [503, nil, 200])
        #expect(recorder.told == ["#1 hedge 0 retry in 0 ms", "#3 hedge 2 cancelled", "#2 hedge 1 succeeded"])
    }
}

/// Hears every attempt's number, hedge and decision, in the order they are told.
private final class AttemptLog: AttemptObserver {
    private let entries = Locked<[String]>([])

    func attemptDidFinish(_ outcome: AttemptOutcome) async {
        entries.withLock { $0.append("#\(outcome.attempt.number) hedge \(outcome.attempt.hedge) \(outcome.decision)") }
    }

    var told: [String] { entries.withLock { $0 } }
}
