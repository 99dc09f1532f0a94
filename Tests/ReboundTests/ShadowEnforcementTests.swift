import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A part in shadow mode decides as it would enforced and refuses nothing: on one traffic script whose answers do not
/// depend on the part, a shadow run tells as many refusals as the enforced run makes, and fails none of them.
@Suite("Shadow enforcement")
struct ShadowEnforcementTests {
    /// What one run of the script came to.
    struct Run {
        /// How many requests failed because a breaker, a budget or a throttle refused them (an attempt, or a retry).
        var refused = 0
        /// The requests a breaker, a budget or a throttle refused, by their index in the script, and what it refused.
        var refusedRequests: [String] = []
        /// How many requests failed for any reason.
        var failed = 0
        /// Every request's shadow refusals, as told at its end.
        var shadowRefusals: [ShadowRefusal] = []
        /// The shadow refusals told with the attempts' outcomes.
        var toldWithAttempts = 0
        /// The breakers' transitions, with the time of each.
        var transitions: [String] = []
        /// How many attempts reached the transport.
        var sent = 0
    }

    /// An observer that collects the shadow refusals, as the attempts' and the requests' outcomes tell them.
    final class ShadowRecorder: AttemptObserver {
        private let state = Locked((attempts: 0, requests: [ShadowRefusal]()))

        func attemptDidFinish(_ outcome: AttemptOutcome) async {
            state.withLock { $0.attempts += outcome.shadowRefusals.count }
        }

        func requestDidFinish(_ outcome: RequestOutcome) async {
            state.withLock { $0.requests += outcome.shadowRefusals }
        }

        var toldWithAttempts: Int { state.withLock { $0.attempts } }
        var refusals: [ShadowRefusal] { state.withLock { $0.requests } }
    }

    /// The host `a.example` is down (503) from 10 s to 30 s and `b.example` never; a request every 100 ms, to each in
    /// turn, for 60 s, each retried twice at once. Every attempt of a request is made at the time the request is sent,
    /// so that a request the enforced run ends early takes no time from the next: the script is the same in both runs.
    static func answer(_ request: URLRequest, at now: Duration) -> ScriptedTransport.Step {
        let down = request.url?.host == "a.example" && now >= .seconds(10) && now < .seconds(30)
        return .status(down ? 503 : 200)
    }

