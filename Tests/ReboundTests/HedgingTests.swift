import Foundation
import ReboundTesting
import Testing

@testable import Rebound

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Hears every attempt's hedge number and decision, and every request's end.
private final class HedgeRecorder: AttemptObserver {
    private let entries = Locked<[String]>([])
    private let ends = Locked<[AttemptDecision]>([])

    func attemptDidFinish(_ outcome: AttemptOutcome) async {
        entries.withLock { $0.append("#\(outcome.attempt.number) hedge \(outcome.attempt.hedge) \(outcome.decision)") }
    }

    func requestDidFinish(_ outcome: RequestOutcome) async {
        ends.withLock { $0.append(outcome.decision) }
    }

    var attempts: [String] { entries.withLock { $0 } }
    var requestEnds: [AttemptDecision] { ends.withLock { $0 } }
}

/// Counts the hedges and retries that reached the wire, and the requests that ended.
private final class SentAttempts: AttemptObserver {
    private let counts = Locked((hedges: 0, retries: 0, ends: 0))

    func attemptDidFinish(_ outcome: AttemptOutcome) async {
        guard outcome.attempt.request != nil else { return }
        counts.withLock {
            if outcome.attempt.hedge > 0 {
                $0.hedges += 1
            } else if outcome.attempt.number > 1 {
                $0.retries += 1
            }
        }
    }

    func requestDidFinish(_ outcome: RequestOutcome) async {
        counts.withLock { $0.ends += 1 }
    }

    var hedges: Int { counts.withLock { $0.hedges } }
    var retries: Int { counts.withLock { $0.retries } }
    var requestEnds: Int { counts.withLock { $0.ends } }
}

/// A transport on a manual clock: each request sleeps the time `script` gives its number, then answers as it says;
/// a request cancelled while it sleeps is logged.
private func scripted(
    _ clock: ManualClock, log: Log, _ script: @escaping @Sendable (Int) -> (Duration, ScriptedTransport.Step)
) -> ScriptedTransport {
    ScriptedTransport(clock: clock) { _, number in
        let (delay, step) = script(number)
        if delay > .zero {
            do {
                try await clock.sleep(for: delay)
            } catch {
                log.append("#\(number) cancelled")
                throw error
            }
        }
        log.append("#\(number) answered")
        return step
    }
}

/// A transport whose first request answers "slow" after 1 s; the next ones answer `then`, in order, and every one after
/// them `last`, at once.
private func slowFirst(
    _ clock: ManualClock, log: Log, then: [ScriptedTransport.Step] = [],
    last: ScriptedTransport.Step = .response(body: "fast")
) -> ScriptedTransport {
    scripted(clock, log: log) { number in
        if number == 1 { return (.seconds(1), .response(body: "slow")) }
        return (.zero, then.indices.contains(number - 2) ? then[number - 2] : last)
    }
}

/// A transport whose first request fails with a 500 after 1 s, whose second (the hedge) gets a 503 at once with
/// `Retry-After: retryAfter`, and whose next ones answer "fast" at once.
private func failingSlowlyWhileTheHedgeAsksForQuiet(
    _ clock: ManualClock, log: Log, retryAfter: String
) -> ScriptedTransport {
    scripted(clock, log: log) { number in
        switch number {
        case 1: (.seconds(1), .status(500))
        case 2: (.zero, .response(status: 503, headers: ["Retry-After": retryAfter], body: Data()))
        default: (.zero, .response(body: "fast"))
        }
    }
}

/// Sends `sent` through `session` in a task, waits for the first attempt's sleep in the transport and the hedging
/// delay's, and lets 100 ms (the tests' hedging delay) pass.
private func sendPastTheDelay(
    _ session: Session, _ clock: ManualClock, _ sent: URLRequest = request()
) async throws -> Task<Response, any Error> {
    let task = Task { try await session.send(sent) }
    try await clock.waitForSleepers(2)
    clock.advance(by: .milliseconds(100))
    return task
}

/// Sends `sent` past the hedging delay and returns its response; when no hedge is expected, lets the first attempt's
/// 1 s pass once nothing but it sleeps.
private func send(
    _ sent: URLRequest, through session: Session, _ clock: ManualClock, hedged: Bool
) async throws -> Response {
    let task = try await sendPastTheDelay(session, clock, sent)
    if !hedged {
        try await waitWhile { clock.pendingSleepCount > 1 }
        clock.advance(by: .seconds(1))
    }
    return try await task.value
}

/// Waits until `log` holds `entry`.
private func waitFor(_ entry: String, in log: Log) async throws {
    try await waitWhile { !log.all.contains(entry) }
}

