import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("CircuitBreaker: refusals, pure reads, expiring trials, storms", .timeLimit(.minutes(5)))
struct CircuitBreakerRecoveryTests {
    let clock = ManualClock()

    /// A request to the fallback host of the tests whose retries move there.
    let fallback = URLRequest(url: URL(string: "https://fallback.example.com/items")!)

    /// A registry whose breakers trip after `failures` failures in a row and stay open 30 s.
    func registry(trippingAfter failures: Int) -> CircuitBreakerRegistry {
        CircuitBreakerRegistry(
            configuration: .init(tripCondition: .consecutiveFailures(failures), openDuration: .seconds(30)),
            clock: clock)
    }

    /// A breaker that trips on the first failure and stays open 30 s, given directly or reached through a registry.
    func breaker(throughRegistry: Bool, trials: Int = 1) -> (adapter: any RequestAdapter, breaker: () -> CircuitBreaker)
    {
        let configuration = CircuitBreaker.Configuration(
            tripCondition: .consecutiveFailures(1), openDuration: .seconds(30), halfOpenTrialCalls: trials)
        if throughRegistry {
            let registry = CircuitBreakerRegistry(configuration: configuration, clock: clock)
            return (registry, { registry.breaker(for: "api.example.com") })
        }
        let breaker = CircuitBreaker(configuration: configuration, clock: clock)
        return (breaker, { breaker })
    }

    @Test(
        "A retry that would find the breaker open is refused at once: no sleep, nothing charged, the breaker's error",
        arguments: [false, true])
    func retryRefusedAtOnce(throughRegistry: Bool) async throws {
        let (adapter, breaker) = breaker(throughRegistry: throughRegistry)
        let budget = RetryBudget()
        let transport = ScriptedTransport { _, _ in .status(503) }
        let session = Session(
            transport: transport, adapters: [budget, adapter],
            retriers: [RetryPolicy(backoff: .constant(.seconds(1)))], clock: clock)

        // Nothing sleeps: a sleep on the manual clock would never end and the test would hit its time limit.
        let error = try await #require(throws: ReboundError.self) { try await session.send(request()) }
        #expect(transport.requestCount == 1)
        #expect(clock.sleeps.isEmpty)
        guard case .retryAborted(let open as CircuitBreakerOpenError, .unacceptableStatusCode(503)) = error.reason
        else {
            Issue.record("reason: \(error.reason)")
            return
        }
        #expect(open.retryAfter == .seconds(30))
        #expect(breaker().state == .open)
        #expect(budget.tokens(for: exampleURL) == 500)
        #expect(budget.requestsWithGrants == 0)
        #expect(breaker().permitsInFlight == 0)
    }

    @Test(
        "A retry is granted only while the breaker is closed: one whose backoff would outlast the break is refused too")
    func retryOutlastingTheBreakIsRefused() async throws {
        let breaker = CircuitBreaker(
            configuration: .init(tripCondition: .consecutiveFailures(1), openDuration: .milliseconds(500)),
            clock: clock)
        let transport = ScriptedTransport([.status(503), .status(200)])
        let session = Session(
            transport: transport, adapters: [breaker], retriers: [RetryPolicy(backoff: .constant(.seconds(1)))],
            clock: clock)

        // Nothing sleeps: a sleep on the manual clock would never end and the test would hit its time limit.
        let error = try await #require(throws: ReboundError.self) { try await session.send(request()) }

        #expect(error.circuitBreakerOpenError?.retryAfter == .milliseconds(500))
        #expect(transport.requestCount == 1)
        #expect(clock.sleeps.isEmpty)
    }

    @Test("A half-open breaker refuses a retry at once: its trials are for fresh requests")
    func halfOpenRefusesRetries() async throws {
        let breaker = CircuitBreaker(
            configuration: .init(tripCondition: .consecutiveFailures(1), openDuration: .seconds(1)), clock: clock)
        _ = try? await Session(transport: ScriptedTransport([.status(503)]), adapters: [breaker], clock: clock)
            .send(request())
        clock.advance(by: .seconds(1))
        // Admitted through a context that reports nothing: the breaker is half-open with its trial place free.
        _ = try await breaker.adapt(request(), context: RequestContext())
        #expect(breaker.state == .halfOpen)

        let attempt = Attempt(
            number: 1, request: request(), response: nil, failure: .unacceptableStatusCode(503), duration: .zero)
        let failed = RetryRequest(originalRequest: request(), attempts: [attempt])
        let error = ReboundError(reason: .unacceptableStatusCode(503), originalRequest: request())
        let refusal = breaker.admitRetry(failed, dueTo: error, after: .seconds(1))

        #expect((refusal as? CircuitBreakerOpenError)?.state == .halfOpen)
    }