    /// Runs the script through a chain of `adapter` (made with the run's clock and transition log) and a
    /// `RetryPolicy`.
    static func run(
        _ makeAdapter: (FastForwardClock, @escaping @Sendable (CircuitBreaker.Transition) -> Void) -> any RequestAdapter
    ) async -> Run {
        let clock = FastForwardClock()
        let transitions = Locked<[String]>([])
        let adapter = makeAdapter(clock) { transition in
            let at = clock.now.offset
            transitions.withLock { $0.append("\(at) \(transition.key ?? "-") \(transition.to)") }
        }
        let transport = ScriptedTransport(clock: clock) { request, _ in answer(request, at: clock.now.offset) }
        let recorder = ShadowRecorder()
        let session = Session(
            transport: transport, adapters: [adapter], retriers: [RetryPolicy(retryLimit: 2, backoff: .zero)],
            observers: [recorder], clock: clock)
        var run = Run()
        for index in 0..<600 {
            try? await clock.sleep(until: TestInstant(offset: .milliseconds(100 * index)))
            let host = index.isMultiple(of: 2) ? "a.example" : "b.example"
            do {
                _ = try await session.send(URLRequest(url: URL(string: "https://\(host)/items")!), label: "\(index)")
            } catch let error as ReboundError {
                run.failed += 1
                if error.circuitBreakerOpenError != nil || [.retryBudget, .throttled].contains(error.stopReason) {
                    run.refused += 1
                    // Refused as attempt 1 is sent, or as the retry after attempt 1 or 2 is asked for.
                    let stage: String = if case .retryAborted = error.reason { "retry" } else { "attempt" }
                    run.refusedRequests.append("\(index) \(stage)")
                }
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
        run.shadowRefusals = recorder.refusals
        run.toldWithAttempts = recorder.toldWithAttempts
        run.transitions = transitions.withLock { $0 }
        run.sent = transport.requestCount
        return run
    }

    /// A breaker that opens for 1 s when half of its last 10 calls failed, and closes after 2 trial successes.
    static let configuration = CircuitBreaker.Configuration(
        tripCondition: .failureRate(0.5, window: .count(10), minimumCalls: 10), openDuration: .seconds(1),
        trialSuccessesToClose: 2)

    @Test func aShadowBreakerTellsTheRefusalsTheEnforcedOneMakesAndRefusesNone() async {
        func breaker(_ enforcement: Enforcement) async -> Run {
            await Self.run { clock, log in
                CircuitBreaker(
                    key: "a", configuration: Self.configuration, clock: clock, enforcement: enforcement,
                    onTransition: log)
            }
        }
        let enforced = await breaker(.enforced)
        let shadow = await breaker(.shadow)

        // The script trips the breaker: the comparison is about something.
        #expect(enforced.refused > 100)
        #expect(enforced.shadowRefusals.isEmpty)
        // The same decisions at the same times, none applied.
        #expect(shadow.transitions == enforced.transitions)
        #expect(shadow.shadowRefusals.count == enforced.refused)
        #expect(shadow.shadowRefusals.map { "\($0.label ?? "-") \($0.stage)" } == enforced.refusedRequests)
        #expect(Set(shadow.shadowRefusals.map(\.requestID)).count == shadow.shadowRefusals.count)
        #expect(shadow.refused == 0)
        #expect(shadow.failed < enforced.failed)
        // Each told once with an attempt's outcome, and again with its request's.
        #expect(shadow.toldWithAttempts == shadow.shadowRefusals.count)
        #expect(shadow.sent > enforced.sent)
        #expect(shadow.shadowRefusals.allSatisfy { $0.reason == .circuitOpen && $0.part == "CircuitBreaker" })
        #expect(shadow.shadowRefusals.contains { $0.stage == .attempt })
        #expect(shadow.shadowRefusals.contains { $0.stage == .retry })
    }

    @Test func aShadowRegistryTellsTheRefusalsTheEnforcedOneMakesPerHost() async {
        func registry(_ enforcement: Enforcement) async -> Run {
            await Self.run { clock, log in
                CircuitBreakerRegistry(
                    configuration: Self.configuration, clock: clock, enforcement: enforcement, onTransition: log)
            }
        }
        let enforced = await registry(.enforced)
        let shadow = await registry(.shadow)

        #expect(enforced.refused > 50)
        #expect(shadow.transitions == enforced.transitions)
        #expect(shadow.shadowRefusals.map { "\($0.label ?? "-") \($0.stage)" } == enforced.refusedRequests)
        // Only the host that was down.
        #expect(!shadow.transitions.contains { $0.contains("b.example") })
        #expect(shadow.shadowRefusals.count == enforced.refused)
        #expect(shadow.shadowRefusals.allSatisfy { $0.key == "a.example" })
        #expect(shadow.refused == 0)
        #expect(shadow.toldWithAttempts == shadow.shadowRefusals.count)
    }

    @Test func aShadowBudgetTellsTheDenialsTheEnforcedOneMakesAndDeniesNone() async {
        let budgets = Locked<[Enforcement: RetryBudget]>([:])
        func budget(_ enforcement: Enforcement) async -> Run {
            await Self.run { _, _ in
                let budget = RetryBudget(
                    configuration: .init(initialTokens: 50, maximumTokens: 50), enforcement: enforcement)
                budgets.withLock { $0[enforcement] = budget }
                return budget
            }
        }
        let enforced = await budget(.enforced)
        let shadow = await budget(.shadow)

        #expect(enforced.refused > 20)
        #expect(shadow.refused == 0)
        #expect(shadow.shadowRefusals.map { "\($0.label ?? "-") \($0.stage)" } == enforced.refusedRequests)
        #expect(shadow.shadowRefusals.allSatisfy { $0.reason == .retryBudget && $0.key == "a.example" })
        #expect(shadow.toldWithAttempts == shadow.shadowRefusals.count)
        // The same tokens left, and nothing kept for a request.
        let (enforcedBudget, shadowBudget) = budgets.withLock { ($0[.enforced]!, $0[.shadow]!) }
        #expect(shadowBudget.tokens(for: "a.example") == enforcedBudget.tokens(for: "a.example"))
        #expect(shadowBudget.requestsWithGrants == 0)
        #expect(shadowBudget.requestsWithHedges == 0)
    }

    @Test func aShadowRatioBudgetTellsTheDenialsTheEnforcedOneMakes() async {
        func budget(_ enforcement: Enforcement) async -> Run {
            await Self.run { clock, _ in
                RetryBudget(
                    ratio: .init(percent: 10, window: .seconds(10), minimumRetriesPerSecond: 0.5), clock: clock,
                    enforcement: enforcement)
            }
        }
        let enforced = await budget(.enforced)
        let shadow = await budget(.shadow)

        #expect(enforced.refused > 20)
        #expect(shadow.refused == 0)
        #expect(shadow.shadowRefusals.map { "\($0.label ?? "-") \($0.stage)" } == enforced.refusedRequests)
    }

    @Test func aShadowThrottleTellsTheRejectionsTheEnforcedOneMakesAndRejectsNone() async {
        let throttles = Locked<[Enforcement: AdaptiveThrottle]>([:])
        func throttle(_ enforcement: Enforcement) async -> Run {
            await Self.run { clock, _ in
                // The same draws in both runs: a throttle in shadow mode draws for what the enforced one draws for.
                let throttle = AdaptiveThrottle(clock: clock, random: .seeded(7), enforcement: enforcement)
                throttles.withLock { $0[enforcement] = throttle }
                return throttle
            }
        }
        let enforced = await throttle(.enforced)
        let shadow = await throttle(.shadow)

        #expect(enforced.refused > 20)
        #expect(enforced.refusedRequests.contains { $0.hasSuffix("attempt") })
        #expect(enforced.refusedRequests.contains { $0.hasSuffix("retry") })
        #expect(shadow.refused == 0)
        #expect(shadow.shadowRefusals.map { "\($0.label ?? "-") \($0.stage)" } == enforced.refusedRequests)
        #expect(
            shadow.shadowRefusals.allSatisfy {
                $0.reason == .throttled && $0.part == "AdaptiveThrottle" && $0.key == "a.example"
                    && $0.error is AdaptiveThrottleRejection
            })
        #expect(shadow.toldWithAttempts == shadow.shadowRefusals.count)
        #expect(shadow.sent > enforced.sent)
        // The same counts at the end: what the shadow throttle counted is what the enforced one saw.
        let (enforcedThrottle, shadowThrottle) = throttles.withLock { ($0[.enforced]!, $0[.shadow]!) }
        for host in ["a.example", "b.example"] {
            #expect(shadowThrottle.snapshot(for: host) == enforcedThrottle.snapshot(for: host))
        }
        #expect(shadowThrottle.grantsKept == 0)
    }

    @Test func eachPartOfAShadowPresetTellsWhatItWouldRefuseEnforcedAlone() async throws {
        // Every draw 0: the throttle rejects whenever its probability is above 0, and the breakers' breaks are their
        // shortest, whatever the order of the draws.
        let random = RandomSource(ZeroGenerator())
        let presets = Locked<[Resilience]>([])
        let shadow = await Self.run { clock, _ in
            let preset = Resilience(clock: clock, random: random, deadline: nil, enforcement: .shadow)
            presets.withLock { $0.append(preset) }
            return Interceptor(adapters: preset.adapters)
        }
        let preset = try #require(presets.withLock { $0.first })
        #expect(
            [preset.throttle.enforcement, preset.breakers.enforcement, preset.budget.enforcement] == [
                .shadow, .shadow, .shadow,
            ])
        #expect(shadow.refused == 0)
        #expect(shadow.toldWithAttempts == shadow.shadowRefusals.count)

        // Each part alone, enforced, with the preset's numbers, on the same script.
        let throttle = await Self.run { clock, _ in
            AdaptiveThrottle(configuration: preset.throttle.configuration, clock: clock, random: random)
        }
        let breakers = await Self.run { clock, _ in
            CircuitBreakerRegistry(configuration: preset.breakers.configuration, clock: clock)
        }
        let ratio = try #require(preset.budget.ratio)
        let budget = await Self.run { clock, _ in RetryBudget(ratio: ratio, clock: clock) }
        for (part, alone) in [("AdaptiveThrottle", throttle), ("CircuitBreaker", breakers), ("RetryBudget", budget)] {
            #expect(alone.refused > 5, "\(part)")
            let told = shadow.shadowRefusals.filter { $0.part == part }.map { "\($0.label ?? "-") \($0.stage)" }
            #expect(told == alone.refusedRequests, "\(part)")
        }
    }

