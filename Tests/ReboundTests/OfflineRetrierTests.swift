import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("OfflineRetrier", .timeLimit(.minutes(5)))
struct OfflineRetrierTests {
    let clock = ManualClock()
    let network = ManualConnectivityMonitor(isConnected: false)

    private func session(
        _ transport: ScriptedTransport, retriers: [any RequestRetrier] = [], deadline: Duration? = nil,
        adapters: [any RequestAdapter] = []
    ) -> Session {
        Session(
            transport: transport, adapters: adapters,
            retriers: [OfflineRetrier(monitor: network, clock: clock)] + retriers, deadline: deadline, clock: clock)
    }

    @Test func anOfflineRequestWaitsForTheNetworkThenIsRetriedAtOnce() async throws {
        let transport = ScriptedTransport([.urlError(.notConnectedToInternet), .status(200)], clock: clock)
        let session = session(transport)

        let task = Task { try await session.send(request()) }
        try await network.waitForWaits(1)
        clock.advance(by: .seconds(3))
        #expect(transport.requestCount == 1)  // three seconds offline: still waiting, nothing sent
        network.setConnected(true)
        let response = try await task.value

        #expect(response.statusCode == 200)
        #expect(transport.requestCount == 2)
        #expect(response.attempts.first?.retryDelay == .zero)
        #expect(network.waiterCount == 0)
    }

    @Test func aNetworkThatDoesNotComeBackLeavesTheDecisionToTheNextRetrier() async throws {
        let transport = ScriptedTransport([.urlError(.notConnectedToInternet), .status(200)], clock: clock)
        let session = session(transport, retriers: [retryAnything(limit: 1, delay: .seconds(1))])

        let task = Task { try await session.send(request()) }
        try await network.waitForWaits(1)
        try await waitForSleep(of: .seconds(5), on: clock)  // the wait's time limit
        clock.advance(by: .seconds(5))  // the wait's end: the next retrier retries after its own second
        try await waitForSleep(of: .seconds(1), on: clock)
        clock.advance(by: .seconds(1))
        _ = try await task.value

        #expect(transport.requestCount == 2)
        #expect(clock.now.offset == .seconds(6))
        #expect(network.waiterCount == 0)
    }

    @Test func aloneItEndsTheRequestWithTheOfflineErrorAfterTheWait() async throws {
        let transport = ScriptedTransport([.urlError(.notConnectedToInternet), .status(200)], clock: clock)
        let session = session(transport)

        let task = Task { try await session.send(request()) }
        try await network.waitForWaits(1)
        try await waitForSleep(of: .seconds(5), on: clock)  // the wait's time limit
        clock.advance(by: .seconds(5))
        let error = try await #require(throws: ReboundError.self) { try await task.value }

        #expect(error.urlError?.code == .notConnectedToInternet)
        #expect(transport.requestCount == 1)
    }

    @Test func aPOSTIsRetriedToo() async throws {
        let transport = ScriptedTransport([.urlError(.notConnectedToInternet), .status(201)], clock: clock)
        network.setConnected(true)

        let response = try await session(transport).send(request(.post))

        #expect(response.statusCode == 201)
        #expect(transport.requestCount == 2)
    }

    @Test func aPOSTIsNotRetriedAfterAnOfflineCodeOfYourOwnThatMayFollowASend() async throws {
        network.setConnected(true)
        let transport = ScriptedTransport(
            [.urlError(.networkConnectionLost), .urlError(.networkConnectionLost), .status(200)], clock: clock)
        let retrier = OfflineRetrier(
            monitor: network, offlineURLErrorCodes: [.notConnectedToInternet, .networkConnectionLost], clock: clock)
        let session = Session(transport: transport, retriers: [retrier], clock: clock)

        await #expect(throws: ReboundError.self) { try await session.send(request(.post)) }
        #expect(transport.requestCount == 1)
        _ = try await session.send(request(.get))  // a GET may be repeated: retried
        #expect(transport.requestCount == 3)
    }

