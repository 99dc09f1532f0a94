import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Where a request of the cancellation sweep cancels itself: a stage and the attempt it happens in.
private struct CancelPoint: Sendable {
    enum Stage: CaseIterable {
        /// Never: the request runs to its end.
        case never
        /// In an adapter after the breaker, the budget and the authenticator admitted the attempt.
        case adapting
        /// While the transport sends.
        case sending
        /// While the retriers decide.
        case deciding
        /// In the backoff sleep after the attempt.
        case backingOff
    }

    let stage: Stage
    let attempt: Int
    /// The status each attempt gets, in order (200 once they run out).
    let statuses: [Int]

    @TaskLocal static var current = CancelPoint(stage: .never, attempt: 0, statuses: [])

    /// Cancels the current task if this is the point.
    static func cancelIf(_ stage: Stage, attempt: Int) {
        guard current.stage == stage, current.attempt == attempt else { return }
        withUnsafeCurrentTask { $0?.cancel() }
    }
}

/// A clock whose sleeps end at once, unless the request cancels itself in its backoff.
private struct SweepClock: Clock {
    let base = FastForwardClock()
    var now: TestInstant { base.now }
    var minimumResolution: Duration { .zero }

    func sleep(until deadline: TestInstant, tolerance: Duration?) async throws {
        if CancelPoint.current.stage == .backingOff { withUnsafeCurrentTask { $0?.cancel() } }
        try await base.sleep(until: deadline, tolerance: tolerance)
    }
}

@Suite("How requests end", .timeLimit(.minutes(5)))
struct RequestOutcomeTests {
    @Test func aDecisionsNameLeavesOutItsDelayAndItsDescriptionSaysIt() {
        let decisions: [AttemptDecision] = [.succeeded, .retry(after: .milliseconds(500)), .failed, .cancelled]
        #expect(decisions.map(\.name) == ["succeeded", "retry", "failed", "cancelled"])
        #expect(decisions.map(\.description) == ["succeeded", "retry in 500 ms", "failed", "cancelled"])
    }