    /// A request A whose 503 is granted a retry after 10 s, then a POST B (not retried) whose 503, the second failure
    /// in a row, opens the breaker while A waits; `answer` answers each attempt.
    struct OpeningDuringABackoff {
        let clock = ManualClock()
        let transport: ScriptedTransport
        let breaker: CircuitBreaker
        let recorder = ShadowRecorder()
        let a: Task<Response, any Error>

        init(_ enforcement: Enforcement, answer: @escaping ScriptedTransport.Handler) async throws {
            transport = ScriptedTransport(clock: clock, handler: answer)
            breaker = CircuitBreaker(
                configuration: .init(tripCondition: .consecutiveFailures(2), openDuration: .seconds(60)), clock: clock,
                enforcement: enforcement)
            let session = Session(
                transport: transport, adapters: [breaker], retriers: [RetryPolicy(backoff: .constant(.seconds(10)))],
                observers: [recorder], clock: clock)
            a = Task { try await session.send(URLRequest(url: URL(string: "https://api.example.com/a")!)) }
            try await clock.waitForSleepers(1)
            _ = try? await session.send(URLRequest(url: URL(string: "https://api.example.com/b")!, method: .post))
        }
    }

    /// Enforced, the opening ends A's wait at once; in shadow, A sleeps its backoff, its retry is sent unseen by the
    /// breaker, and the refusal the opening would have made comes with that retry's outcome.
    @Test(arguments: [Enforcement.enforced, .shadow])
    func anOpeningDuringABackoffEndsItOrIsTold(enforcement: Enforcement) async throws {
        let run = try await OpeningDuringABackoff(enforcement) { request, number in
            request.url?.path == "/a" && number > 1 ? .status(200) : .status(503)
        }
        #expect(run.breaker.state == .open)

        if enforcement == .enforced {
            let error = await #expect(throws: ReboundError.self) { try await run.a.value }
            #expect(error?.circuitBreakerOpenError != nil)
            #expect(run.transport.requestCount == 2)
        } else {
            run.clock.advance(by: .seconds(10))
            let response = try await run.a.value
            #expect(response.attempts.count == 2)
            #expect(run.recorder.refusals.map(\.stage) == [.retry])
            #expect(run.recorder.refusals.first?.attempt == 1)
            #expect(run.recorder.toldWithAttempts == 1)
            // The retry was sent past the open breaker, uncounted: it stays open.
            #expect(run.breaker.state == .open)
        }
        #expect(run.breaker.permitsInFlight == 0)
        #expect(run.breaker.backoffWaitsKept == 0)
    }