    @Test("A request waiting in backoff ends at once, with the breaker's error and nothing charged, when it opens")
    func waitingRetryEndsWhenTheBreakerOpens() async throws {
        let breaker = CircuitBreaker(configuration: .init(tripCondition: .consecutiveFailures(2)), clock: clock)
        let budget = RetryBudget()
        let transport = ScriptedTransport { _, number in .response(status: 503, body: "down \(number)") }
        let session = Session(
            transport: transport, adapters: [budget, breaker],
            retriers: [RetryPolicy(backoff: .constant(.seconds(10)))], clock: clock)
        let waiting = Task { try await session.send(request()) }
        try await clock.waitForSleepers(1)

        // A second failure trips the breaker: its own retry is refused, and the first request's wait ends now.
        _ = try? await session.send(request())
        let error = try await #require(throws: ReboundError.self) { try await waiting.value }

        guard case .retryAborted(let open as CircuitBreakerOpenError, .unacceptableStatusCode(503)) = error.reason
        else {
            Issue.record("reason: \(error.reason)")
            return
        }
        #expect(open.state == .open)
        #expect(error.attempts.count == 1)
        // The error carries the last attempt's response and body, as every other failure's does.
        #expect(error.statusCode == 503)
        #expect(error.data == Data("down 1".utf8))
        #expect(transport.requestCount == 2)
        #expect(budget.tokens(for: exampleURL) == 500)
        #expect(budget.requestsWithGrants == 0)
        #expect(breaker.permitsInFlight == 0)
        #expect(breaker.backoffWaitsKept == 0)
    }

    /// How the breaker opens while a retry is on its way to it.
    enum Opening {
        /// Another request's failure trips it.
        case tripped
        /// `forceOpen()`.
        case forced
    }

    /// Sends a request whose first attempt fails; its retry, once its backoff has ended, stops on its way to the
    /// breaker while the breaker opens (`opening`), then goes on. Returns how the request ended, the transport and the
    /// breaker.
    func retryMeetingAnOpening(throughRegistry: Bool, opening: Opening) async throws
        -> (Result<Response, ReboundError>, ScriptedTransport, CircuitBreaker)
    {
        let breakers = registry(trippingAfter: 2)
        let breaker = breakers.breaker(for: "api.example.com")
        let adapter: any RequestAdapter = throughRegistry ? breakers : breaker
        // The first request fails once, then succeeds; every other request fails.
        let transport = ScriptedTransport { request, _ in
            let first = request.value(forHTTPHeaderField: "X-Name") == "first"
            return first && request.value(forHTTPHeaderField: "X-Attempt") == "2" ? .status(200) : .status(503)
        }
        let stopped = Gate()
        let goOn = Gate()
        let onTheWay = Adapter { request, context in
            var request = request
            request.setValue("\(context.attempt)", forHTTPHeaderField: "X-Attempt")
            if request.value(forHTTPHeaderField: "X-Name") == "first", context.attempt == 2 {
                await stopped.open()
                await goOn.wait()
            }
            return request
        }
        let session = Session(
            transport: transport, adapters: [onTheWay, adapter],
            retriers: [RetryPolicy(backoff: .constant(.seconds(1)))], clock: clock)
        var first = request()
        first.setValue("first", forHTTPHeaderField: "X-Name")
        let waiting = Task { [first] in try await session.send(first) }
        try await waitForSleep(of: .seconds(1), on: clock)
        clock.advance(by: .seconds(1))
        await stopped.wait()

        switch opening {
        case .tripped: _ = try? await session.send(request())
        case .forced: breaker.forceOpen()
        }
        #expect(breaker.state == (opening == .tripped ? .open : .forcedOpen))
        await goOn.open()
        do {
            return (.success(try await waiting.value), transport, breaker)
        } catch let error as ReboundError {
            return (.failure(error), transport, breaker)
        }
    }

