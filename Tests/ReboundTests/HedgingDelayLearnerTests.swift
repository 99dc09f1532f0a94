import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Hedging that learns its delay")
struct HedgingDelayLearnerTests {
    /// A learner on `clock` that learned `latencies` of `a.example`, in milliseconds.
    static func learner(
        _ latencies: [Int], clock: ManualClock, configuration: HedgingDelayLearner.Configuration = .default
    ) -> HedgingDelayLearner {
        let learner = HedgingDelayLearner(configuration: configuration, clock: clock)
        for latency in latencies { learner.learn(.milliseconds(latency), for: "a.example") }
        return learner
    }

    @Test func theDelayIsThePercentileOfTheExtraLoadRaisedByATwentieth() {
        let clock = ManualClock()
        #expect(Self.learner(Array(1...19), clock: clock).snapshot(for: "a.example").delay == nil)
        // 100 answers of 1 to 100 ms: 2% of them take longer than 98 ms.
        let learner = Self.learner(Array(1...100), clock: clock)
        #expect(learner.snapshot(for: "a.example").delay == .microseconds(102_900))
        #expect(learner.snapshot(for: "a.example").samples == 100)
        // Read by a URL to the host too, keyed as the learner keys requests.
        #expect(learner.snapshot(for: URL(string: "https://a.example/items?page=2")!)?.samples == 100)
        #expect(learner.snapshot(for: URL(string: "https://b.example/items")!)?.samples == 0)
        // Held at the shortest delay.
        #expect(
            Self.learner(Array(repeating: 1, count: 50), clock: clock).snapshot(for: "a.example").delay
                == .microseconds(5_250))
        // The answers of a window past teach nothing.
        clock.advance(by: .seconds(32))
        #expect(learner.snapshot(for: "a.example").delay == nil)
        #expect(learner.snapshot(for: "a.example").samples == 0)
    }

    @Test func onlyTheLatestAnswersCount() {
        let clock = ManualClock()
        let configuration = HedgingDelayLearner.Configuration(samples: 50, minimumSamples: 10)
        // 50 answers of 500 ms, then 50 of 10 ms: the first are overwritten.
        let learner = Self.learner(
            Array(repeating: 500, count: 50) + Array(repeating: 10, count: 50), clock: clock,
            configuration: configuration)
        #expect(learner.snapshot(for: "a.example").delay == .microseconds(10_500))
    }

    @Test func hedgesAreCappedAtTheExtraLoadOfTheRequests() {
        let clock = ManualClock()
        let learner = Self.learner(Array(repeating: 10, count: 50), clock: clock)
        // 2% of a hedge per request: none before the 50th request, then one.
        for _ in 0..<49 { #expect(learner.startRound(for: "a.example") == .microseconds(10_500)) }
        #expect(!learner.admitsHedge(for: "a.example"))
        _ = learner.startRound(for: "a.example")
        #expect(learner.admitsHedge(for: "a.example"))
        #expect(!learner.admitsHedge(for: "a.example"))
        // Never more than one in hand, however many requests went unhedged; a retry's round adds nothing.
        for _ in 0..<500 { _ = learner.startRound(for: "a.example") }
        for _ in 0..<100 { _ = learner.startRound(for: "a.example", counts: false) }
        #expect(learner.admitsHedge(for: "a.example"))
        #expect(!learner.admitsHedge(for: "a.example"))
        // A hedge a gate refused is given back.
        learner.hedgeNotStarted(for: "a.example")
        #expect(learner.admitsHedge(for: "a.example"))
        #expect(learner.snapshot(for: "a.example").hedges == 2)
        #expect(learner.snapshot(for: "a.example").rounds == 550)
    }

    @Test func onlyRequestsThatMayBeRepeatedCountAndTeach() async throws {
        let clock = ManualClock()
        let learner = HedgingDelayLearner(clock: clock)
        let transport = ScriptedTransport(clock: clock) { request, _ in
            request.httpMethod == "POST" ? .status(201) : .status(503)
        }
        let session = Session(
            transport: transport, retriers: [RetryPolicy(backoff: .zero)], hedging: Hedging(learning: learner),
            clock: clock)
        for _ in 0..<5 {
            _ = try await session.send(URL(string: "https://a.example/orders")!, method: .post, body: Data("{}".utf8))
        }
        let afterPosts = learner.snapshot(for: "a.example")
        #expect(afterPosts.samples == 0 && afterPosts.rounds == 0)
        // A GET retried twice counts once, and its 503s teach nothing.
        _ = try? await session.send(URL(string: "https://a.example/items")!)
        #expect(transport.requestCount == 8)
        let afterGet = learner.snapshot(for: "a.example")
        #expect(afterGet.samples == 0 && afterGet.rounds == 1)
    }

    @Test func aPostTheAdaptersGiveAnIdempotencyKeyCountsAndTeaches() async throws {
        let clock = ManualClock()
        let learner = HedgingDelayLearner(clock: clock)
        let transport = ScriptedTransport(clock: clock) { request, _ in
            request.value(forHTTPHeaderField: "Idempotency-Key") == nil ? .status(400) : .status(201)
        }
        let session = Session(
            transport: transport, adapters: [IdempotencyKeyAdapter()], retriers: [RetryPolicy()],
            hedging: Hedging(learning: learner), clock: clock)
        for _ in 0..<5 {
            _ = try await session.send(URL(string: "https://a.example/orders")!, method: .post, body: Data("{}".utf8))
        }
        // Judged as it is sent, with its key: a request that may be repeated, as a GET.
        let snapshot = learner.snapshot(for: "a.example")
        #expect(snapshot.rounds == 5 && snapshot.samples == 5)
    }

    @Test func anInvalidNumberIsRejectedNamingIt() {
        #expect(throws: ConfigurationError.self) {
            try HedgingDelayLearner.Configuration.validated(maximumExtraLoad: 0)
        }
        do {
            _ = try HedgingDelayLearner.Configuration.validated(samples: 20, minimumSamples: 30)
            Issue.record("accepted")
        } catch {
            #expect(error.field == "HedgingDelayLearner.Configuration.minimumSamples")
        }
    }

    /// Sends `url` through `session` on `simulation`, moving `clock` to each deadline until the request ends; returns
    /// its attempts (none if it failed) and how long it took.
    @available(macOS 15.0, iOS 18.0, macCatalyst 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    static func send(
        _ url: URL, method: HTTPMethod = .get, through session: Session, on simulation: Simulation, clock: ManualClock
    ) async -> (attempts: [Attempt], elapsed: Duration) {
        let start = clock.now.offset
        let task = Task(executorPreference: simulation.executor) {
            (try? await session.send(url, method: method))?.attempts ?? []
        }
        await simulation.settle()
        while let next = clock.nextDeadline {
            clock.advance(to: next)
            await simulation.settle()
        }
        return (await task.value, clock.now.offset - start)
    }

    /// A learner on `clock` that learned 50 answers of 10 ms from `a.example` and counted 50 of its requests: its delay
    /// is 10.5 ms, and one hedge is in hand.
    static func trained(on clock: ManualClock) -> HedgingDelayLearner {
        let learner = HedgingDelayLearner(clock: clock)
        for _ in 0..<50 { learner.learn(.milliseconds(10), for: "a.example") }
        for _ in 0..<50 { _ = learner.startRound(for: "a.example") }
        return learner
    }

    @Test func theHedgeA401StartsInPlaceOfItsRetryIsNotCountedAgainstTheCap() async {
        guard #available(macOS 15.0, iOS 18.0, macCatalyst 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) else {
            return
        }
        let simulation = Simulation()
        let clock = ManualClock()
        let (attempts, elapsed, hedges) = await simulation.run { [clock] () async -> ([Attempt], Duration, Int) in
            // The old credential gets a 401, after 600 ms on the first attempt and at once on the hedge; the new one a
            // 200 after 10 ms.
            let transport = ScriptedTransport(clock: clock) { request, number in
                guard request.value(forHTTPHeaderField: "Authorization") == "Bearer 2" else {
                    return .status(401).delayed(by: number == 1 ? .milliseconds(600) : .milliseconds(1))
                }
                return .status(200).delayed(by: .milliseconds(10))
            }
            let auth = AuthenticationInterceptor(
                authenticator: TokenAuthenticator(), credential: Token(value: 1), clock: clock)
            let learner = Self.trained(on: clock)
            let session = Session(
                transport: transport, interceptor: auth, hedging: Hedging(learning: learner), clock: clock)
            let sent = await Self.send(
                URL(string: "https://a.example/items")!, through: session, on: simulation, clock: clock)
            return (sent.attempts, sent.elapsed, learner.snapshot(for: "a.example").hedges)
        }
        // The timed hedge took the one hedge in hand; the hedge its 401 starts, with the new credential, is that 401's
        // retry and starts at once all the same: the request does not wait out the first attempt's 600 ms.
        #expect(attempts.map(\.hedge) == [1, 0, 2] && attempts.last?.statusCode == 200)
        #expect(elapsed < .milliseconds(100), "took \(elapsed)")
        // Only the timed hedge counts against the cap.
        #expect(hedges == 1)
    }

    @Test func aHedgeNeverSentGivesItsShareBack() async {
        guard #available(macOS 15.0, iOS 18.0, macCatalyst 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) else {
            return
        }
        let simulation = Simulation()
        let clock = ManualClock()
        let (first, second, hedges) = await simulation.run { [clock] () async -> ([Attempt], Duration, Int) in
            // Each request's first attempt answers after 100 ms, a hedge after 10 ms; the hedge of `/first` waits 1 s
            // in an adapter (a refresh, a limiter's queue), so its first attempt wins before the hedge is sent.
            let transport = ScriptedTransport(clock: clock) { _, number in
                .status(200).delayed(by: number <= 2 ? .milliseconds(100) : .milliseconds(10))
            }
            let holdsFirstHedge = Adapter { request, context in
                if context.attempt > 1, request.url?.lastPathComponent == "first" {
                    try await clock.sleep(for: .seconds(1))
                }
                return request
            }
            let learner = Self.trained(on: clock)
            let session = Session(
                transport: transport, adapters: [holdsFirstHedge], hedging: Hedging(learning: learner), clock: clock)
            let first = await Self.send(
                URL(string: "https://a.example/first")!, through: session, on: simulation, clock: clock)
            let second = await Self.send(
                URL(string: "https://a.example/second")!, through: session, on: simulation, clock: clock)
            return (first.attempts, second.elapsed, learner.snapshot(for: "a.example").hedges)
        }
        #expect(first.map(\.hedge) == [1, 0] && first[0].request == nil)
        // The share of the hedge never sent was given back: the next slow request is hedged. Both hedges started, and
        // the window counts both.
        #expect(second < .milliseconds(50), "took \(second)")
        #expect(hedges == 2)
    }

    /// One request at a time to `a.example`, 1,000 of them, on a simulation: the first attempt of request `i` answers
    /// after `latency(i)`, a hedge after `hedgeLatency(i)`. Returns each request's time to its answer and the attempts
    /// sent.
    @available(macOS 15.0, iOS 18.0, macCatalyst 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    static func run(
        method: HTTPMethod = .get, adapters: [any RequestAdapter] = [],
        latency: @escaping @Sendable (Int) -> Duration, hedgeLatency: @escaping @Sendable (Int) -> Duration
    ) async -> (times: [Duration], sent: Int) {
        let simulation = Simulation()
        let clock = ManualClock()
        return await simulation.run { [clock] () async -> ([Duration], Int) in
            let transport = ScriptedTransport(clock: clock) { request, _ in
                let path = request.url?.lastPathComponent ?? ""
                guard let index = Int(path.split(separator: "-").first ?? "") else { return .status(500) }
                let hedge = path.hasSuffix("-h")
                return .status(200).delayed(by: hedge ? hedgeLatency(index) : latency(index))
            }
            // A hedge is told apart by the adapter: every attempt after the first of a request.
            let marker = Adapter { request, context in
                var request = request
                if context.attempt > 1, let url = request.url { request.url = URL(string: url.absoluteString + "-h") }
                return request
            }
            let learner = HedgingDelayLearner(clock: clock)
            let session = Session(
                transport: transport, adapters: adapters + [marker], retriers: [RetryPolicy()],
                hedging: Hedging(learning: learner), clock: clock)
            var times: [Duration] = []
            for index in 0..<1_000 {
                let url = URL(string: "https://a.example/items/\(index)")!
                let sent = await Self.send(url, method: method, through: session, on: simulation, clock: clock)
                times.append(sent.elapsed)
            }
            return (times, transport.requestCount)
        }
    }

    @Test func aSlowTailIsHedgedWithinTheExtraLoad() async {
        guard #available(macOS 15.0, iOS 18.0, macCatalyst 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) else {
            return
        }
        // 1% of first attempts take 600 ms, the others 10 ms; no delay configured.
        let (times, sent) = await Self.run(
            latency: { $0 % 100 == 50 ? .milliseconds(600) : .milliseconds(10) },
            hedgeLatency: { _ in .milliseconds(10) })
        // Each of the ten slow first attempts is hedged after the learned delay (10.5 ms), and the hedge answers:
        // none waits 600 ms, and no other request is hedged.
        #expect(times.max()! <= .milliseconds(25), "slowest \(times.max()!)")
        #expect(sent - times.count == 10)
    }

    @Test func aPostIsHedgedAsAGetOnceTheAdaptersGiveItAnIdempotencyKey() async {
        guard #available(macOS 15.0, iOS 18.0, macCatalyst 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) else {
            return
        }
        let slowTail: @Sendable (Int) -> Duration = { $0 % 100 == 50 ? .milliseconds(600) : .milliseconds(10) }
        let fast: @Sendable (Int) -> Duration = { _ in .milliseconds(10) }
        let keyed = await Self.run(
            method: .post, adapters: [IdempotencyKeyAdapter()], latency: slowTail, hedgeLatency: fast)
        #expect(keyed.times.max()! <= .milliseconds(25) && keyed.sent - keyed.times.count == 10)
        // Without a key, a POST is never hedged: each slow one waits its 600 ms.
        let unkeyed = await Self.run(method: .post, latency: slowTail, hedgeLatency: fast)
        #expect(unkeyed.sent == unkeyed.times.count && unkeyed.times.max()! == .milliseconds(600))
    }

    @Test func whenEveryAnswerSlowsDownTheHedgesStayWithinTheExtraLoad() async {
        guard #available(macOS 15.0, iOS 18.0, macCatalyst 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) else {
            return
        }
        // From request 400 to 599 every answer, a hedge's too, takes five times as long.
        let slow: @Sendable (Int) -> Duration = { (400..<600).contains($0) ? .milliseconds(50) : .milliseconds(10) }
        let (times, sent) = await Self.run(latency: slow, hedgeLatency: slow)
        // The first slow answers are hedged until the cap or the learned delay, moving up with them, stops it.
        #expect(sent > times.count)
        #expect(sent - times.count <= times.count / 50, "\(sent - times.count) hedges")
    }
}