/// Sends a GET on a simulation, through a session of `retriers` and `hedging` whose transport answers request number
/// `n` with `answer(n)` (its delays on a manual clock), and lets the clock pass 100 ms, then 900 ms, each once every task
/// settled; returns the response's body (or the error's description) and what the observers heard of each attempt.
@available(macOS 15.0, iOS 18.0, macCatalyst 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
private func sendOnASimulation(
    retriers: [any RequestRetrier], hedging: Hedging,
    answer: @escaping @Sendable (Int) -> ScriptedTransport.Step
) async -> (body: String, told: [String]) {
    let simulation = Simulation()
    let clock = ManualClock()
    return await simulation.run { [clock] () async -> (body: String, told: [String]) in
        let recorder = HedgeRecorder()
        let session = Session(
            transport: ScriptedTransport(clock: clock) { _, index in answer(index) }, retriers: retriers,
            observers: [recorder], hedging: hedging, clock: clock)
        let task = Task(executorPreference: simulation.executor) { () -> String in
            do {
                return String(decoding: try await session.send(request()).data, as: UTF8.self)
            } catch {
                return "\(error)"
            }
        }
        for step in [100, 900] {
            await simulation.settle()
            clock.advance(by: .milliseconds(step))
        }
        await simulation.settle()
        return (await task.value, recorder.attempts)
    }
}

@Suite("Hedging", .timeLimit(.minutes(5)))
struct HedgingTests {
    @Test("A hedge starts when the first attempt has not answered within the delay; the first answer wins")
    func hedgeWins() async throws {
        let clock = ManualClock()
        let log = Log()
        let transport = slowFirst(clock, log: log)
        let recorder = HedgeRecorder()
        let session = Session(
            transport: transport, observers: [recorder], hedging: Hedging(delay: .milliseconds(100)), clock: clock)
        let task = Task { try await session.send(request()) }
        try await clock.waitForSleepers(2)  // the first attempt in the transport, and the hedging delay
        #expect(transport.requestCount == 1)

        clock.advance(by: .milliseconds(100))
        let response = try await task.value

        #expect(String(decoding: response.data, as: UTF8.self) == "fast")
        #expect(transport.requestCount == 2)
        #expect(response.attempts.map(\.number) == [1, 2], "the loser is recorded before the winner")
        #expect(response.attempts.map(\.hedge) == [0, 1])
        #expect(response.attempts[0].wasCancelled && response.attempts[0].request != nil)
        #expect(response.attempts[1].succeeded)
        #expect(clock.now.offset == .milliseconds(100), "the request ended with the hedge, not the slow attempt")
        try await waitFor("#1 cancelled", in: log)
        #expect(recorder.attempts == ["#1 hedge 0 cancelled", "#2 hedge 1 succeeded"])
        #expect(recorder.requestEnds == [.succeeded])
    }

    @Test("No hedge starts when the first attempt answers within the delay, and the timer goes away")
    func noHedgeWhenFast() async throws {
        let clock = ManualClock()
        let transport = scripted(clock, log: Log()) { _ in (.milliseconds(50), .response(body: "ok")) }
        let session = Session(transport: transport, hedging: Hedging(delay: .milliseconds(100)), clock: clock)
        let task = Task { try await session.send(request()) }
        try await clock.waitForSleepers(2)

        clock.advance(by: .milliseconds(50))
        let response = try await task.value

        #expect(response.attempts.count == 1 && response.attempts[0].hedge == 0)
        #expect(transport.requestCount == 1)
        try await waitWhile { clock.pendingSleepCount > 0 }
        clock.advance(by: .seconds(1))
        #expect(transport.requestCount == 1)
    }

    @Test("A delay of zero starts every attempt at once, up to the most in flight, and the first answer wins")
    func zeroDelayStartsAll() async throws {
        let clock = ManualClock()
        let log = Log()
        let transport = scripted(clock, log: log) { number in
            (.milliseconds(100 * (4 - number)), .response(body: "#\(number)"))
        }
        let session = Session(
            transport: transport, hedging: Hedging(delay: .zero, maximumInFlight: 3), clock: clock)
        let task = Task { try await session.send(request()) }
        try await clock.waitForSleepers(3)
        #expect(transport.requestCount == 3)

        clock.advance(by: .milliseconds(100))
        let response = try await task.value

        #expect(String(decoding: response.data, as: UTF8.self) == "#3")
        #expect(response.attempts.map(\.hedge) == [0, 1, 2])
        try await waitFor("#1 cancelled", in: log)
        try await waitFor("#2 cancelled", in: log)
    }

    @Test("Only requests that may be repeated are hedged: idempotent methods, or an Idempotency-Key on every hedge")
    func onlyRepeatableRequests() async throws {
        for (method, adapters, hedged) in [
            (HTTPMethod.post, [any RequestAdapter](), false),
            (.post, [IdempotencyKeyAdapter()], true),
            (.put, [], true),
            (.patch, [], false),
        ] {
            let clock = ManualClock()
            let transport = slowFirst(clock, log: Log())
            let session = Session(
                transport: transport, adapters: adapters, hedging: Hedging(delay: .milliseconds(100)), clock: clock)
            let response = try await send(request(method), through: session, clock, hedged: hedged)

            #expect(transport.requestCount == (hedged ? 2 : 1), "\(method)")
            let keys = Set(transport.requests.map { $0.value(forHTTPHeaderField: "Idempotency-Key") })
            #expect(keys.count == 1, "one key for every attempt of \(method)")
            #expect(String(decoding: response.data, as: UTF8.self) == (hedged ? "fast" : "slow"))
        }
    }

    @Test("Hedging follows the methods the chain's retry policies retry, found through the parts that hold them")
    func followsTheRetryMethods() async throws {
        let silent: LoggingRetrier.Sink = { _ in }
        for (retriers, method, hedged) in [
            ([any RequestRetrier](), HTTPMethod.put, true),
            ([RetryPolicy(retryableHTTPMethods: [.get])], .put, false),
            ([RetryPolicy(retryableHTTPMethods: [.get])], .get, true),
            (
                [ConnectionLostRetryPolicy(retryableHTTPMethods: [.get]), RetryPolicy(retryableHTTPMethods: [.put])],
                .put, true
            ),
            (
                [
                    Interceptor(retriers: [
                        LoggingRetrier(wrapping: RetryPolicy(retryableHTTPMethods: [.post]), sink: silent)
                    ])
                ],
                .post, true
            ),
            ([Interceptor(retriers: [RetryPolicy(retryableHTTPMethods: [.get])])], .delete, false),
        ] {
            let clock = ManualClock()
            let transport = slowFirst(clock, log: Log())
            let session = Session(
                transport: transport, retriers: retriers, hedging: Hedging(delay: .milliseconds(100)), clock: clock)
            let response = try await send(request(method), through: session, clock, hedged: hedged)

            #expect(transport.requestCount == (hedged ? 2 : 1), "\(method) with \(retriers)")
            #expect(String(decoding: response.data, as: UTF8.self) == (hedged ? "fast" : "slow"))
        }
    }

    @Test("A request's own retry policy adds its methods to the session's")
    func requestPolicyAddsItsMethods() async throws {
        let clock = ManualClock()
        let transport = slowFirst(clock, log: Log())
        let session = Session(
            transport: transport, retriers: [RetryPolicy(retryableHTTPMethods: [.get])],
            hedging: Hedging(delay: .milliseconds(100)), clock: clock)
        let task = Task {
            try await session.send(request(.put), retriers: [RetryPolicy(retryableHTTPMethods: [.put])])
        }
        try await clock.waitForSleepers(2)
        clock.advance(by: .milliseconds(100))
        let response = try await task.value

        #expect(transport.requestCount == 2)
        #expect(String(decoding: response.data, as: UTF8.self) == "fast")
    }

    @Test("An empty Idempotency-Key is no key: such a POST is not hedged, and the adapter gives it a real key")
    func anEmptyKeyIsNoKey() async throws {
        for (key, adapters, hedged) in [
            ("", [any RequestAdapter](), false),
            ("  ", [], false),
            ("", [IdempotencyKeyAdapter()], true),
        ] {
            let clock = ManualClock()
            let transport = slowFirst(clock, log: Log())
            let session = Session(
                transport: transport, adapters: adapters, hedging: Hedging(delay: .milliseconds(100)), clock: clock)
            var post = request(.post)
            post.setValue(key, forHTTPHeaderField: "Idempotency-Key")
            _ = try await send(post, through: session, clock, hedged: hedged)

            #expect(transport.requestCount == (hedged ? 2 : 1), "key \"\(key)\", \(adapters.count) adapters")
            let keys = Set(transport.requests.compactMap { $0.value(forHTTPHeaderField: "Idempotency-Key") })
            #expect(keys.count == 1)
            if hedged { #expect(keys.first.map { !$0.isEmpty } == true, "the adapter replaced the empty key") }
        }
        #expect(URLRequest(url: exampleURL, method: .post, headers: ["Idempotency-Key": ""]).idempotencyKey == nil)
        #expect(URLRequest(url: exampleURL, method: .post, headers: ["Idempotency-Key": "k"]).idempotencyKey == "k")
    }

    @Test("The hedging delay counts from the attempt's hand-over to the transport, not from its start")
    func delayCountsFromTheSend() async throws {
        let clock = ManualClock()
        let transport = slowFirst(clock, log: Log())
        // The first attempt spends 500 ms on the client (a queue, a token refresh) before it is sent.
        let onTheClient = Adapter { request, context in
            if context.attempt == 1 { try await clock.sleep(for: .milliseconds(500)) }
            return request
        }
        let session = Session(
            transport: transport, adapters: [onTheClient], hedging: Hedging(delay: .milliseconds(100)), clock: clock)
        let task = Task { try await session.send(request()) }
        try await clock.waitForSleepers(1)
        clock.advance(by: .milliseconds(500))
        // The first attempt in the transport, and the hedging delay from its send.
        try await clock.waitForSleepers(2)
        #expect(transport.requestCount == 1, "no hedge for the time the attempt spent on the client")
        clock.advance(by: .milliseconds(100))
        let response = try await task.value

        #expect(transport.requestCount == 2)
        #expect(String(decoding: response.data, as: UTF8.self) == "fast")
        let first = try #require(response.attempts.first { $0.hedge == 0 })
        #expect(first.duration == .milliseconds(600), "the hedge started 100 ms after the first attempt was sent")
    }

    @Test("A request whose body is a stream is never hedged")
    func streamBodyNeverHedged() async throws {
        let clock = ManualClock()
        let transport = scripted(clock, log: Log()) { _ in (.seconds(1), .response(body: "slow")) }
        let session = Session(transport: transport, hedging: Hedging(delay: .milliseconds(100)), clock: clock)
        var streamed = request(.put)
        streamed.httpBodyStream = InputStream(data: Data("body".utf8))
        let sent = streamed
        let task = Task { try await session.send(sent) }
        try await clock.waitForSleepers(1)
        clock.advance(by: .milliseconds(100))
        #expect(transport.requestCount == 1)
        clock.advance(by: .seconds(1))
        _ = try await task.value
        #expect(transport.requestCount == 1)
    }

    @Test("A response no retrier would retry ends every attempt and the request with it")
    func finalResponseEndsAll() async throws {
        let clock = ManualClock()
        let log = Log()
        let transport = slowFirst(clock, log: log, last: .status(404))
        let session = Session(
            transport: transport, retriers: [RetryPolicy()], hedging: Hedging(delay: .milliseconds(100)),
            clock: clock)
        let task = try await sendPastTheDelay(session, clock)

        let error = try await #require(throws: ReboundError.self) { try await task.value }

        #expect(error.statusCode == 404)
        #expect(error.attempts.map(\.hedge) == [0, 1])
        #expect(error.attempts[0].wasCancelled)
        try await waitFor("#1 cancelled", in: log)
    }

    @Test("A hedge that fails in a way the retriers would retry starts the next one at once, with no backoff")
    func retryableFailureStartsNextHedge() async throws {
        let clock = ManualClock()
        let transport = slowFirst(clock, log: Log(), then: [.status(503)], last: .response(body: "third"))
        let recorder = HedgeRecorder()
        let session = Session(
            transport: transport, retriers: [RetryPolicy()], observers: [recorder],
            hedging: Hedging(delay: .milliseconds(100)), clock: clock)
        let task = try await sendPastTheDelay(session, clock)
        let response = try await task.value

        #expect(String(decoding: response.data, as: UTF8.self) == "third")
        #expect(clock.now.offset == .milliseconds(100), "no backoff was slept")
        #expect(
            recorder.attempts == [
                "#2 hedge 1 retry in 0 ms", "#1 hedge 0 cancelled", "#3 hedge 2 succeeded",
            ])
    }

    @Test("The logging retrier names the hedge of every attempt it logs")
    func loggingNamesHedges() async throws {
        let clock = ManualClock()
        let transport = slowFirst(clock, log: Log(), then: [.status(503)], last: .response(body: "third"))
        let events = Locked<[RetryLogEvent]>([])
        let logger = LoggingRetrier(wrapping: RetryPolicy(), minimumLevel: .debug) { event in
            events.withLock { $0.append(event) }
        }
        let session = Session(
            transport: transport, retriers: [logger], hedging: Hedging(delay: .milliseconds(100)), clock: clock)
        let task = try await sendPastTheDelay(session, clock)
        _ = try await task.value

        let logged = events.withLock { $0 }
        #expect(logged.map(\.hedge) == [1, 0, 2])
        #expect(logged.first?.message.contains("attempt 2 (hedge 1) failed with status 503; retry in 0 ms") == true)
        #expect(logged.last?.message.contains("succeeded") == true)
    }

    @Test("With the preset, a hedge passes its throttle, breakers and budget, and spends from the budget")
    func presetWithHedging() async throws {
        let clock = ManualClock()
        let resilience = Resilience(clock: clock, random: .seeded(3), deadline: .seconds(30))
        let transport = slowFirst(clock, log: Log())
        let session = Session(
            transport: transport, resilience: resilience, hedging: Hedging(delay: .milliseconds(100)), clock: clock)
        let before = try #require(resilience.budget.tokens(for: exampleURL))
        let task = Task { try await session.send(request()) }
        try await clock.waitForSleepers(3)  // the transport, the hedging delay and the deadline
        clock.advance(by: .milliseconds(100))
        let response = try await task.value

        #expect(String(decoding: response.data, as: UTF8.self) == "fast")
        #expect(resilience.budget.tokens(for: exampleURL) == before - 1)
        #expect(resilience.throttle.grantsKept == 0)
    }

    @Test("A hedge answered 401 refreshes the credential, and the next hedge starts at once with the new one")
    func hedgeRefreshesCredential() async throws {
        let clock = ManualClock()
        let transport = slowFirst(clock, log: Log(), then: [.status(401)], last: .response(body: "fresh"))
        let authenticator = TokenAuthenticator()
        let auth = AuthenticationInterceptor(authenticator: authenticator, credential: Token(value: 1), clock: clock)
        let session = Session(
            transport: transport, interceptor: auth, hedging: Hedging(delay: .milliseconds(100)), clock: clock)
        let task = try await sendPastTheDelay(session, clock)
        let response = try await task.value

        #expect(String(decoding: response.data, as: UTF8.self) == "fresh")
        #expect(response.attempts.map(\.hedge) == [1, 0, 2])
        #expect(
            transport.requests.map { $0.value(forHTTPHeaderField: "Authorization") } == [
                "Bearer 1", "Bearer 1", "Bearer 2",
            ])
        #expect(authenticator.refreshes.withLock { $0 } == 1)
    }

    @Test("Two attempts of a round answered 401 during a slow refresh share it, and the hedge that waited for it wins")
    func concurrentQuestionsShareOneRefresh() async throws {
        let clock = ManualClock()
        // Bearer 1 gets a 401 after 150 ms, Bearer 2 an answer at once; the refresh takes 500 ms.
        let transport = ScriptedTransport(clock: clock) { request, _ in
            request.value(forHTTPHeaderField: "Authorization") == "Bearer 2"
                ? .response(body: "fresh") : ScriptedTransport.Step.status(401).delayed(by: .milliseconds(150))
        }
        var authenticator = TokenAuthenticator()
        authenticator.refresh = { token in
            try await clock.sleep(for: .milliseconds(500))
            return Token(value: token.value + 1)
        }
        let auth = AuthenticationInterceptor(authenticator: authenticator, credential: Token(value: 1), clock: clock)
        let session = Session(
            transport: transport, interceptor: auth, hedging: Hedging(delay: .milliseconds(100), maximumAttempts: 3),
            clock: clock)
        let task = Task { try await session.send(request()) }
        try await clock.waitForSleepers(2)  // the first attempt, the hedging delay
        clock.advance(by: .milliseconds(100))
        // The hedge, sent at 100 ms, and the timer of the next one.
        try await waitWhile { clock.pendingSleepCount != 3 }
        clock.advance(by: .milliseconds(50))
        // At 150 ms the first attempt's 401 is asked about while the hedge is in flight: the refresh starts (its own
        // sleep and its time limit's).
        try await waitWhile { clock.pendingSleepCount != 4 }
        clock.advance(by: .milliseconds(50))
        // At 200 ms a second hedge starts and waits for the refresh to apply the new credential (were it sent with the
        // old one, its answer and the next hedge's timer would sleep: the wait ends either way).
        try await waitWhile { auth.pendingRefresh.waiters < 2 && clock.pendingSleepCount < 5 }
        clock.advance(by: .milliseconds(50))
        // At 250 ms the first hedge's 401 is asked about too, and joins the same refresh (were the second hedge sent
        // with the old credential, its answer and a timer would still sleep: the wait ends either way).
        try await waitWhile { auth.pendingRefresh.waiters < 3 && clock.pendingSleepCount < 4 }
        clock.advance(by: .milliseconds(400))
        let response = try await task.value

        #expect(String(decoding: response.data, as: UTF8.self) == "fresh")
        #expect(authenticator.refreshes.withLock { $0 } == 1)
        #expect(
            transport.requests.map { $0.value(forHTTPHeaderField: "Authorization") } == [
                "Bearer 1", "Bearer 1", "Bearer 2",
            ])
        #expect(response.attempts.map(\.hedge) == [0, 1, 2])
        #expect(response.attempts.map(\.statusCode) == [401, 401, 200])
    }

    @Test("Retries and hedges together never exceed the attempts the settings allow")
    func attemptLimitIsShared() async throws {
        let clock = ManualClock()
        let transport = scripted(clock, log: Log()) { number in
            number == 1 ? (.milliseconds(200), .status(503)) : (.zero, .status(503))
        }
        let session = Session(
            transport: transport, retriers: [RetryPolicy(retryLimit: 5)],
            hedging: Hedging(delay: .milliseconds(100), maximumAttempts: 2), clock: clock)
        let task = try await sendPastTheDelay(session, clock)
        try await waitWhile { clock.pendingSleepCount > 1 }
        clock.advance(by: .milliseconds(100))

        let error = try await #require(throws: ReboundError.self) { try await task.value }

        #expect(error.statusCode == 503)
        #expect(error.attempts.count == 2)
        #expect(transport.requestCount == 2)
    }

    @Test("A retry after a failed round is hedged too, within the attempt limit")
    func retryRoundIsHedged() async throws {
        let clock = ManualClock()
        let transport = scripted(clock, log: Log()) { number in
            switch number {
            case 1: (.zero, .status(503))
            case 2: (.seconds(1), .response(body: "slow"))
            default: (.zero, .response(body: "fast"))
            }
        }
        let session = Session(
            transport: transport, retriers: [RetryPolicy()], hedging: Hedging(delay: .milliseconds(100)),
            clock: clock)
        let task = Task { try await session.send(request()) }
        // The backoff after the first attempt's 503.
        try await waitWhile { !clock.sleeps.contains(.milliseconds(500)) || clock.pendingSleepCount != 1 }
        clock.advance(by: .milliseconds(500))
        try await clock.waitForSleepers(2)
        clock.advance(by: .milliseconds(100))
        let response = try await task.value

        #expect(String(decoding: response.data, as: UTF8.self) == "fast")
        #expect(response.attempts.map(\.hedge) == [0, 0, 1])
        #expect(response.attempts[0].retryDelay == .milliseconds(500))
    }

    @Test("An empty budget starts no hedge, and a hedge spends from the budget as a retry does")
    func budgetLimitsHedges() async throws {
        for (percent, floor, hedged) in [(0.0, 0.0, false), (10.0, 1.0, true)] {
            let clock = ManualClock()
            let budget = RetryBudget(
                ratio: .init(percent: percent, window: .seconds(10), minimumRetriesPerSecond: floor), clock: clock)
            let transport = slowFirst(clock, log: Log())
            let session = Session(
                transport: transport, adapters: [ForwardingAdapter(wrapped: budget)],
                hedging: Hedging(delay: .milliseconds(100)), clock: clock)
            let before = budget.tokens(for: exampleURL) ?? -1
            let response = try await send(request(), through: session, clock, hedged: hedged)

            #expect(transport.requestCount == (hedged ? 2 : 1))
            #expect(String(decoding: response.data, as: UTF8.self) == (hedged ? "fast" : "slow"))
            if hedged { #expect(budget.tokens(for: exampleURL) == before - 1, "one hedge spent from 10 s of floor") }
        }
    }

    @Test("A breaker that is not closed starts no hedge; the attempt in flight goes on and gets its permit back")
    func breakerLimitsHedges() async throws {
        let clock = ManualClock()
        let breaker = CircuitBreaker(clock: clock)
        let transport = scripted(clock, log: Log()) { _ in (.seconds(1), .response(body: "slow")) }
        let session = Session(
            transport: transport, adapters: [breaker], hedging: Hedging(delay: .milliseconds(100)), clock: clock)
        let task = Task { try await session.send(request()) }
        try await clock.waitForSleepers(2)
        breaker.forceOpen()
        clock.advance(by: .milliseconds(100))
        try await waitWhile { clock.pendingSleepCount > 1 }
        #expect(transport.requestCount == 1)
        clock.advance(by: .seconds(1))
        let response = try await task.value

        #expect(response.attempts.count == 1)
        #expect(transport.requestCount == 1)
    }

    @Test("A throttle draws for a hedge once, and keeps nothing once the request ended")
    func throttleDrawsOnce() async throws {
        let clock = ManualClock()
        let throttle = AdaptiveThrottle(clock: clock, random: .seeded(1))
        let transport = slowFirst(clock, log: Log())
        let session = Session(
            transport: transport, adapters: [throttle], hedging: Hedging(delay: .milliseconds(100)), clock: clock)
        let task = try await sendPastTheDelay(session, clock)
        let response = try await task.value

        #expect(String(decoding: response.data, as: UTF8.self) == "fast")
        #expect(throttle.grantsKept == 0)
        let snapshot = throttle.snapshot(for: exampleURL)
        #expect(snapshot?.requests == 1 && snapshot?.accepts == 1, "the winner counted; the loser was not heard")
    }

    @Test("Every place a limiter gave and every breaker permit comes back, on success, failure and cancellation")
    func everythingGivenBack() async throws {
        for ending in ["success", "cancel", "deadline"] {
            let clock = ManualClock()
            let breaker = CircuitBreaker(clock: clock)
            let limiter = ConcurrencyLimiter(configuration: .init(limit: .fixed(10)), clock: clock)
            let recorder = HedgeRecorder()
            let transport = scripted(clock, log: Log()) { number in
                number == 2 && ending == "success"
                    ? (.zero, .response(body: "fast")) : (.seconds(10), .response(body: "slow"))
            }
            let session = Session(
                transport: transport, adapters: [limiter, breaker], observers: [recorder],
                deadline: ending == "deadline" ? .milliseconds(300) : nil,
                hedging: Hedging(delay: .milliseconds(100), maximumInFlight: 3), clock: clock)
            let task = Task { try await session.send(request()) }
            try await clock.waitForSleepers(2)
            if ending == "deadline" {
                try await waitWhile { clock.pendingSleepCount < 3 }
            }
            clock.advance(by: .milliseconds(100))
            if ending != "success" {
                // The second attempt in the transport and the next hedge's delay, counted from its send (and the
                // deadline's one timer).
                try await waitWhile { transport.requestCount < 2 }
                try await waitWhile { clock.pendingSleepCount < (ending == "deadline" ? 4 : 3) }
                clock.advance(by: .milliseconds(100))
                try await waitWhile { transport.requestCount < 3 }
            }
            switch ending {
            case "success":
                _ = try await task.value
            case "cancel":
                task.cancel()
                await #expect(throws: CancellationError.self) { try await task.value }
            default:
                // Three attempts in the transport, the deadline's timer they all race, and the delay after the
                // third's send.
                try await waitWhile { clock.pendingSleepCount < 5 }
                clock.advance(by: .milliseconds(100))
                let error = try await #require(throws: ReboundError.self) { try await task.value }
                guard case .deadlineExceeded = error.reason else {
                    Issue.record("\(error.reason)")
                    continue
                }
            }
            #expect(limiter.placesHeld == 0, "\(ending)")
            #expect(breaker.permitsInFlight == 0, "\(ending)")
            #expect(recorder.requestEnds.count == 1, "\(ending): exactly one outcome")
            #expect(recorder.attempts.count == transport.requestCount, "\(ending): every attempt told")
        }
    }

    @Test("Under heavy concurrency and cancellation, every hedged request ends once and gives everything back")
    func heavyConcurrency() async throws {
        let clock = FastForwardClock()
        let breaker = CircuitBreaker(clock: clock)
        let limiter = ConcurrencyLimiter(configuration: .init(limit: .fixed(1_000)), clock: clock)
        let budget = RetryBudget(ratio: .default, clock: clock)
        let recorder = HedgeRecorder()
        // By request number: hang (until cancelled), fail with 503, or answer, some after a delay.
        let transport = ScriptedTransport(clock: clock) { _, number in
            switch number % 5 {
            case 0: .hang
            case 1: .status(503)
            case 2: .status(200).delayed(by: .milliseconds(number % 7 * 40))
            case 3: .status(404).delayed(by: .milliseconds(30))
            default: .status(200)
            }
        }
        let session = Session(
            transport: transport, adapters: [limiter, breaker, budget], retriers: [RetryPolicy()],
            observers: [recorder], deadline: .seconds(5),
            hedging: Hedging(delay: .milliseconds(20), maximumInFlight: 3, maximumAttempts: 4), clock: clock)
        let requests = 300
        let endings = try await withThrowingTaskGroup(of: String.self) { group in
            for index in 0..<requests {
                group.addTask {
                    let task = Task { try await session.send(request()) }
                    if index % 3 == 0 { task.cancel() }
                    do {
                        _ = try await task.value
                        return "response"
                    } catch is ReboundError {
                        return "error"
                    } catch is CancellationError {
                        return "cancelled"
                    }
                }
            }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }

        #expect(endings.count == requests)
        #expect(recorder.requestEnds.count == requests, "exactly one end told per request")
        #expect(limiter.placesHeld == 0)
        #expect(breaker.permitsInFlight == 0)
        #expect(budget.requestsWithGrants == 0)
    }

    @Test(
        "Under a limit, deadlines, cancellation and hedging, no place is kept and no unsent hedge is charged",
        arguments: [(limit: 1, queued: 0), (limit: 2, queued: 20)])
    func stressTheLimiterAndTheBudget(limit: Int, queued: Int) async throws {
        let clock = ManualClock()
        let limiter = ConcurrencyLimiter(
            configuration: .init(limit: .fixed(limit), maximumQueued: queued, queueTimeout: .seconds(1)), clock: clock)
        let breaker = CircuitBreaker(clock: clock)
        let breakers = CircuitBreakerRegistry(clock: clock)
        let throttle = AdaptiveThrottle(clock: clock, random: .seeded(3))
        let pacing = AdaptiveRateLimiter(clock: clock)
        let budget = RetryBudget()
        // A small ratio budget after the bucket: it refuses hedges the bucket has paid for already.
        let ratio = RetryBudget(ratio: .init(percent: 0, minimumRetriesPerSecond: 1), clock: clock)
        let sent = SentAttempts()
        // Answers at once, and hangs that only the deadline, the attempt timeout or the caller ends; no failure to
        // retry, so only hedges spend from the budget.
        let transport = ScriptedTransport { _, number in number.isMultiple(of: 7) ? .hang : .status(200) }
        let session = Session(
            transport: transport, adapters: [throttle, budget, ratio, limiter, breakers, breaker, pacing],
            retriers: [RetryPolicy()], observers: [sent], deadline: .seconds(5), attemptTimeout: .seconds(2),
            hedging: Hedging(delay: .zero, maximumInFlight: 3, maximumAttempts: 4), clock: clock)
        let requests = 400
        let tasks = (0..<requests).map { index in
            let task = Task { try await session.send(request()) }
            if index.isMultiple(of: 4) { task.cancel() }
            return task
        }
        // The deadlines, a second at a time, until every request ended.
        while sent.requestEnds < requests {
            clock.advance(by: .seconds(1))
            await Task.yield()
        }
        for task in tasks { _ = await task.result }

        #expect(sent.requestEnds == requests, "exactly one end told per request")
        #expect(limiter.placesHeld == 0)
        #expect(limiter.hostsKept == 0, "an idle host with a fixed limit is forgotten")
        #expect(breaker.permitsInFlight == 0)
        #expect(breakers.breakers.values.allSatisfy { $0.permitsInFlight == 0 })
        #expect(throttle.grantsKept == 0)
        for budget in [budget, ratio] {
            #expect(budget.requestsWithGrants == 0)
            #expect(budget.requestsWithHedges == 0)
        }
        // Only what reached the wire was spent: 5 a hedge.
        let floor = RetryBudget.Configuration.default.initialTokens - 5 * sent.hedges
        #expect(budget.tokens(for: exampleURL) ?? 0 >= floor, "\(sent.hedges) hedges sent, \(sent.retries) retries")
    }

    @Test("A tick queued as a hedge starts is dropped: the next delay counts from that hedge's send")
    func aQueuedTickDoesNotOutliveTheHedgeItWasFor() async {
        guard #available(macOS 15.0, iOS 18.0, macCatalyst 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) else {
            return
        }
        // On a simulation, so that the two reports that come at 200 ms are queued in the order they were made.
        let simulation = Simulation()
        let clock = ManualClock()
        let sendTimes = await simulation.run { [clock] () async -> [Duration] in
            let sendTimes = Locked<[Duration]>([])
            // The first attempt fails at 150 ms; every other attempt answers after a second.
            let transport = ScriptedTransport(clock: clock) { _, index in
                sendTimes.withLock { $0.append(clock.now.offset) }
                return index == 1 ? .status(503).delayed(by: .milliseconds(150)) : .status(200).delayed(by: .seconds(1))
            }
            // The retriers say "retry" just before 200 ms, when the timer the hedge sent at 100 ms set fires: the
            // answer starts a hedge while the timer's tick is queued behind it. (The retriers' answer is queued first
            // because nothing suspends between their sleep and their report: if it did, the tick would come first and
            // start that hedge itself, and the answer the next one at once.)
            let slow = Retrier { _, _ in
                try? await clock.sleep(for: .microseconds(49_999))
                return .retry
            }
            let session = Session(
                transport: transport, retriers: [slow],
                hedging: Hedging(delay: .milliseconds(100), maximumInFlight: 3, maximumAttempts: 4), clock: clock)
            let task = Task(executorPreference: simulation.executor) { _ = try? await session.send(request()) }
            for step in [100, 50, 50, 100] {
                await simulation.settle()
                clock.advance(by: .milliseconds(step))
            }
            await simulation.settle()
            task.cancel()
            await task.value
            return sendTimes.withLock { $0 }
        }
        // The hedge that the answer started at 200 ms waits its own delay: the next goes at 300 ms, not at once.
        #expect(sendTimes == [.zero, .milliseconds(100), .milliseconds(200), .milliseconds(300)])
    }

    @Test("A question to the retriers the deadline cuts mid-round ends the request: the retriers are not asked again")
    func aQuestionTheDeadlineCutsMidRoundIsNotAskedAgain() async {
        guard #available(macOS 15.0, iOS 18.0, macCatalyst 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) else {
            return
        }
        let simulation = Simulation()
        let clock = ManualClock()
        let (error, asked) = await simulation.run { [clock] () async -> (ReboundError?, Int) in
            // The first attempt fails at 100 ms, while the hedge sent at 50 ms is in flight; it would answer at 1 s.
            let transport = ScriptedTransport(clock: clock) { _, index in
                index == 1 ? .status(503).delayed(by: .milliseconds(100)) : .status(200).delayed(by: .seconds(1))
            }
            let asked = Locked(0)
            // The retriers take a second to decide: the 200 ms deadline comes first.
            let slow = Retrier { _, _ in
                asked.withLock { $0 += 1 }
                try? await clock.sleep(for: .seconds(1))
                return .retry
            }
            let session = Session(
                transport: transport, retriers: [slow], deadline: .milliseconds(200),
                hedging: Hedging(delay: .milliseconds(50)), clock: clock)
            let task = Task(executorPreference: simulation.executor) { () -> ReboundError? in
                do {
                    _ = try await session.send(request())
                    return nil
                } catch {
                    return error as? ReboundError
                }
            }
            for step in [50, 50, 100] {
                await simulation.settle()
                clock.advance(by: .milliseconds(step))
            }
            await simulation.settle()
            let error = await task.value
            return (error, asked.withLock { $0 })
        }
        guard case .deadlineExceeded = error?.reason else {
            Issue.record("expected the deadline, got \(String(describing: error))")
            return
        }
        #expect(asked == 1)
    }

    @Test("A hedge one budget paid for and a later gate refused costs nothing once the request ends")
    func aHedgeRefusedAfterABudgetPaidIsRefunded() async throws {
        let clock = ManualClock()
        let paying = RetryBudget()
        let empty = RetryBudget(configuration: try .validated(initialTokens: 0))
        let transport = slowFirst(clock, log: Log())
        let session = Session(
            transport: transport, adapters: [paying], hedging: Hedging(delay: .milliseconds(100)), clock: clock)
        let task = Task { try await session.send(request(), adapters: [empty]) }
        try await clock.waitForSleepers(2)
        clock.advance(by: .milliseconds(100))
        try await waitWhile { clock.pendingSleepCount > 1 }
        clock.advance(by: .seconds(1))
        let response = try await task.value

        #expect(transport.requestCount == 1, "the empty budget refused the hedge")
        #expect(String(decoding: response.data, as: UTF8.self) == "slow")
        #expect(paying.tokens(for: exampleURL) == 500, "what the first budget took for the hedge came back")
        #expect(paying.requestsWithHedges == 0)
    }

    @Test("A request's own settings replace the session's: off for one request, on for another")
    func perRequestSettings() async throws {
        for (sessionHedging, requestHedging, hedged) in [
            (Hedging(delay: .milliseconds(100)), Hedging.off, false),
            (nil, Hedging(delay: .milliseconds(100)), true),
        ] {
            let clock = ManualClock()
            let transport = slowFirst(clock, log: Log())
            let session = Session(transport: transport, hedging: sessionHedging, clock: clock)
            let task = Task { try await session.send(request(), hedging: requestHedging) }
            try await clock.waitForSleepers(hedged ? 2 : 1)
            clock.advance(by: .milliseconds(100))
            if !hedged { clock.advance(by: .seconds(1)) }
            let response = try await task.value
            #expect(transport.requestCount == (hedged ? 2 : 1))
            #expect(response.attempts.count == (hedged ? 2 : 1))
        }
    }

    @Test("Settings out of range are rejected with a message that names them")
    func validation() {
        #expect(throws: ConfigurationError.self) { try Hedging.validated(delay: .milliseconds(-1)) }
        for inFlight in [0, 6] {
            let error = #expect(throws: ConfigurationError.self) {
                try Hedging.validated(delay: .zero, maximumInFlight: inFlight)
            }
            #expect(error?.message == "Hedging.maximumInFlight must be between 1 and 5, got \(inFlight)")
        }
        let error = #expect(throws: ConfigurationError.self) {
            try Hedging.validated(delay: .zero, maximumAttempts: 0)
        }
        #expect(error?.message == "Hedging.maximumAttempts must be 1 or more, got 0")
        #expect(throws: Never.self) { try Hedging.validated(delay: .milliseconds(20), maximumInFlight: 5) }
    }

    @Test("A hedge's record says which hedge it was, in its description and its reflection")
    func attemptRecord() {
        let attempt = Attempt(
            number: 3, request: request(), response: nil, failure: nil, duration: .milliseconds(5), hedge: 2)
        #expect(attempt.description.hasPrefix("#3 (hedge 2) GET"))
        #expect(attempt.description.contains("cancelled"))
        #expect(attempt.wasCancelled && !attempt.succeeded)
        #expect(Mirror(reflecting: attempt).children.contains { $0.label == "hedge" && $0.value as? Int == 2 })
    }
}