    @Test(
        "A retry whose backoff ended while the breaker was closed goes through when the breaker opens before it arrives",
        arguments: [false, true])
    func retryWokenBeforeTheOpeningGoesThrough(throughRegistry: Bool) async throws {
        let (result, transport, breaker) = try await retryMeetingAnOpening(
            throughRegistry: throughRegistry, opening: .tripped)

        // The retry was admitted when its backoff ended: it goes through, and its outcome is not counted in the break
        // that began after it was admitted.
        let response = try result.get()
        #expect(response.statusCode == 200)
        #expect(response.attempts.count == 2)
        #expect(transport.requestCount == 3)
        #expect(breaker.state == .open)
        #expect(breaker.permitsInFlight == 0)
        #expect(breaker.backoffWaitsKept == 0)
        // A fresh request is still refused.
        let session = Session(transport: transport, adapters: [breaker], clock: clock)
        let refused = try await #require(throws: ReboundError.self) { try await session.send(request()) }
        #expect(refused.circuitBreakerOpenError != nil)
        #expect(transport.requestCount == 3)
    }

    @Test(
        "A breaker forced open refuses even a retry whose backoff ended before it was forced", arguments: [false, true])
    func forcedOpenRefusesAWokenRetry(throughRegistry: Bool) async throws {
        let (result, transport, breaker) = try await retryMeetingAnOpening(
            throughRegistry: throughRegistry, opening: .forced)

        guard case .failure(let error) = result else {
            Issue.record("the retry went through a breaker forced open")
            return
        }
        #expect(error.circuitBreakerOpenError?.state == .forcedOpen)
        #expect(transport.requestCount == 1)
        #expect(breaker.permitsInFlight == 0)
        #expect(breaker.backoffWaitsKept == 0)
    }

    /// When, in a request's second backoff, the breaker opens.
    enum SecondBackoff: Sendable, CustomTestStringConvertible {
        /// Granted, not begun yet: the observers are still being told of the failed attempt.
        case granted
        case underWay

        var testDescription: String { self == .granted ? "granted, not begun" : "under way" }
    }

    /// Holds the observers' report of an attempt 2 to be retried until the test lets it go on.
    final class SecondAttemptPause: AttemptObserver {
        let reached = Gate()
        let goOn = Gate()

        func attemptDidFinish(_ outcome: AttemptOutcome) async {
            guard outcome.attempt.number == 2, case .retry = outcome.decision else { return }
            await reached.open()
            await goOn.wait()
        }
    }

    @Test(
        "A request's second backoff ends at once when the breaker opens, as its first would",
        arguments: [SecondBackoff.granted, .underWay])
    func secondBackoffEndsWhenTheBreakerOpens(opensWhen: SecondBackoff) async throws {
        let breaker = CircuitBreaker(configuration: .init(tripCondition: .consecutiveFailures(3)), clock: clock)
        let transport = ScriptedTransport { _, _ in .status(503) }
        // Retries after 1 s, then after 2 s.
        let retrier = Retrier { request, _ in
            request.retryCount < 2 ? .retryWithDelay(.seconds(request.retryCount + 1)) : .doNotRetry
        }
        let pause = SecondAttemptPause()
        let session = Session(
            transport: transport, adapters: [breaker], retriers: [retrier],
            observers: opensWhen == .granted ? [pause] : [], clock: clock)
        let ended = Locked(false)
        let waiting = Task {
            defer { ended.withLock { $0 = true } }
            return try await session.send(request())
        }
        try await waitForSleep(of: .seconds(1), on: clock)
        clock.advance(by: .seconds(1))
        // The first retry was sent and failed, and the second is granted: its backoff is about to begin, or under way.
        switch opensWhen {
        case .granted: await pause.reached.wait()
        case .underWay: try await waitForSleep(of: .seconds(2), on: clock)
        }

        // A third failure in a row trips the breaker: the second backoff ends, and nothing more is sent even when its
        // time comes.
        _ = try? await session.send(request())
        #expect(breaker.state == .open)
        await pause.goOn.open()
        // The request ends without sleeping its backoff; had it begun to sleep, moving the clock would wake it.
        try await waitWhile { !ended.withLock { $0 } && !clock.sleeps.contains(.seconds(2)) }
        clock.advance(by: .seconds(2))
        let error = try await #require(throws: ReboundError.self) { try await waiting.value }

        #expect(error.circuitBreakerOpenError?.state == .open)
        #expect(error.attempts.count == 2)
        #expect(transport.requestCount == 3)
        #expect(breaker.permitsInFlight == 0)
        #expect(breaker.backoffWaitsKept == 0)
    }