    @Test func everyPathEndsTheRequestOnceWithItsOutcome() async throws {
        let observer = RecordingObserver()
        let failing = Adapter { request, context in
            if context.label == "throws" { throw TestError("adapter") }
            return request
        }
        let session = Session(
            transport: ScriptedTransport([.status(200), .status(503), .status(200), .status(404), .status(404)]),
            adapters: [failing], retriers: [retryAnything(limit: 1)], observers: [observer], clock: FastForwardClock())

        _ = try await session.send(request())
        _ = try await session.send(request())
        _ = try? await session.send(request(), label: "throws")
        _ = try? await session.send(request(), validator: .acceptableStatusCodes(200..<300), deadline: .seconds(-1))
        _ = try? await session.send(request(), interceptor: Interceptor(retriers: [Retrier { _, _ in .doNotRetry }]))

        // The deadline's attempt is recorded as timed out without reaching the transport.
        #expect(
            observer.ends == [
                "succeeded after 1", "succeeded after 2", "failed after 2", "failed after 1", "failed after 2",
            ])
    }

    @Test func aRequestCancelledInItsBackoffEndsAsCancelledAndIsLogged() async throws {
        let clock = ManualClock()
        let observer = RecordingObserver()
        let lines = Locked<[String]>([])
        let budget = RetryBudget()
        let logger = LoggingRetrier(minimumLevel: .debug) { event in lines.withLock { $0.append(event.message) } }
        let session = Session(
            transport: ScriptedTransport([.status(503)]),
            interceptor: Interceptor(
                adapters: [budget], retriers: [retryAnything(limit: 3, delay: .seconds(5))],
                interceptors: [logger], observers: [observer]),
            clock: clock)

        let task = Task { try await session.send(request()) }
        try await clock.waitForSleepers(1)
        task.cancel()

        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(observer.lines == ["#1 503 retry 5.0 seconds"])
        #expect(observer.ends == ["cancelled after 1"])
        #expect(
            lines.withLock { $0.last?.hasSuffix("cancelled while waiting to retry after attempt 1 (0 ms)") } == true)
        #expect(budget.requestsWithGrants == 0)
    }

    @Test func aRequestCancelledBeforeItsFirstAttemptEndsWithNoAttempts() async throws {
        let observer = RecordingObserver()
        let session = Session(
            transport: ScriptedTransport([.status(200)]), observers: [observer], clock: FastForwardClock())

        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await session.send(request())
        }

        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(observer.ends == ["cancelled after 0"])
        #expect(observer.lines.isEmpty)
    }

    /// 10,000 requests, 50 at a time, through a breaker registry, a budget, an authenticator and a retry policy; each
    /// cancels itself at a point drawn from a seeded generator (or runs to its end), and every attempt's status is
    /// drawn too. Afterwards each request has ended exactly once and no part keeps anything for any of them.
    @Test func tenThousandRequestsCancelledAtRandomPointsLeaveNothingBehind() async throws {
        var random = SplitMix64(seed: 11)
        let plans = (0..<10_000).map { _ in
            CancelPoint(
                stage: CancelPoint.Stage.allCases.randomElement(using: &random)!,
                attempt: Int.random(in: 1...3, using: &random),
                statuses: (0..<3).map { _ in [200, 401, 503, 503, 500].randomElement(using: &random)! })
        }
        let breakerClock = ManualClock()
        let breakers = CircuitBreakerRegistry(
            configuration: .init(openDuration: .seconds(1), halfOpenTrialCalls: 2), clock: breakerClock)
        let budget = RetryBudget(configuration: .init(initialTokens: 200, maximumTokens: 200))
        let auth = AuthenticationInterceptor(authenticator: TokenAuthenticator(), credential: Token(value: 0))
        let observer = RecordingObserver()
        let marker = Adapter.modifying { request, context in
            request.setValue("\(context.attempt)", forHTTPHeaderField: "X-Attempt")
            CancelPoint.cancelIf(.adapting, attempt: context.attempt)
        }
        let transport = ScriptedTransport { request, _ in
            let attempt = Int(request.value(forHTTPHeaderField: "X-Attempt") ?? "") ?? 1
            CancelPoint.cancelIf(.sending, attempt: attempt)
            try Task.checkCancellation()
            let statuses = CancelPoint.current.statuses
            return .status(attempt <= statuses.count ? statuses[attempt - 1] : 200)
        }
        let decider = Retrier { request, _ in
            CancelPoint.cancelIf(.deciding, attempt: request.attempts.count)
            return .doNotRetry
        }
        let session = Session(
            transport: transport,
            interceptor: Interceptor(
                adapters: [breakers, budget], retriers: [decider, RetryPolicy()], interceptors: [auth],
                observers: [observer]),
            clock: SweepClock())

        var outcomes: [String: Int] = [:]
        for batch in stride(from: 0, to: plans.count, by: 50) {
            let ended = await withTaskGroup(of: String.self) { group in
                for plan in plans[batch..<batch + 50] {
                    group.addTask {
                        await CancelPoint.$current.withValue(plan) {
                            do {
                                _ = try await session.send(request(), interceptor: Interceptor(adapters: [marker]))
                                return "response"
                            } catch is CancellationError {
                                return plan.stage == .never
                                    ? "cancelled without a cancel point" : "cancelled \(plan.stage)"
                            } catch is ReboundError {
                                return "error"
                            } catch {
                                return "unexpected \(error)"
                            }
                        }
                    }
                }
                return await group.reduce(into: [String]()) { $0.append($1) }
            }
            for outcome in ended { outcomes[outcome, default: 0] += 1 }
            breakerClock.advance(by: .seconds(1))
        }

        let stages = CancelPoint.Stage.allCases.dropFirst().map { "cancelled \($0)" }
        #expect(Set(outcomes.keys) == Set(["response", "error"] + stages), "\(outcomes)")
        #expect(outcomes.values.reduce(0, +) == 10_000)
        #expect(observer.ends.count == 10_000)
        for breaker in breakers.breakers.values { #expect(breaker.permitsInFlight == 0) }
        #expect(budget.requestsWithGrants == 0)
        #expect(auth.pendingRefresh.waiters == 0)
        #expect(auth.pendingRefresh.refreshing == false)
    }
}