/// How a round meets slow retriers, the repeated-failure stop and a server that asks for quiet.
extension HedgingTests {
    @Test(
        "A round never waits for the retriers' answer about a failure: an answer that comes meanwhile wins",
        arguments: [nil, Duration.seconds(2)])
    func aSlowRetrierDoesNotHoldTheRound(deadline: Duration?) async throws {
        let clock = ManualClock()
        let log = Log()
        let transport = slowFirst(clock, log: log, then: [.status(503)])
        let recorder = HedgeRecorder()
        // A retrier that is still deciding when the first attempt answers (a token refresh, the offline retrier's
        // wait): it answers only once the request ended.
        let decided = AsyncStream<Void>.makeStream()
        let slow = Retrier { _, _ in
            log.append("deciding")
            for await _ in decided.stream {}
            return .retry
        }
        let session = Session(
            transport: transport, retriers: [slow], observers: [recorder], deadline: deadline,
            hedging: Hedging(delay: .milliseconds(100), maximumAttempts: 2), clock: clock)
        let task = Task { try await session.send(request()) }
        // The first attempt's answer and the hedging delay sleep (and, with a deadline, the attempt's time limit).
        try await clock.waitForSleepers(deadline == nil ? 2 : 3)
        clock.advance(by: .milliseconds(100))
        try await waitFor("deciding", in: log)
        clock.advance(by: .milliseconds(900))
        let response = try await task.value
        decided.continuation.finish()

        #expect(String(decoding: response.data, as: UTF8.self) == "slow")
        #expect(clock.now.offset == .seconds(1))
        #expect(recorder.attempts == ["#2 hedge 1 cancelled", "#1 hedge 0 succeeded"])
        #expect(response.attempts.map(\.number) == [2, 1])
    }