    @Test("A breaker that opens ends nothing of a retry that went on to another host's breaker")
    func anOpeningEndsNothingOfARetryToAnotherHost() async throws {
        let breakers = registry(trippingAfter: 2)
        // Every request fails, but the fallback's second attempt.
        let transport = ScriptedTransport { request, _ in
            request.url?.host == "fallback.example.com" && request.value(forHTTPHeaderField: "X-Attempt") == "3"
                ? .status(200) : .status(503)
        }
        let attempt = Adapter.modifying { request, context in
            request.setValue("\(context.attempt)", forHTTPHeaderField: "X-Attempt")
        }
        // The first retry goes to the fallback host after 1 s, the second after 2 s.
        let retrier = Retrier { request, _ in
            switch request.retryCount {
            case 0: .retryWithRequest(fallback, delay: .seconds(1))
            case 1: .retryWithDelay(.seconds(2))
            default: .doNotRetry
            }
        }
        let session = Session(transport: transport, adapters: [attempt, breakers], retriers: [retrier], clock: clock)
        let plain = Session(transport: transport, adapters: [breakers], clock: clock)
        let waiting = Task { try await session.send(request()) }
        try await waitForSleep(of: .seconds(1), on: clock)
        clock.advance(by: .seconds(1))
        try await waitForSleep(of: .seconds(2), on: clock)

        // The first host's breaker opens while the request waits to retry the fallback host, whose breaker is closed.
        _ = try? await plain.send(request())
        #expect(breakers.breaker(for: "api.example.com").state == .open)
        #expect(breakers.breaker(for: "fallback.example.com").state == .closed)
        clock.advance(by: .seconds(2))

        #expect(try await waiting.value.statusCode == 200)
        #expect(transport.requestCount == 4)
        #expect(breakers.breaker(for: "api.example.com").backoffWaitsKept == 0)
    }

    @Test("The failure that opens a host's breaker does not stop its retry to a fallback host, whose breaker admits it")
    func anOpenHostDoesNotStopItsFallback() async throws {
        let breakers = registry(trippingAfter: 1)
        let transport = ScriptedTransport { request, _ in
            request.url?.host == "fallback.example.com" ? .status(200) : .status(503)
        }
        let toFallback = Retrier { _, _ in .retryWithRequest(fallback, delay: .seconds(1)) }
        let session = Session(transport: transport, adapters: [breakers], retriers: [toFallback], clock: clock)
        let waiting = Task { try await session.send(request()) }
        try await waitForSleep(of: .seconds(1), on: clock)
        #expect(breakers.breaker(for: "api.example.com").state == .open)
        clock.advance(by: .seconds(1))

        let response = try await waiting.value
        #expect(response.statusCode == 200)
        #expect(response.attempts.map(\.request?.url?.host) == ["api.example.com", "fallback.example.com"])
        #expect(breakers.breaker(for: "api.example.com").backoffWaitsKept == 0)
        #expect(breakers.breaker(for: "fallback.example.com").backoffWaitsKept == 0)
    }

    @Test(
        "A retry to a fallback host whose breaker is open is refused at once, and one whose breaker opens meanwhile ends",
        arguments: [false, true])
    func anOpenFallbackRefusesTheRetryToIt(opensDuringTheBackoff: Bool) async throws {
        let breakers = registry(trippingAfter: 1)
        let transport = ScriptedTransport { _, _ in .status(503) }
        let toFallback = Retrier { request, _ in
            request.retryCount == 0 ? .retryWithRequest(fallback, delay: .seconds(1)) : .doNotRetry
        }
        let session = Session(transport: transport, adapters: [breakers], retriers: [toFallback], clock: clock)
        let plain = Session(transport: transport, adapters: [breakers], clock: clock)
        if !opensDuringTheBackoff { _ = try? await plain.send(fallback) }
        let waiting = Task { try await session.send(request()) }
        if opensDuringTheBackoff {
            try await waitForSleep(of: .seconds(1), on: clock)
            _ = try? await plain.send(fallback)
        }

        // Nothing more is sent, and the clock never moves: the request ends without sleeping its backoff out.
        let error = try await #require(throws: ReboundError.self) { try await waiting.value }
        #expect(error.circuitBreakerOpenError?.key == "fallback.example.com")
        #expect(error.attempts.count == 1)
        #expect(transport.requestCount == 2)
        #expect(clock.now.offset == .zero)
        #expect(clock.sleeps == (opensDuringTheBackoff ? [.seconds(1)] : []))
        #expect(breakers.breaker(for: "fallback.example.com").backoffWaitsKept == 0)
    }