    @Test(arguments: [URLError.Code.timedOut, .cannotConnectToHost, .networkConnectionLost])
    func otherFailuresAreLeftToTheNextRetrierWithoutWaiting(code: URLError.Code) async throws {
        let transport = ScriptedTransport([.urlError(code), .status(200)], clock: clock)

        let error = try await #require(throws: ReboundError.self) { try await session(transport).send(request()) }

        #expect(error.urlError?.code == code)
        #expect(transport.requestCount == 1)
        #expect(network.waiterCount == 0)
    }

    @Test func aRequestIsRetriedAtMostRetryLimitTimes() async throws {
        network.setConnected(true)
        let transport = ScriptedTransport(Array(repeating: .urlError(.notConnectedToInternet), count: 5), clock: clock)

        _ = try? await session(transport).send(request())

        #expect(transport.requestCount == 3)
    }

    @Test func manyWaitingRequestsAllResumeWhenTheNetworkComesBack() async throws {
        let transport = ScriptedTransport(clock: clock) { _, number in
            number <= 100 ? .urlError(.notConnectedToInternet) : .status(200)
        }
        let session = session(transport)

        let tasks = (0..<100).map { _ in Task { try await session.send(request()) } }
        try await network.waitForWaits(100)
        network.setConnected(true)
        for task in tasks { #expect(try await task.value.statusCode == 200) }

        #expect(transport.requestCount == 200)
        #expect(network.waiterCount == 0)
    }

    @Test func theDeadlineEndsTheWaitKeepingTheOfflineFailure() async throws {
        let transport = ScriptedTransport([.urlError(.notConnectedToInternet), .status(200)], clock: clock)
        let session = session(transport, deadline: .seconds(2))

        let task = Task { try await session.send(request()) }
        try await network.waitForWaits(1)
        clock.advance(by: .seconds(2))
        let error = try await #require(throws: ReboundError.self) { try await task.value }

        guard case .deadlineExceeded(.seconds(2), .transportFailed(let failure as URLError)) = error.reason else {
            Issue.record("reason: \(error.reason)")
            return
        }
        #expect(failure.code == .notConnectedToInternet)
        #expect(transport.requestCount == 1)
    }

    @Test func cancellingAWaitingRequestEndsItAtOnceAndLeavesNoWaiter() async throws {
        let transport = ScriptedTransport([.urlError(.notConnectedToInternet), .status(200)], clock: clock)
        let session = session(transport)

        let task = Task { try await session.send(request()) }
        try await network.waitForWaits(1)
        task.cancel()

        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(network.waiterCount == 0)
        #expect(transport.requestCount == 1)
    }

    @Test func aRetryAfterTheDevicesOwnNetworkFailedCostsTheBudgetNothing() async throws {
        // One retry's worth of tokens.
        let budget = RetryBudget(configuration: .init(initialTokens: 5))
        network.setConnected(true)
        let offline = ScriptedTransport(
            [.urlError(.notConnectedToInternet), .urlError(.notConnectedToInternet), .status(200)], clock: clock)

        let response = try await session(offline, adapters: [budget]).send(request())

        #expect(response.statusCode == 200)
        #expect(offline.requestCount == 3)
        // The host's failure still costs: the budget's five tokens pay for one retry after a refused connection, and
        // refuse the next.
        let refused = ScriptedTransport(
            [.urlError(.cannotConnectToHost), .urlError(.cannotConnectToHost), .status(200)], clock: clock)
        let error = try await #require(throws: ReboundError.self) {
            try await session(refused, retriers: [retryAnything(limit: 2)], adapters: [budget]).send(request())
        }
        guard case .retryAborted(is RetryBudgetExhausted, _) = error.reason else {
            Issue.record("reason: \(error.reason)")
            return
        }
        #expect(refused.requestCount == 2)
    }