    @Test(
        "A retrier that moves the request mid-round sends the round's next hedge there, or the retry after the round",
        .timeLimit(.minutes(1)), arguments: [false, true])
    func aRetrierThatMovesTheRequestMidRoundMovesTheRestOfTheRequest(hedgesHoldBack: Bool) async throws {
        let clock = ManualClock()
        // On the same host: the quiet that host asks for holds hedges to the fallback too.
        let fallback = URL(string: "https://api.example.com/fallback")!
        let paths = Locked<[String]>([])
        // The first attempt answers 503 at 1 s; the hedge at 100 ms at once, with a 503 that holds back further hedges
        // to its host for 5 s when `hedgesHoldBack`; the fallback answers 200.
        let transport = ScriptedTransport(clock: clock) { request, index in
            let path = request.url?.path ?? ""
            paths.withLock { $0.append(path) }
            if path == fallback.path { return .response(body: "fallback") }
            if index == 1 { return .status(503).delayed(by: .seconds(1)) }
            return .response(status: 503, headers: hedgesHoldBack ? ["Retry-After": "5"] : [:])
        }
        // Moves the request to the fallback host at the first question, then retries in place; notes which attempts
        // each question carries.
        let questions = Locked<[[Int]]>([])
        let mover = Retrier { request, _ in
            let first = questions.withLock { questions in
                questions.append(request.attempts.map(\.number))
                return questions.count == 1
            }
            return first ? .retryWithRequest(URLRequest(url: fallback), delay: .zero) : .retry
        }
        let session = Session(
            transport: transport, retriers: [mover], hedging: Hedging(delay: .milliseconds(100)), clock: clock)
        let task = try await sendPastTheDelay(session, clock)
        if hedgesHoldBack {
            // The hedge failed and was asked about; its 503 holds the next hedge back, and the first attempt is due
            // at 1 s: the round ends on its failure, and the retry after it goes where the retrier moved the request.
            try await waitWhile { questions.withLock { $0.count } < 1 || clock.pendingSleepCount < 2 }
        } else {
            // The next hedge went out at once; the first attempt's second passes too, so that a request that went on
            // (to the wrong place) ends rather than waits.
            try await waitWhile { paths.withLock { $0.count } < 3 }
        }
        clock.advance(by: .seconds(1))
        if hedgesHoldBack {
            // The retry after the round, at 1.1 s, goes to the host that asked for quiet until 5.1 s: it waits for
            // that.
            try await waitForSleep(of: .seconds(4), on: clock)
            clock.advance(by: .seconds(4))
        }
        let response = try await task.value

        #expect(String(decoding: response.data, as: UTF8.self) == "fallback")
        #expect(paths.withLock { $0 } == ["/items", "/items", "/fallback"])
        // A question mid-round carries the round's attempts recorded so far; the one after the round, all of them.
        #expect(questions.withLock { $0 } == (hedgesHoldBack ? [[2], [2, 1]] : [[2]]))
    }