    @Test func aRefusalDecidedAfterTheLastAttemptWasToldComesWithTheRequestsEnd() async throws {
        let run = try await OpeningDuringABackoff(.shadow) { _, _ in .status(503) }
        run.a.cancel()
        _ = try? await run.a.value

        #expect(run.recorder.refusals.map(\.stage) == [.retry])
        #expect(run.recorder.toldWithAttempts == 0)
        #expect(run.breaker.backoffWaitsKept == 0)
    }

    @Test func aShadowRefusalSaysWhatWouldHaveBeenRefused() {
        let error = CircuitBreakerOpenError(key: "api.example.com", state: .open, retryAfter: nil)
        let refusal = ShadowRefusal(
            requestID: UUID(), label: "items", attempt: 2, stage: .retry, reason: .circuitOpen, part: "CircuitBreaker",
            key: "api.example.com", error: error)
        #expect(
            refusal.description
                == "CircuitBreaker for api.example.com would refuse the retry after attempt 2 (circuitOpen)")
        let keyless = ShadowRefusal(
            requestID: UUID(), attempt: 3, stage: .hedge, reason: .circuitOpen, part: "CircuitBreaker", error: error)
        #expect(keyless.description == "CircuitBreaker would refuse hedge attempt 3 (circuitOpen)")
        #expect(Enforcement.shadow.description == "shadow")
    }

    /// A random source whose every draw is 0: a throttle with any probability of rejection above 0 rejects.
    struct ZeroGenerator: RandomNumberGenerator, Sendable {
        mutating func next() -> UInt64 { 0 }
    }

    /// A part that refuses a hedge once two other requests failed: a breaker that opens at the first failure, or a
    /// throttle that rejects as soon as what it saw failed.
    static func hedgeRefuser(_ part: String, clock: ManualClock, enforcement: Enforcement) -> any RequestAdapter {
        if part == "breaker" {
            return CircuitBreaker(
                configuration: .init(tripCondition: .consecutiveFailures(1), openDuration: .seconds(30)), clock: clock,
                enforcement: enforcement)
        }
        return AdaptiveThrottle(
            configuration: .init(multiplier: 1, window: .seconds(60), maximumRejection: 1, minimumRequests: 2),
            clock: clock,
            random: RandomSource(ZeroGenerator()), enforcement: enforcement)
    }

    @Test(arguments: ["breaker", "throttle"])
    func aHedgeAShadowPartWouldRefuseStartsAndIsTold(part: String) async throws {
        // The first attempt of a hedged request hangs while two other requests fail: enforced, the part refuses the
        // hedge; in shadow, the hedge starts, answers, and the refusal is told.
        for enforcement in [Enforcement.enforced, .shadow] {
            let clock = ManualClock()
            let transport = ScriptedTransport(clock: clock) { request, number in
                if request.url?.path == "/fails" { return .status(503) }
                return number == 1 ? .status(200).delayed(by: .seconds(10)) : .status(200)
            }
            let refuser = Self.hedgeRefuser(part, clock: clock, enforcement: enforcement)
            let recorder = ShadowRecorder()
            let session = Session(
                transport: transport, adapters: [refuser], retriers: [RetryPolicy()], observers: [recorder],
                hedging: Hedging(delay: .seconds(1)), clock: clock)
            let hedged = Task { try await session.send(URLRequest(url: URL(string: "https://api.example.com/slow")!)) }
            try await transport.waitForRequests(1)
            try await clock.waitForSleepers(2)
            for _ in 0..<2 {
                _ = try? await Session(transport: transport, adapters: [refuser], clock: clock)
                    .send(URLRequest(url: URL(string: "https://api.example.com/fails")!))
            }
            clock.advance(by: .seconds(1))

            if enforcement == .shadow {
                let fails = transport.requestCount - 1
                try await transport.waitForRequests(fails + 2)
                let response = try await hedged.value
                #expect(response.attempts.last?.hedge == 1)
                #expect(recorder.refusals.map(\.stage) == [.hedge])
                #expect(recorder.refusals.first?.attempt == 2)
                #expect(recorder.refusals.first?.reason == (part == "breaker" ? .circuitOpen : .throttled))
                #expect(recorder.toldWithAttempts == 1)
            } else {
                try await clock.waitForSleepers(1)
                let sent = transport.requestCount
                clock.advance(by: .seconds(9))
                let response = try await hedged.value
                #expect(response.attempts.map { $0.hedge } == [0])
                #expect(transport.requestCount == sent)
                #expect(recorder.refusals.isEmpty)
            }
        }
    }
}