    @Test func insideThePresetEveryRequestThatWaitedResumesWhenTheNetworkComesBack() async throws {
        let waiting = 100
        let resilience = Resilience(clock: clock, random: .seeded(7), deadline: .seconds(30))
        // Every request's first attempt finds the device offline; every one after it succeeds.
        let transport = ScriptedTransport(clock: clock) { _, number in
            number <= waiting ? .urlError(.notConnectedToInternet) : .status(200)
        }
        let session = Session(
            transport: transport, resilience: resilience, retriers: [OfflineRetrier(monitor: network, clock: clock)],
            clock: clock)

        let tasks = (0..<waiting).map { _ in Task { try await session.send(request()) } }
        try await network.waitForWaits(waiting)
        network.setConnected(true)
        var succeeded = 0
        for task in tasks where (try? await task.value)?.statusCode == 200 { succeeded += 1 }
        // A fresh request goes through at once: the breaker, the throttle and the budget counted nothing offline.
        let fresh = try await session.send(request())

        #expect(succeeded == waiting)
        #expect(fresh.statusCode == 200)
        #expect(transport.requestCount == 2 * waiting + 1)
    }

    @Test(
        "A request whose trial found the device offline takes the half-open breaker's trial again when the network comes back",
        arguments: ["breaker", "registry"])
    func aTrialThatFoundTheDeviceOfflineIsTriedAgain(part: String) async throws {
        let configuration = CircuitBreaker.Configuration(
            tripCondition: .consecutiveFailures(1), breakDuration: .constant(.seconds(5)))
        let single = CircuitBreaker(configuration: configuration, clock: clock)
        let registry = CircuitBreakerRegistry(configuration: configuration, clock: clock)
        // A 503 opens the breaker; once its break is over, the next request's trial finds the device offline, and its
        // retry, once the network is back, succeeds.
        let transport = ScriptedTransport(
            [.status(503), .urlError(.notConnectedToInternet), .status(200)], clock: clock)
        let session = session(transport, adapters: [part == "breaker" ? single : registry])
        network.setConnected(true)
        _ = try? await session.send(request())
        let breaker = part == "breaker" ? single : try #require(registry.breakers.values.first)
        #expect(breaker.state == .open)
        clock.advance(by: .seconds(5))
        network.setConnected(false)

        let task = Task { try await session.send(request()) }
        try await network.waitForWaits(1)
        network.setConnected(true)
        let response = try await task.value

        #expect(response.statusCode == 200)
        #expect(transport.requestCount == 3)
        #expect(breaker.state == .closed, "the retry was the trial, and its success closed the breaker")
    }

    @Test("A retry after a backoff takes the half-open breaker's trial as it is sent; its success closes the breaker")
    func aTrialRetriedAfterABackoffIsTheTrialAgain() async throws {
        let breaker = CircuitBreaker(
            configuration: .init(tripCondition: .consecutiveFailures(1), breakDuration: .constant(.seconds(5))),
            clock: clock)
        let transport = ScriptedTransport(
            [.status(503), .urlError(.notConnectedToInternet), .status(200)], clock: clock)
        _ = try? await Session(transport: transport, adapters: [breaker], clock: clock).send(request())
        clock.advance(by: .seconds(5))
        // The trial finds the device offline; the retry policy retries it after its backoff.
        let session = Session(transport: transport, adapters: [breaker], retriers: [RetryPolicy()], clock: clock)

        let task = Task { try await session.send(request()) }
        try await clock.waitForSleepers(1)
        #expect(breaker.state == .halfOpen)
        clock.advance(by: .seconds(1))
        let response = try await task.value

        #expect(response.attempts.map(\.statusCode) == [nil, 200])
        #expect(breaker.state == .closed, "the retry was the trial")
        #expect(breaker.permitsInFlight == 0)
    }

    @Test func invalidSettingsAreRejectedNamingThem() {
        #expect(
            throws: ConfigurationError(
                field: "OfflineRetrier.maximumWait", problem: "must be longer than zero, got 0.0 seconds")
        ) {
            try OfflineRetrier.validated(monitor: ManualConnectivityMonitor(), maximumWait: .zero)
        }
        #expect(throws: ConfigurationError(field: "OfflineRetrier.retryLimit", problem: "must be 0 or more, got -1")) {
            try OfflineRetrier.validated(monitor: ManualConnectivityMonitor(), retryLimit: -1)
        }
    }
}