    @Test(
        "The quiet a host asked for does not hold a hedge to the host a retrier moved the request to mid-round",
        .timeLimit(.minutes(1)))
    func theQuietOfTheHostARetrierMovedAwayFromDoesNotHoldTheHedgeToTheNewOne() async throws {
        let clock = ManualClock()
        let fallback = URL(string: "https://fallback.example.com/items")!
        // The first attempt answers 503 at 1 s; the hedge at 100 ms at once, asking its host for 5 s of quiet; the
        // fallback host answers 200.
        let transport = ScriptedTransport(clock: clock) { request, index in
            if request.url?.host == fallback.host { return .response(body: "fallback") }
            if index == 1 { return .status(503).delayed(by: .seconds(1)) }
            return .response(status: 503, headers: ["Retry-After": "5"])
        }
        let mover = Retrier { _, _ in .retryWithRequest(URLRequest(url: fallback), delay: .zero) }
        let session = Session(
            transport: transport, retriers: [mover], hedging: Hedging(delay: .milliseconds(100)), clock: clock)
        let task = try await sendPastTheDelay(session, clock)

        // The hedge to the fallback host goes out at once and wins, before the first attempt's second passes.
        try await transport.waitForRequests(3)
        clock.advance(by: .seconds(1))
        let response = try await task.value

        #expect(String(decoding: response.data, as: UTF8.self) == "fallback")
        #expect(response.attempts.map(\.number) == [2, 1, 3])
        #expect(response.attempts.last?.hedge == 2)
    }