    @Test("A breaker given only as a gate forgets the waits of the retries it granted when their requests end")
    func aGateOnlyBreakerForgetsItsWaits() async throws {
        let admitting = CircuitBreaker(configuration: .init(tripCondition: .consecutiveFailures(Int.max)), clock: clock)
        let gate = CircuitBreaker(clock: clock)
        let transport = ScriptedTransport([.status(503), .status(200)])
        let session = Session(
            transport: transport, adapters: [admitting], retriers: [RetryPolicy(backoff: .constant(.seconds(1)))],
            gates: [gate], clock: clock)
        let waiting = Task { try await session.send(request()) }
        try await waitForSleep(of: .seconds(1), on: clock)
        #expect(gate.backoffWaitsKept == 1)
        clock.advance(by: .seconds(1))

        #expect(try await waiting.value.statusCode == 200)
        #expect(gate.backoffWaitsKept == 0)
        #expect(admitting.backoffWaitsKept == 0)
    }

    @Test("A backoff a breaker granted that ends at once still wakes its request, also among many at once")
    func backoffThatEndsAtOnceWakesItsRequest() async throws {
        // The sleep ends as soon as it is asked, so the task that sleeps it finishes at once, racing the request that
        // started it. (`BackoffWait` stores the wait before the sleeping task starts: stored after, the task's
        // wake-up could find nothing to wake. This test holds that path to its result, and would hang if a wake-up
        // were lost.)
        let breaker = CircuitBreaker(configuration: .init(tripCondition: .consecutiveFailures(Int.max)), clock: clock)
        // Each request's first attempt fails and its retry succeeds.
        let transport = ScriptedTransport { request, _ in
            request.value(forHTTPHeaderField: "X-Attempt") == "1" ? .status(503) : .status(200)
        }
        let attempt = Adapter.modifying { request, context in
            request.setValue("\(context.attempt)", forHTTPHeaderField: "X-Attempt")
        }
        let session = Session(
            transport: transport, adapters: [attempt, breaker],
            retriers: [RetryPolicy(backoff: .constant(.seconds(1)))], clock: SleepEndsAtOnceClock())

        let succeeded = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<1_000 { group.addTask { (try? await session.send(request())) != nil } }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }

        // Every request ended (the time limit would say otherwise), each after its one retry.
        #expect(succeeded == 1_000)
        #expect(transport.requestCount == 2_000)
        #expect(breaker.backoffWaitsKept == 0)
        #expect(breaker.permitsInFlight == 0)
    }

    @Test("Many requests through an outage: none sleeps a backoff that ends in a breaker refusal")
    func noBackoffEndsInARefusal() async throws {
        let registry = CircuitBreakerRegistry(clock: clock)
        let budget = RetryBudget(ratio: .default, clock: clock)
        let transport = ScriptedTransport { _, _ in .status(503) }
        let session = Session(
            transport: transport, adapters: [registry, budget],
            retriers: [RetryPolicy(backoff: .constant(.seconds(1)))], clock: clock)

        // 200 requests at once into a host that fails everything; no time passes.
        let tasks = (0..<200).map { _ in Task { try await session.send(request()) } }
        var errors: [ReboundError] = []
        for task in tasks {
            errors.append(try await #require(throws: ReboundError.self) { try await task.value })
        }

        // Every request ended without the clock moving: no wait was slept to its end, and no attempt after a backoff
        // was refused by the breaker.
        for error in errors {
            for (attempt, next) in zip(error.attempts, error.attempts.dropFirst()) where attempt.retryDelay != nil {
                if case .circuitOpen = next.failure { Issue.record("a backoff ended in a refusal: \(error)") }
            }
        }
        #expect(errors.contains { $0.circuitBreakerOpenError != nil })
        #expect(registry.breaker(for: "api.example.com").state == .open)
        #expect(registry.breaker(for: "api.example.com").backoffWaitsKept == 0)
        #expect(budget.requestsWithGrants == 0)
    }

    @Test("Reading the state changes nothing: an open breaker past its time reads half-open and moves on admission")
    func readingIsPure() async throws {
        let transitions = Locked<[String]>([])
        let breaker = CircuitBreaker(
            configuration: .init(tripCondition: .consecutiveFailures(1), openDuration: .seconds(1)), clock: clock
        ) { transition in transitions.withLock { $0.append("\(transition.from)→\(transition.to)") } }
        let session = Session(
            transport: ScriptedTransport([.status(503), .status(200)]), adapters: [breaker], clock: clock)
        _ = try? await session.send(request())
        clock.advance(by: .seconds(2))

        for _ in 0..<100 { #expect(breaker.state == .halfOpen) }
        #expect(transitions.withLock { $0 } == ["closed→open"], "a read told a transition")
        _ = try await session.send(request())
        #expect(transitions.withLock { $0 } == ["closed→open", "open→half-open", "half-open→closed"])
    }

    @Test("A trial that never reports gives its place up after the trial timeout")
    func trialPermitsExpire() async throws {
        let breaker = CircuitBreaker(
            configuration: .init(
                tripCondition: .consecutiveFailures(1), openDuration: .seconds(1), trialTimeout: .seconds(10)),
            clock: clock)
        let trips = Session(transport: ScriptedTransport([.status(503)]), adapters: [breaker], clock: clock)
        _ = try? await trips.send(request())
        clock.advance(by: .seconds(1))

        // The trial's request hangs and never reports (as one whose report a wrapper dropped would).
        let lost = Session(transport: ScriptedTransport([.hang]), adapters: [breaker], clock: clock)
        let hung = Task { try await lost.send(request()) }
        try await waitUntil { breaker.permitsInFlight == 1 }
        let refused = Session(transport: ScriptedTransport([.status(200)]), adapters: [breaker], clock: clock)
        let error = try await #require(throws: ReboundError.self) { try await refused.send(request()) }
        #expect(error.circuitBreakerOpenError?.state == .halfOpen)

        clock.advance(by: .seconds(10))
        let response = try await refused.send(request())
        #expect(response.statusCode == 200)
        #expect(breaker.state == .closed)
        hung.cancel()
        _ = await hung.result
        #expect(breaker.permitsInFlight == 0)
    }

    @Test(
        "200 concurrent callers at a half-open breaker: exactly the trials reach the server, then it closes or reopens",
        arguments: [(1, true), (3, true), (3, false)])
    func halfOpenStorm(trials: Int, trialsSucceed: Bool) async throws {
        let (adapter, breaker) = breaker(throughRegistry: false, trials: trials)
        let gate = Gate()
        let transport = ScriptedTransport { _, number in
            if number == 1 { return .status(503) }
            // Every trial waits until all 200 callers have been answered or refused.
            await gate.wait()
            return .status(trialsSucceed ? 200 : 503)
        }
        let session = Session(transport: transport, adapters: [adapter], clock: clock)
        _ = try? await session.send(request())
        clock.advance(by: .seconds(30))

        let results = Locked<(ok: Int, refused: Int, failed: Int)>((0, 0, 0))
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<200 {
                group.addTask {
                    do {
                        _ = try await session.send(request())
                        results.withLock { $0.ok += 1 }
                    } catch let error as ReboundError where error.circuitBreakerOpenError != nil {
                        results.withLock { $0.refused += 1 }
                    } catch {
                        results.withLock { $0.failed += 1 }
                    }
                }
            }
            // Wait until every caller other than the trials has been refused, then let the trials answer.
            try? await waitUntil { results.withLock { $0.refused } == 200 - trials }
            await gate.open()
        }
        let counted = results.withLock { $0 }
        #expect(transport.requestCount == 1 + trials)
        #expect(counted.refused == 200 - trials)
        #expect(trialsSucceed ? counted.ok == trials : counted.failed == trials)
        #expect(breaker().state == (trialsSucceed ? .closed : .open))
        #expect(breaker().permitsInFlight == 0)
    }
}

/// Yields until `condition` holds.
private func waitUntil(_ condition: @Sendable () -> Bool) async throws {
    while !condition() {
        try Task.checkCancellation()
        await Task.yield()
    }
}

/// A clock whose sleeps end as soon as they are asked, without suspending, unless the task is cancelled.
private struct SleepEndsAtOnceClock: Clock {
    var now: ContinuousClock.Instant { ContinuousClock.now }
    var minimumResolution: Duration { .zero }
    func sleep(until deadline: ContinuousClock.Instant, tolerance: Duration?) async throws {
        try Task.checkCancellation()
    }
}