    /// An adapter that sends every attempt to the European twin of its host: x.example.com to x-eu.example.com.
    private static let toEurope = Adapter.modifying { request, _ in
        guard let url = request.url, var parts = URLComponents(url: url, resolvingAgainstBaseURL: false),
            let host = parts.host, !host.contains("-eu.")
        else { return }
        parts.host = host.replacingOccurrences(of: ".example.com", with: "-eu.example.com")
        request.url = parts.url
    }

    /// A session whose retrier moves the request to `target`, or else to b.example.com keeping its method, at every
    /// failure, hedging every 100 ms, with `adapters` in front; on a.example.com (or any host starting with "a") the
    /// first attempt answers "slow a" at 1 s and every other a 503 at once, with `fields`, and a host starting with "b"
    /// answers "from b".
    private func movedMidRound(
        behind adapters: [any RequestAdapter], fields: [String: String] = [:], observers: [any AttemptObserver] = [],
        to target: URLRequest? = nil, clock: ManualClock
    ) -> (ScriptedTransport, Session) {
        let transport = ScriptedTransport(clock: clock) { request, index in
            if request.url?.host?.hasPrefix("b") == true { return .response(body: "from b") }
            return index == 1
                ? .response(body: "slow a").delayed(by: .seconds(1)) : .response(status: 503, headers: fields)
        }
        let toB = Retrier { request, _ in
            var moved = URLRequest(url: URL(string: "https://b.example.com/items")!)
            moved.httpMethod = request.request.httpMethod
            return .retryWithRequest(target ?? moved, delay: .zero)
        }
        let session = Session(
            transport: transport, adapters: adapters, retriers: [toB], observers: observers,
            hedging: Hedging(delay: .milliseconds(100), maximumInFlight: 3, maximumAttempts: 4), clock: clock)
        return (transport, session)
    }

    // Were the hedge judged by a's spent quota, the request would wait for the slow first attempt on a clock nothing
    // moves, and so would the test, until its time limit cancels the wait for the hedge.
    @Test(
        "After a retrier moves the request mid-round, the next hedge is judged where it goes: a's spent quota holds none",
        .timeLimit(.minutes(1)))
    func aHedgeAfterAMoveIsJudgedByTheHostItGoesTo() async throws {
        let clock = ManualClock()
        // a's 503 says its quota is spent for 20 s; b has none known.
        let (transport, session) = movedMidRound(
            behind: [RateLimitPacer(clock: clock)], fields: ["RateLimit": "\"d\";r=0;t=20"], clock: clock)

        let task = try await sendPastTheDelay(
            session, clock, URLRequest(url: URL(string: "https://a.example.com/items")!))
        try await waitWhile { transport.requests.count < 3 }
        let response = try await task.value

        #expect(String(decoding: response.data, as: UTF8.self) == "from b")
        #expect(transport.requests.map(\.url?.host) == ["a.example.com", "a.example.com", "b.example.com"])
    }

    @Test(
        "After a retrier moves the request mid-round, an open breaker of the host it goes to starts no hedge there",
        .timeLimit(.minutes(1)))
    func aHedgeAfterAMoveIsRefusedByTheOpenBreakerOfTheHostItGoesTo() async throws {
        let clock = ManualClock()
        let registry = CircuitBreakerRegistry(clock: clock)
        registry.breaker(for: "b.example.com").forceOpen()
        let recorder = HedgeRecorder()
        let (transport, session) = movedMidRound(behind: [registry], observers: [recorder], clock: clock)

        let task = try await sendPastTheDelay(
            session, clock, URLRequest(url: URL(string: "https://a.example.com/items")!))
        // The hedge's failure was granted its retry at b: the round judged the next hedge before it read any other
        // report, so before the first attempt can answer.
        try await waitWhile { !recorder.attempts.contains { $0.hasPrefix("#2") } }
        clock.advance(by: .milliseconds(900))
        let response = try await task.value

        // No hedge started for b (none was refused in its adapters, where it would have taken an attempt number), and
        // the slow first attempt won.
        #expect(String(decoding: response.data, as: UTF8.self) == "slow a")
        #expect(transport.requests.map(\.url?.host) == ["a.example.com", "a.example.com"])
        #expect(response.attempts.map(\.number) == [2, 1])
        #expect(Set(recorder.attempts.map { String($0.prefix(2)) }) == ["#1", "#2"])
    }

    @Test("After a mid-round move, a POST is still hedged with the key the adapters gave it, to the host it goes to")
    func aPostMovedMidRoundIsHedgedWithItsIdempotencyKey() async throws {
        let clock = ManualClock()
        let registry = CircuitBreakerRegistry(clock: clock)
        let (transport, session) = movedMidRound(behind: [IdempotencyKeyAdapter(), registry], clock: clock)
        var post = URLRequest(url: URL(string: "https://a.example.com/items")!)
        post.httpMethod = "POST"

        let task = try await sendPastTheDelay(session, clock, post)
        let response = try await task.value

        #expect(String(decoding: response.data, as: UTF8.self) == "from b")
        #expect(transport.requests.map(\.url?.host) == ["a.example.com", "a.example.com", "b.example.com"])
        #expect(transport.requests.allSatisfy { $0.httpMethod == "POST" })
        #expect(transport.requests.allSatisfy { $0.value(forHTTPHeaderField: "Idempotency-Key") != nil })
    }

    @Test(
        "A GET moved mid-round to a POST with its own Idempotency-Key is hedged there with that key",
        .timeLimit(.minutes(1)))
    func aGetMovedToAKeyedPostIsHedged() async throws {
        let clock = ManualClock()
        var keyed = URLRequest(url: URL(string: "https://b.example.com/orders")!)
        keyed.httpMethod = "POST"
        keyed.setValue("order-7", forHTTPHeaderField: "Idempotency-Key")
        let (transport, session) = movedMidRound(behind: [IdempotencyKeyAdapter()], to: keyed, clock: clock)

        let task = try await sendPastTheDelay(
            session, clock, URLRequest(url: URL(string: "https://a.example.com/items")!))
        try await waitWhile { transport.requests.count < 3 }
        let response = try await task.value

        #expect(String(decoding: response.data, as: UTF8.self) == "from b")
        #expect(transport.requests.last?.httpMethod == "POST")
        #expect(transport.requests.last?.value(forHTTPHeaderField: "Idempotency-Key") == "order-7")
    }

    // An endpoint group whose endpoints the rewriter's hosts fall under did not make the move: judged as above, the
    // hedge starts; judged as going to b.example.com, whose open breaker refuses it, the test waits until its time limit.
    @Test(
        "Behind a host rewriter whose hosts an endpoint group then routes, the hedge after a move is judged where the last one went",
        .timeLimit(.minutes(1)))
    func aHedgeAfterAMoveBehindARewriterAndAGroupIsJudgedWhereTheLastAttemptWent() async throws {
        let clock = ManualClock()
        let registry = CircuitBreakerRegistry(clock: clock)
        registry.breaker(for: "b.example.com").forceOpen()
        let group = EndpointGroup(
            endpoints: [
                .init(URL(string: "https://e1-eu.example.com/v1")!),
                .init(URL(string: "https://e2-eu.example.com/v1")!),
            ], clock: clock)
        let (transport, session) = movedMidRound(behind: [Self.toEurope, group, registry], clock: clock)

        let task = try await sendPastTheDelay(
            session, clock, URLRequest(url: URL(string: "https://e1.example.com/v1/items")!))
        try await waitWhile { transport.requests.count < 3 }
        let response = try await task.value

        #expect(String(decoding: response.data, as: UTF8.self) == "from b")
        #expect(transport.requests.last?.url?.host == "b-eu.example.com")
        #expect(group.attemptsInFlight == 0)
    }

    // The adapter keys PATCH, not POST: the hedge is judged with the key it gave the PATCH, and its own request, a POST
    // its adapters give no key, is not sent.
    @Test(
        "A hedge whose adapted request may not be repeated is not sent, though the request it was judged by may",
        .timeLimit(.minutes(1)))
    func aHedgeWhoseAdaptedRequestMayNotBeRepeatedIsNotSent() async throws {
        let clock = ManualClock()
        var unkeyed = URLRequest(url: URL(string: "https://b.example.com/orders")!)
        unkeyed.httpMethod = "POST"
        // The requests as the adapters leave them, the hedge's among them.
        let adapted = Locked<[URLRequest]>([])
        let noting = Adapter.modifying { request, _ in adapted.withLock { $0.append(request) } }
        let (transport, session) = movedMidRound(
            behind: [IdempotencyKeyAdapter(methods: [.patch]), noting], to: unkeyed, clock: clock)
        var patch = URLRequest(url: URL(string: "https://a.example.com/orders/7")!)
        patch.httpMethod = "PATCH"

        let task = try await sendPastTheDelay(session, clock, patch)
        // The hedge to b was adapted (and, with nothing left to await, refused or sent at once); then the first
        // attempt answers.
        try await waitWhile { adapted.withLock { $0.count } < 3 }
        clock.advance(by: .milliseconds(900))
        let response = try await task.value

        #expect(String(decoding: response.data, as: UTF8.self) == "slow a")
        #expect(transport.requests.map(\.httpMethod) == ["PATCH", "PATCH"])
        #expect(adapted.withLock { $0.last?.httpMethod } == "POST")
    }

    @Test(
        "A POST whose caller keyed it, moved mid-round to a POST without a key, is not hedged there, behind a host rewriter too",
        .timeLimit(.minutes(1)), arguments: [false, true])
    func aKeyedPostMovedToAnUnkeyedOneIsNotHedged(behindARewriter: Bool) async throws {
        let clock = ManualClock()
        var unkeyed = URLRequest(url: URL(string: "https://b.example.com/orders")!)
        unkeyed.httpMethod = "POST"
        let recorder = HedgeRecorder()
        let (transport, session) = movedMidRound(
            behind: behindARewriter ? [Self.toEurope] : [], observers: [recorder], to: unkeyed, clock: clock)
        var post = URLRequest(url: URL(string: "https://a.example.com/orders")!)
        post.httpMethod = "POST"
        post.setValue("order-7", forHTTPHeaderField: "Idempotency-Key")

        let task = try await sendPastTheDelay(session, clock, post)
        // The hedge's failure was granted its retry at b: the round judged the next hedge before it read any other
        // report, so before the first attempt can answer.
        try await waitWhile { !recorder.attempts.contains { $0.hasPrefix("#2") } }
        clock.advance(by: .milliseconds(900))
        let response = try await task.value

        // The key was the caller's, on the old request: a hedge from the new one would have gone out without one.
        #expect(String(decoding: response.data, as: UTF8.self) == "slow a")
        let a = behindARewriter ? "a-eu.example.com" : "a.example.com"
        #expect(transport.requests.map(\.url?.host) == [a, a])
    }

    @Test("After a mid-round move behind an adapter that moves every host, the hedge is judged where the last one went")
    func aHedgeAfterAMoveBehindAHostRewriterIsJudgedWhereTheLastAttemptWent() async throws {
        let clock = ManualClock()
        let registry = CircuitBreakerRegistry(clock: clock)
        // The request's own spelling of b is never sent to: its breaker, open, says nothing about b-eu.
        registry.breaker(for: "b.example.com").forceOpen()
        let (transport, session) = movedMidRound(behind: [Self.toEurope, registry], clock: clock)

        let task = try await sendPastTheDelay(
            session, clock, URLRequest(url: URL(string: "https://a.example.com/items")!))
        let response = try await task.value

        #expect(String(decoding: response.data, as: UTF8.self) == "from b")
        #expect(transport.requests.map(\.url?.host) == ["a-eu.example.com", "a-eu.example.com", "b-eu.example.com"])
    }

    @Test("A hedge that fails like the round before stops new hedges, and the slow attempt in flight still wins")
    func aRepeatedFailureInALaterRoundLetsTheAttemptInFlightGoOn() async {
        guard #available(macOS 15.0, iOS 18.0, macCatalyst 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) else {
            return
        }
        // Round 1: a 503 at once. Round 2: the first attempt answers at 1 s; its hedge fails like round 1.
        let (body, told) = await sendOnASimulation(
            retriers: [RetryPolicy(retryLimit: 4, backoff: .none, stopsAfterRepeatedFailure: true)],
            hedging: Hedging(delay: .milliseconds(100), maximumAttempts: 5)
        ) { index in
            index == 2 ? .response(body: "slow").delayed(by: .seconds(1)) : .status(503)
        }
        #expect(body == "slow")
        // No hedge after the repeated failure; the hedge that failed is told as a loser once the round ends.
        #expect(told == ["#1 hedge 0 retry in 0 ms", "#3 hedge 1 cancelled", "#2 hedge 0 succeeded"])
    }

    @Test("A failure the retriers would retry with no attempt left in the settings is told as a loser")
    func aRetryWithNoAttemptLeftIsToldAsALoser() async {
        guard #available(macOS 15.0, iOS 18.0, macCatalyst 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) else {
            return
        }
        // The first attempt answers at 1 s; two hedges fail at once, the second with the settings' last attempt.
        let (body, told) = await sendOnASimulation(
            retriers: [RetryPolicy()],
            hedging: Hedging(delay: .milliseconds(100), maximumInFlight: 3, maximumAttempts: 3)
        ) { index in
            index == 1 ? .response(body: "slow").delayed(by: .seconds(1)) : .status(503)
        }
        #expect(body == "slow")
        // The first hedge's failure is retried by the next hedge; the second's can be retried by nothing.
        #expect(told == ["#2 hedge 1 retry in 0 ms", "#3 hedge 2 cancelled", "#1 hedge 0 succeeded"])
    }

    @Test("A failure whose answer ends the round names its own request, though another failed after it")
    func theFailureThatEndsTheRoundNamesItsOwnRequest() async throws {
        let clock = ManualClock()
        // The first attempt would answer at 1 s; the hedge at 100 ms fails with 500, the one at 200 ms with 503.
        let transport = ScriptedTransport(clock: clock) { _, index in
            switch index {
            case 1: .response(body: "slow").delayed(by: .seconds(1))
            case 2: .status(500)
            default: .status(503)
            }
        }
        let numbered = Adapter.modifying { request, context in
            request.setValue("\(context.attempt)", forHTTPHeaderField: "X-Attempt")
        }
        // The 500 is decided slowly, and not retried: that ends the round; the 503 is retried at once.
        let asked = Locked(0)
        let slow = Retrier { [clock] _, error in
            asked.withLock { $0 += 1 }
            guard error.responseHead?.statusCode == 500 else { return .retry }
            try? await clock.sleep(for: .milliseconds(500))
            return .doNotRetry
        }
        let session = Session(
            transport: transport, adapters: [numbered], retriers: [slow],
            hedging: Hedging(delay: .milliseconds(100), maximumInFlight: 3), clock: clock)
        let task = try await sendPastTheDelay(session, clock)
        // Sleeping: the first attempt, the hedging timer, the retrier deciding about the 500.
        try await waitWhile { asked.withLock { $0 } < 1 || clock.pendingSleepCount < 3 }
        clock.advance(by: .milliseconds(100))
        try await waitWhile { asked.withLock { $0 } < 2 }
        clock.advance(by: .milliseconds(400))
        let error = try await #require(throws: ReboundError.self) { try await task.value }

        #expect(error.responseHead?.statusCode == 500)
        #expect(error.lastRequest?.value(forHTTPHeaderField: "X-Attempt") == "2")
        #expect(error.attempts.map(\.number) == [3, 1, 2])
    }

    @Test("Attempts of one round that fail alike are no repeated failure: the slow first attempt still wins")
    func roundFailuresAreNoRepeatedFailure() async throws {
        let clock = ManualClock()
        let log = Log()
        let transport = slowFirst(clock, log: log, then: [.status(503), .status(503)], last: .status(503))
        let session = Session(
            transport: transport, retriers: [RetryPolicy(stopsAfterRepeatedFailure: true)],
            hedging: Hedging(delay: .milliseconds(100), maximumInFlight: 3, maximumAttempts: 3), clock: clock)
        let task = try await sendPastTheDelay(session, clock)
        // Two hedges fail at once; the first attempt is left, due at 1 s.
        try await waitFor("#3 answered", in: log)
        try await waitWhile { clock.pendingSleepCount > 1 }
        clock.advance(by: .milliseconds(900))
        let response = try await task.value

        #expect(String(decoding: response.data, as: UTF8.self) == "slow")
        #expect(!log.all.contains("#1 cancelled"))
    }

    @Test(
        "A response that asks for quiet with Retry-After, or a retry-after-ms read, starts no hedge before that time",
        arguments: [("Retry-After", "60", RetryAfter.Signals()), ("retry-after-ms", "60000", .retryAfterMs)])
    func retryAfterHoldsTheNextHedge(field: String, value: String, signals: RetryAfter.Signals) async throws {
        let clock = ManualClock()
        let log = Log()
        let transport = slowFirst(
            clock, log: log, then: [.response(status: 503, headers: [field: value], body: Data())])
        let session = Session(
            transport: transport, retriers: [RetryPolicy(retryAfter: RetryAfter(signals: signals))],
            hedging: Hedging(delay: .milliseconds(100), maximumInFlight: 3, maximumAttempts: 3), clock: clock)
        let task = try await sendPastTheDelay(session, clock)
        try await waitFor("#2 answered", in: log)
        // Past several hedging delays, but well within the 60 s asked for: no third attempt. (One would answer at
        // once, and end the wait too.)
        try await waitWhile { clock.pendingSleepCount < 2 && !log.all.contains("#3 answered") }
        clock.advance(by: .milliseconds(500))
        try await waitWhile { clock.pendingSleepCount < 2 && !log.all.contains("#3 answered") }
        #expect(transport.requests.count == 2)
        clock.advance(by: .milliseconds(400))
        let response = try await task.value

        #expect(String(decoding: response.data, as: UTF8.self) == "slow")
        #expect(transport.requests.count == 2)
    }

    @Test(
        "The quiet a redirect's last hop asks for holds the hedges to the host the attempts are sent to",
        .timeLimit(.minutes(1)))
    func theQuietAskedAfterARedirectHoldsTheHostTheAttemptsGoTo() async throws {
        let clock = ManualClock()
        let log = Log()
        // The hedge is redirected to b.example.com, which asks for a minute of quiet; a hedge after it would be "fast".
        let transport = slowFirst(
            clock, log: log,
            then: [
                .response(status: 302, headers: ["Location": "https://b.example.com/items"]),
                .response(status: 503, headers: ["Retry-After": "60"]),
            ])
        let session = Session(
            transport: transport, retriers: [RetryPolicy()],
            hedging: Hedging(delay: .milliseconds(100), maximumInFlight: 3, maximumAttempts: 3), clock: clock)
        let task = try await sendPastTheDelay(session, clock)
        // No third attempt to api.example.com while the quiet holds: a timer waits the minute for it instead.
        try await waitWhile { !clock.sleeps.contains(.seconds(60)) && transport.requests.count < 4 }
        clock.advance(by: .milliseconds(900))
        let response = try await task.value

        #expect(String(decoding: response.data, as: UTF8.self) == "slow")
        #expect(transport.requests.map { $0.url?.host } == ["api.example.com", "api.example.com", "b.example.com"])
    }

    @Test("The quiet a hedge's Retry-After asked for holds the retry after the round, too")
    func retryAfterOnAHedgeHoldsTheRetryAfterTheRound() async throws {
        let clock = ManualClock()
        let log = Log()
        // The first attempt fails with a 500 after 1 s; the hedge at 0.1 s gets a 503 asking for 30 s of quiet.
        let transport = failingSlowlyWhileTheHedgeAsksForQuiet(clock, log: log, retryAfter: "30")
        let session = Session(
            transport: transport, retriers: [RetryPolicy(backoff: .constant(.milliseconds(500)))],
            hedging: Hedging(delay: .milliseconds(100), maximumInFlight: 3, maximumAttempts: 5), clock: clock)
        let task = try await sendPastTheDelay(session, clock)
        try await waitFor("#2 answered", in: log)
        // The policy would retry the 503 after the 30 s it asked for: no hedge until then, and a timer waits for it.
        try await waitForSleep(of: .seconds(30), on: clock)
        clock.advance(by: .milliseconds(900))

        // The round ended on the 500, whose retry the policy wants after 0.5 s: it waits until 30.1 s instead.
        try await waitForSleep(of: .milliseconds(29_100), on: clock)
        #expect(transport.requests.count == 2)
        clock.advance(by: .milliseconds(29_100))
        let response = try await task.value

        #expect(String(decoding: response.data, as: UTF8.self) == "fast")
        #expect(response.attempts.map(\.number) == [2, 1, 3])
        #expect(response.attempts[1].retryDelay == .milliseconds(29_100))
    }

    @Test(
        "The quiet a hedge's Retry-After asks for is held at the longest delay the retry policy honours",
        arguments: [Duration.seconds(5), nil])
    func theQuietAHedgeAsksForIsHeldAtThePolicysMaximumDelay(maximumDelay: Duration?) async throws {
        let clock = ManualClock()
        let log = Log()
        // The first attempt fails with a 500 after 1 s; the hedge at 0.1 s gets a 503 asking for a day of quiet.
        let transport = failingSlowlyWhileTheHedgeAsksForQuiet(clock, log: log, retryAfter: "86400")
        let retryAfter = maximumDelay.map { RetryAfter(maximumDelay: $0) } ?? .default
        let session = Session(
            transport: transport, retriers: [RetryPolicy(backoff: .zero, retryAfter: retryAfter)],
            hedging: Hedging(delay: .milliseconds(100), maximumInFlight: 3, maximumAttempts: 5), clock: clock)
        let held = maximumDelay ?? RetryAfter.defaultMaximumDelay
        let task = try await sendPastTheDelay(session, clock)
        try await waitFor("#2 answered", in: log)
        // No hedge before the quiet ends, held at the policy's maximum (60 s by default), not a day.
        try await waitWhile { !clock.sleeps.contains { $0 == held || $0 > .seconds(3_600) } }
        #expect(!clock.sleeps.contains { $0 > .seconds(3_600) })
        clock.advance(by: .milliseconds(900))

        // The round ended on the 500 at 1 s: its retry waits until the quiet ends, 0.1 s + the maximum.
        let rest = held - .milliseconds(900)
        try await waitWhile { !clock.sleeps.contains { $0 == rest || $0 > .seconds(3_600) } }
        clock.advance(by: .seconds(86_400))
        let response = try await task.value

        #expect(String(decoding: response.data, as: UTF8.self) == "fast")
        #expect(response.attempts[1].retryDelay == rest)
    }

    @Test("With the preset, x-should-retry: false on a hedge ends the round, naming the rule")
    func thePresetEndsARoundTheServerDeclined() async throws {
        let clock = ManualClock()
        let log = Log()
        let transport = slowFirst(
            clock, log: log, then: [.response(status: 503, headers: ["x-should-retry": "false"], body: Data())])
        let session = Session(
            transport: transport, resilience: Resilience(clock: clock, random: .seeded(1), deadline: nil),
            hedging: Hedging(delay: .milliseconds(100)), clock: clock)

        let task = try await sendPastTheDelay(session, clock)
        let error = await #expect(throws: ReboundError.self) { try await task.value }

        #expect(error?.stopReason == .serverAskedNoRetry)
        #expect(transport.requests.count == 2)
        try await waitFor("#1 cancelled", in: log)
    }

    @Test(
        "A response with x-should-retry: false starts no new hedge when the chain's policy reads it",
        arguments: [(RetryAfter.Signals(), "fast"), (.shouldRetry, "slow")])
    func shouldRetryFalseStopsTheHedges(signals: RetryAfter.Signals, winner: String) async throws {
        let clock = ManualClock()
        let log = Log()
        let transport = slowFirst(
            clock, log: log, then: [.response(status: 503, headers: ["x-should-retry": "false"], body: Data())])
        let recorder = HedgeRecorder()
        // A retrier of the app's own that retries anything, so that the round would start the next hedge at once.
        let session = Session(
            transport: transport,
            retriers: [Retrier { _, _ in .retry }, RetryPolicy(retryAfter: RetryAfter(signals: signals))],
            observers: [recorder], hedging: Hedging(delay: .milliseconds(100), maximumInFlight: 3, maximumAttempts: 3),
            clock: clock)
        let task = try await sendPastTheDelay(session, clock)
        // The round heard the retriers' answer about the hedge's failure and went on.
        try await waitWhile { !recorder.attempts.contains { $0.hasPrefix("#2 hedge 1 retry") } }
        if signals.isEmpty {
            try await waitFor("#3 answered", in: log)
        } else {
            clock.advance(by: .milliseconds(900))
        }
        let response = try await task.value

        #expect(String(decoding: response.data, as: UTF8.self) == winner)
        #expect(transport.requests.count == (signals.isEmpty ? 3 : 2))
    }
}
