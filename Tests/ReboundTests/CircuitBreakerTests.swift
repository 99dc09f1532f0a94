import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A session whose only interceptor is `breaker` (plus `retriers`), on a scripted transport and a manual clock.
private func session(
    _ breaker: some RequestAdapter, transport: ScriptedTransport, clock: ManualClock,
    retriers: [any RequestRetrier] = []
) -> Session {
    Session(transport: transport, adapters: [breaker], retriers: retriers, clock: clock)
}

/// Sends `count` requests one after another, ignoring their errors.
private func send(_ count: Int, through session: Session) async {
    for _ in 0..<count { _ = try? await session.send(request()) }
}

/// The breaker error behind a failed send, if that is why it failed.
private func openError(_ session: Session) async -> CircuitBreakerOpenError? {
    do {
        _ = try await session.send(request())
        return nil
    } catch let error as ReboundError {
        return error.underlyingError as? CircuitBreakerOpenError
    } catch {
        return nil
    }
}

/// An observer that runs `record` when an attempt ends.
private struct StateRecorder: AttemptObserver {
    let record: @Sendable () -> Void

    func attemptDidFinish(_ outcome: AttemptOutcome) async { record() }
}

@Suite("CircuitBreaker", .timeLimit(.minutes(5)))
struct CircuitBreakerTests {
    let clock = ManualClock()

    // MARK: - Closed → open

    @Test func opensAfterFiveConsecutiveFailuresAndFailsFastWithoutTheNetwork() async throws {
        let transport = ScriptedTransport { _, _ in .status(503) }
        let breaker = CircuitBreaker(key: "api", configuration: .thirtySeconds, clock: clock)
        let session = session(breaker, transport: transport, clock: clock)

        await send(4, through: session)
        #expect(breaker.state == .closed)
        await send(1, through: session)
        #expect(breaker.state == .open)

        clock.advance(by: .seconds(10))
        let error = try #require(await openError(session))
        #expect(transport.requestCount == 5)
        #expect(error.key == "api")
        #expect(error.state == .open)
        #expect(error.retryAfter == .seconds(20))
        #expect("\(error)" == "circuit breaker for api is open; it lets a trial call through in 20 s")
    }

    /// The session has the breaker settle the attempts it admitted directly; listed in `observers:` as well (whose
    /// calls it ignores), it still counts each attempt once.
    @Test func aBreakerAlsoListedAsAnObserverCountsEachAttemptOnce() async throws {
        let transport = ScriptedTransport { _, _ in .status(503) }
        let breaker = CircuitBreaker(key: "api", configuration: .thirtySeconds, clock: clock)
        let session = Session(transport: transport, adapters: [breaker], observers: [breaker], clock: clock)

        await send(4, through: session)
        #expect(breaker.state == .closed)
        #expect(breaker.permitsInFlight == 0)
        await send(1, through: session)
        #expect(breaker.state == .open)
        #expect(transport.requestCount == 5)
    }

    /// An observer hears of an attempt after the breaker that admitted it counted it: the fifth failure's observer
    /// already reads the breaker open.
    @Test func observersHearOfAnAttemptAfterTheBreakerCountedIt() async throws {
        let transport = ScriptedTransport { _, _ in .status(503) }
        let breaker = CircuitBreaker(key: "api", configuration: .thirtySeconds, clock: clock)
        let states = Log()
        let observer = StateRecorder { states.append(breaker.state.description) }
        let session = Session(transport: transport, adapters: [breaker], observers: [observer], clock: clock)

        await send(5, through: session)

        #expect(states.all == ["closed", "closed", "closed", "closed", "open"])
    }

    @Test func anOpenBreakersRefusalIsItsOwnReasonAndNoRetrierIsAsked() async throws {
        let log = Log()
        let breaker = CircuitBreaker(
            configuration: .init(tripCondition: .consecutiveFailures(1), openDuration: .seconds(30)), clock: clock)
        let session = session(
            breaker, transport: ScriptedTransport([.status(503)]), clock: clock,
            retriers: [loggingRetrier("policy", log: log, answer: .doNotRetry)])
        _ = try? await session.send(request())

        let error = try await #require(throws: ReboundError.self) { try await session.send(request()) }

        guard case .circuitOpen(let open) = error.reason else {
            Issue.record("reason: \(error.reason)")
            return
        }
        #expect(open.state == .open)
        #expect(error.circuitBreakerOpenError?.retryAfter == .seconds(30))
        #expect(error.reason.isNonRetryable)
        #expect(log.all == ["retry policy #0"])
    }

    @Test func aSuccessStartsTheConsecutiveCountAgain() async throws {
        let transport = ScriptedTransport(
            Array(repeating: .status(500), count: 4) + [.status(200)] + Array(repeating: .status(500), count: 4))
        let breaker = CircuitBreaker(configuration: .thirtySeconds, clock: clock)

        await send(9, through: session(breaker, transport: transport, clock: clock))

        #expect(breaker.state == .closed)
    }

    @Test(arguments: [
        (400, CircuitBreaker.Verdict.success), (401, .success), (404, .success), (422, .success), (408, .failure),
        (429, .failure), (500, .failure), (503, .failure), (599, .failure), (200, .success),
    ])
    func countsTransportErrorsAnd5xx408And429AsFailures(status: Int, verdict: CircuitBreaker.Verdict) {
        let outcome = AttemptOutcome(
            originalRequest: request(),
            attempt: Attempt(
                number: 1, request: request(),
                response: HTTPURLResponse(url: exampleURL, statusCode: status, httpVersion: nil, headerFields: nil),
                failure: nil, duration: .zero),
            decision: .succeeded)
        #expect(CircuitBreaker.defaultVerdict(for: outcome) == verdict)
    }

    @Test func ignoresCancellationsAndAdapterFailuresAndCountsTransportErrors() {
        func outcome(_ failure: ReboundError.Reason?, decision: AttemptDecision) -> AttemptOutcome {
            AttemptOutcome(
                originalRequest: request(),
                attempt: Attempt(number: 1, request: nil, response: nil, failure: failure, duration: .zero),
                decision: decision)
        }
        #expect(CircuitBreaker.defaultVerdict(for: outcome(nil, decision: .cancelled)) == .ignored)
        #expect(
            CircuitBreaker.defaultVerdict(for: outcome(.adaptationFailed(error: TestError("a")), decision: .cancelled))
                == .ignored)
        #expect(
            CircuitBreaker.defaultVerdict(
                for: outcome(.transportFailed(error: URLError(.timedOut)), decision: .failed)) == .failure)
    }

    @Test(arguments: [
        (URLError.Code.notConnectedToInternet, CircuitBreaker.Verdict.ignored), (.dataNotAllowed, .ignored),
        (.internationalRoamingOff, .ignored), (.callIsActive, .ignored), (.cannotConnectToHost, .failure),
        (.cannotFindHost, .failure), (.dnsLookupFailed, .failure), (.networkConnectionLost, .failure),
    ])
    func theDevicesOwnNetworkIsNotTheHostsFailureButARefusedConnectionIs(
        code: URLError.Code, verdict: CircuitBreaker.Verdict
    )
        async throws
    {
        let failure = ReboundError.Reason.transportFailed(error: URLError(code))
        let outcome = AttemptOutcome(
            originalRequest: request(),
            attempt: Attempt(number: 1, request: request(), response: nil, failure: failure, duration: .zero),
            decision: .failed)
        #expect(CircuitBreaker.defaultVerdict(for: outcome) == verdict)
        // Through a session: the breaker opens on the host's failures only, also with a classifier of the user's own
        // that calls every failure a failure: the device's network is never the host's.
        let everyFailure: @Sendable (AttemptOutcome) -> CircuitBreaker.Verdict = { _ in .failure }
        for classify in [nil, everyFailure] {
            let breaker = CircuitBreaker(
                configuration: .init(
                    tripCondition: .consecutiveFailures(1), openDuration: .seconds(30), classify: classify),
                clock: clock)
            let session = session(breaker, transport: ScriptedTransport([.urlError(code)]), clock: clock)
            _ = try? await session.send(request())
            let expected: CircuitBreaker.State = verdict == .ignored ? .closed : .open
            #expect(breaker.state == expected)
        }
    }

    @Test func cancelledAttemptsDoNotCount() async throws {
        let transport = ScriptedTransport { _, _ in .hang }
        let breaker = CircuitBreaker(
            configuration: .init(tripCondition: .consecutiveFailures(1), openDuration: .seconds(30)), clock: clock)
        let session = session(breaker, transport: transport, clock: clock)

        for count in 1...3 {
            let task = Task { try await session.send(request()) }
            try await transport.waitForRequests(count)
            task.cancel()
            _ = try? await task.value
        }

        #expect(breaker.state == .closed)
    }

    @Test func theFailureThatTripsTheBreakerIsNotRetried() async throws {
        let transport = ScriptedTransport { _, _ in .status(503) }
        let breaker = CircuitBreaker(
            configuration: .init(tripCondition: .consecutiveFailures(2), openDuration: .seconds(30)), clock: clock)
        let session = session(breaker, transport: transport, clock: clock, retriers: [retryAnything(limit: 10)])

        let error = await #expect(throws: ReboundError.self) { try await session.send(request()) }

        // Two attempts tripped it; the retry of the second is refused at once, with the breaker's error beside the
        // failure, and nothing is attempted after it.
        #expect(transport.requestCount == 2)
        #expect(error?.attemptCount == 2)
        #expect(error?.underlyingError is CircuitBreakerOpenError)
        #expect(error?.statusCode == 503)
        clock.advance(by: .seconds(30))
        #expect(breaker.state == .halfOpen)
    }

    // MARK: - Open → half-open → closed or open

    @Test func aTrialSuccessAfterTheOpenDurationClosesIt() async throws {
        let transport = ScriptedTransport([.status(500), .status(200), .status(500)])
        let breaker = CircuitBreaker(
            configuration: .init(tripCondition: .consecutiveFailures(1), openDuration: .seconds(30)), clock: clock)
        let transitions = breaker.transitions()
        let session = session(breaker, transport: transport, clock: clock)

        await send(1, through: session)
        clock.advance(by: .seconds(29))
        #expect(await openError(session) != nil)
        clock.advance(by: .seconds(1))
        _ = try await session.send(request())
        #expect(breaker.state == .closed)
        await send(1, through: session)
        breaker.reset()

        var seen: [String] = []
        for await transition in transitions {
            seen.append("\(transition.from)→\(transition.to)")
            if seen.count == 5 { break }
        }
        #expect(seen == ["closed→open", "open→half-open", "half-open→closed", "closed→open", "open→closed"])
    }

    @Test func aTrialFailureOpensItAgainForTheFullDuration() async throws {
        let transport = ScriptedTransport { _, _ in .status(502) }
        let breaker = CircuitBreaker(
            configuration: .init(tripCondition: .consecutiveFailures(1), openDuration: .seconds(30)), clock: clock)
        let session = session(breaker, transport: transport, clock: clock)

        await send(1, through: session)
        clock.advance(by: .seconds(30))
        await send(1, through: session)

        #expect(breaker.state == .open)
        #expect(transport.requestCount == 2)
        #expect(await openError(session)?.retryAfter == .seconds(30))
    }

    @Test func halfOpenLetsOnlyTheTrialCallsThroughAtOnce() async throws {
        let transport = ScriptedTransport([.status(500), .hang, .hang, .status(200)])
        let configuration = CircuitBreaker.Configuration(
            tripCondition: .consecutiveFailures(1), halfOpenTrialCalls: 2)
        let breaker = CircuitBreaker(configuration: configuration, clock: clock)
        let session = session(breaker, transport: transport, clock: clock)
        await send(1, through: session)
        clock.advance(by: .seconds(30))

        let first = Task { try await session.send(request()) }
        let second = Task { try await session.send(request()) }
        try await transport.waitForRequests(3)
        let third = await openError(session)
        #expect(third?.state == .halfOpen)
        #expect(third?.retryAfter == nil)

        // A cancelled trial tells nothing: its place goes to the next request.
        first.cancel()
        _ = try? await first.value
        _ = try await session.send(request())
        #expect(breaker.state == .closed)
        second.cancel()
        #expect(transport.requestCount == 4)
    }

    @Test func twoHundredConcurrentRequestsWhileHalfOpenSendOneTrial() async throws {
        let transport = ScriptedTransport { _, _ in .status(503) }
        let breaker = CircuitBreaker(configuration: .thirtySeconds, clock: clock)
        let session = session(breaker, transport: transport, clock: clock, retriers: [retryAnything(limit: 3)])

        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<200 { group.addTask { _ = try? await session.send(request()) } }
        }
        let beforeHalfOpen = transport.requestCount
        #expect(breaker.state == .open)
        clock.advance(by: .seconds(30))
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<200 { group.addTask { _ = try? await session.send(request()) } }
        }

        #expect(transport.requestCount - beforeHalfOpen == 1)
        #expect(breaker.state == .open)
    }

    // MARK: - Failure rate

    @Test func opensWhenTheFailureRateOverACountWindowReachesTheThreshold() async throws {
        let configuration = CircuitBreaker.Configuration(
            tripCondition: .failureRate(0.5, window: .count(4), minimumCalls: 4))
        let breaker = CircuitBreaker(configuration: configuration, clock: clock)
        let transport = ScriptedTransport([
            .status(500), .status(500), .status(500),  // under the minimum number of calls
            .status(200), .status(200), .status(200), .status(500),  // window: 200 200 200 500 = 25%
            .status(500),  // window: 200 200 500 500 = 50%
        ])
        let session = session(breaker, transport: transport, clock: clock)

        await send(3, through: session)
        #expect(breaker.state == .closed)
        await send(4, through: session)
        #expect(breaker.state == .closed)
        await send(1, through: session)
        #expect(breaker.state == .open)
    }

    @Test func failuresLeaveATimeWindow() async throws {
        let configuration = CircuitBreaker.Configuration(
            tripCondition: .failureRate(0.5, window: .time(.seconds(10)), minimumCalls: 3))
        let breaker = CircuitBreaker(configuration: configuration, clock: clock)
        let session = session(breaker, transport: ScriptedTransport { _, _ in .status(500) }, clock: clock)

        await send(2, through: session)
        clock.advance(by: .seconds(11))
        await send(2, through: session)
        #expect(breaker.state == .closed)
        await send(1, through: session)
        #expect(breaker.state == .open)
    }

    // MARK: - Manual control

    @Test func forcedOpenFailsFastUntilResetAndForcedClosedNeverTrips() async throws {
        let transport = ScriptedTransport { _, _ in .status(500) }
        let breaker = CircuitBreaker(
            configuration: .init(tripCondition: .consecutiveFailures(1), openDuration: .seconds(30)), clock: clock)
        let session = session(breaker, transport: transport, clock: clock)

        breaker.forceOpen()
        clock.advance(by: .seconds(3_600))
        let error = await openError(session)
        #expect(error?.state == .forcedOpen && error?.retryAfter == nil)
        #expect(transport.requestCount == 0)

        breaker.forceClosed()
        await send(3, through: session)
        #expect(breaker.state == .forcedClosed)
        #expect(transport.requestCount == 3)

        breaker.reset()
        await send(1, through: session)
        #expect(breaker.state == .open)
    }

    @Test func tellsEveryTransitionToItsCallback() async throws {
        let log = Log()
        let breaker = CircuitBreaker(key: "k", configuration: .thirtySeconds, clock: clock) {
            log.append("\($0.key ?? "") \($0.from)→\($0.to)")
        }

        breaker.forceOpen()
        breaker.forceOpen()
        breaker.forceClosed()
        breaker.reset()

        #expect(log.all == ["k closed→forced open", "k forced open→forced closed", "k forced closed→closed"])
    }
}

@Suite("CircuitBreakerRegistry", .timeLimit(.minutes(5)))
struct CircuitBreakerRegistryTests {
    let clock = ManualClock()

    @Test func eachHostTripsItsOwnBreakerAndSessionsShareThem() async throws {
        let failing = URL(string: "https://down.example.com/a")!
        let healthy = URL(string: "https://up.example.com:8443/b")!
        let transport = ScriptedTransport { request, _ in
            request.url?.host == "down.example.com" ? .status(503) : .status(200)
        }
        let registry = CircuitBreakerRegistry(
            configuration: .init(tripCondition: .consecutiveFailures(2), openDuration: .seconds(30)), clock: clock)
        let first = Session(transport: transport, adapters: [registry], clock: clock)
        let second = Session(transport: transport, adapters: [registry], clock: clock)

        _ = try? await first.send(failing)
        _ = try? await second.send(failing)
        _ = try await first.send(healthy)

        let error = await #expect(throws: ReboundError.self) { try await second.send(failing) }
        #expect((error?.underlyingError as? CircuitBreakerOpenError)?.key == "down.example.com")
        #expect(registry.breaker(for: "down.example.com").state == .open)
        #expect(registry.breaker(for: "up.example.com:8443").state == .closed)
        #expect(Set(registry.breakers.keys) == ["down.example.com", "up.example.com:8443"])
        #expect(transport.requestCount == 3)

        registry.resetAll()
        #expect(registry.breaker(for: "down.example.com").state == .closed)
    }

    @Test func beforeAnAdapterThatMovesTheAttemptTheBreakerOfTheHostItIsSentToLetsItThroughAndCountsIt() async throws {
        let registry = CircuitBreakerRegistry(
            configuration: .init(tripCondition: .consecutiveFailures(1), openDuration: .seconds(30)), clock: clock)
        let moveToB = Adapter.modifying { request, _ in request.url = URL(string: "https://b.example.com/x")! }
        let transport = ScriptedTransport { _, _ in .status(503) }
        let session = Session(
            transport: transport, interceptor: Interceptor(adapters: [registry, moveToB]), clock: clock)

        _ = try? await session.send(URL(string: "https://a.example.com/x")!)

        // Counted by b's breaker, which opens; a's gave its permit back uncounted.
        #expect(transport.requests.first?.url?.host == "b.example.com")
        #expect(registry.breaker(for: "b.example.com").state == .open)
        #expect(registry.breaker(for: "a.example.com").state == .closed)

        // A request naming another host that goes to b is refused by b's open breaker, before it is sent.
        let error = await #expect(throws: ReboundError.self) {
            try await session.send(URL(string: "https://c.example.com/x")!)
        }
        #expect(error?.circuitBreakerOpenError?.key == "b.example.com")
        #expect(error?.stopReason == .circuitOpen)
        #expect(transport.requestCount == 1)
    }

    /// A registry and an adapter that sends every attempt to b, in either order, and a retrier that moves the request:
    /// the retry goes where the adapters send it, so the breaker of the host the failed attempt went to judges it.
    private func movedRetry(
        to target: String, tripsAfter failures: Int, registryFirst: Bool
    ) -> (CircuitBreakerRegistry, ScriptedTransport, Session) {
        let registry = CircuitBreakerRegistry(
            configuration: .init(tripCondition: .consecutiveFailures(failures), openDuration: .seconds(30)),
            clock: clock)
        let toB = Adapter.modifying { request, _ in request.url = URL(string: "https://b.example.com/x")! }
        let transport = ScriptedTransport { _, number in number == 1 ? .status(503) : .status(200) }
        let moved = {
            var moved = URLRequest(url: URL(string: target)!)
            moved.setValue("2", forHTTPHeaderField: "X-Try")
            return moved
        }()
        let mover = Retrier { request, _ in
            request.retryCount == 0 ? .retryWithRequest(moved, delay: .seconds(1)) : .doNotRetry
        }
        let session = Session(
            transport: transport,
            interceptor: Interceptor(adapters: registryFirst ? [registry, toB] : [toB, registry], retriers: [mover]),
            clock: clock)
        return (registry, transport, session)
    }

    @Test(
        "After an adapter that sends every attempt to b, a moved retry whose failure opened b's breaker is refused at once",
        arguments: ["https://a.example.com/x", "https://c.example.com/x"], [true, false])
    func aMovedRetryIsRefusedByTheOpenBreakerOfTheHostItGoesTo(target: String, registryFirst: Bool) async throws {
        let (registry, transport, session) = movedRetry(to: target, tripsAfter: 1, registryFirst: registryFirst)

        let error = await #expect(throws: ReboundError.self) {
            try await session.send(URL(string: "https://a.example.com/x")!)
        }

        // Refused by b's open breaker when the retry was asked for: no backoff slept, nothing more sent, and no
        // breaker made for a host no attempt goes to.
        #expect(error?.circuitBreakerOpenError?.key == "b.example.com")
        #expect(transport.requestCount == 1)
        #expect(clock.sleeps.isEmpty)
        #expect(Set(registry.breakers.keys).isSubset(of: ["a.example.com", "b.example.com"]))
    }

    @Test("After an adapter that sends every attempt to b, a retry moved to a host whose breaker is open still goes")
    func aMovedRetryIsNotJudgedByTheBreakerOfAHostItNeverGoesTo() async throws {
        // The adapter first: the registry sees each attempt where it goes (a registry before it would refuse the
        // retry's attempt under c, in `adapt`, before the adapter moves it).
        let (registry, transport, session) = movedRetry(
            to: "https://c.example.com/x", tripsAfter: 3, registryFirst: false)
        registry.breaker(for: "c.example.com").forceOpen()

        let waiting = Task { try await session.send(URL(string: "https://a.example.com/x")!) }
        try await waitForSleep(of: .seconds(1), on: clock)
        clock.advance(by: .seconds(1))

        #expect(try await waiting.value.statusCode == 200)
        #expect(transport.requests.map(\.url?.host) == ["b.example.com", "b.example.com"])
        #expect(transport.requests.last?.value(forHTTPHeaderField: "X-Try") == "2")
        #expect(registry.breaker(for: "b.example.com").permitsInFlight == 0)
    }

    /// Each request holds the permits its attempts were given, one per breaker and attempt, until the attempt is
    /// settled: two breakers in one chain, and retries, each count exactly the attempts they let through.
    @Test func twoBreakersInOneChainEachCountTheAttemptsTheyLetThrough() async throws {
        let first = CircuitBreaker(
            key: "first", configuration: .init(tripCondition: .consecutiveFailures(7), openDuration: .seconds(30)),
            clock: clock)
        let second = CircuitBreaker(
            key: "second", configuration: .init(tripCondition: .consecutiveFailures(5), openDuration: .seconds(30)),
            clock: clock)
        let transport = ScriptedTransport { _, _ in .status(503) }
        let session = Session(
            transport: transport, adapters: [first, second],
            retriers: [RetryPolicy(retryLimit: 1, backoff: .constant(.zero))], clock: clock)

        // Two attempts each: both breakers count both.
        await send(2, through: session)
        #expect(first.state == .closed)
        #expect(second.state == .closed)
        #expect(first.permitsInFlight == 0)
        #expect(second.permitsInFlight == 0)

        // The second breaker's fifth failure opens it and refuses the retry; the first has counted five failures.
        await send(1, through: session)
        #expect(second.state == .open)
        #expect(transport.requestCount == 5)

        // Let through by the first breaker, refused by the second: an adapter's failure, which the first ignores.
        await send(3, through: session)
        #expect(transport.requestCount == 5)
        #expect(first.state == .closed)
        #expect(first.permitsInFlight == 0)
        #expect(second.permitsInFlight == 0)

        // Two more failures through the first alone reach its threshold of seven only if nothing was counted twice.
        let alone = Session(transport: transport, adapters: [first], clock: clock)
        await send(1, through: alone)
        #expect(first.state == .closed)
        await send(1, through: alone)
        #expect(first.state == .open)
        #expect(transport.requestCount == 7)
    }

    @Test func aRequestWithoutAKeyGoesThroughUntouched() async throws {
        let registry = CircuitBreakerRegistry(clock: clock, key: { _ in nil })
        let session = Session(
            transport: ScriptedTransport { _, _ in .status(500) }, adapters: [registry], clock: clock)

        await send(10, through: session)

        #expect(registry.breakers.isEmpty)
    }

    @Test func theRegistryStreamHasEveryBreakersTransitions() async throws {
        let registry = CircuitBreakerRegistry(clock: clock)
        let stream = registry.transitions()

        registry.breaker(for: "a").forceOpen()
        registry.breaker(for: "b").forceClosed()

        var seen: [String] = []
        for await transition in stream {
            seen.append("\(transition.key ?? "") \(transition.to)")
            if seen.count == 2 { break }
        }
        #expect(seen == ["a forced open", "b forced closed"])
    }

    @Test func theHostKeyIsTheLowerCasedHostAndAnExplicitPort() {
        #expect(
            CircuitBreakerRegistry.hostKey(for: request(.get, URL(string: "https://API.Example.com/x")!))
                == "api.example.com")
        #expect(
            CircuitBreakerRegistry.hostKey(for: request(.get, URL(string: "http://127.0.0.1:8080/")!))
                == "127.0.0.1:8080")
        #expect(CircuitBreakerRegistry.hostKey(for: request(.get, URL(string: "file:///tmp/x")!)) == nil)
        let relative = URL(string: "sub?x", relativeTo: URL(string: "http://Base.com:81/dir/")!)!
        #expect(CircuitBreakerRegistry.hostKey(for: URLRequest(url: relative)) == "base.com:81")
        // Every number of digits a port has, and a host past a small string's length.
        for port in [0, 7, 10, 99, 443, 1000, 65535] {
            #expect(
                CircuitBreakerRegistry.hostKey(for: request(.get, URL(string: "http://h.example:\(port)/")!))
                    == "h.example:\(port)")
        }
        let long = "a-host-name-longer-than-fifteen-bytes.example.com"
        #expect(
            CircuitBreakerRegistry.hostKey(for: request(.get, URL(string: "https://\(long):8443/")!)) == "\(long):8443")
    }

    @Test func aPercentEncodedHostHasTheKeyOfItsDecodedSpelling() {
        let encoded = CircuitBreakerRegistry.hostKey(for: request(.get, URL(string: "https://Ex%41mple.com:8443/x")!))
        #expect(encoded == "example.com:8443")
        #expect(
            encoded == CircuitBreakerRegistry.hostKey(for: request(.get, URL(string: "https://example.com:8443/")!)))
        // An IPv6 address keeps its brackets, so that a port never reads as part of the address.
        #expect(
            CircuitBreakerRegistry.hostKey(for: request(.get, URL(string: "http://[::1]:8080/")!)) == "[::1]:8080")
        #expect(
            CircuitBreakerRegistry.hostKey(for: request(.get, URL(string: "http://[::1:8080]/")!)) == "[::1:8080]")
        #expect(
            CircuitBreakerRegistry.hostKey(for: request(.get, URL(string: "http://[FE80::1]:80/")!)) == "[fe80::1]:80")
        // A capital only the decoding reveals is lowered too.
        #expect(
            CircuitBreakerRegistry.hostKey(for: request(.get, URL(string: "https://ex%41mple.com/")!)) == "example.com")
    }

    @Test func aHostPastASCIIIsLoweredByUnicodesRules() {
        // "BÜCHER.example", its Ü percent-encoded as UTF-8.
        let key = CircuitBreakerRegistry.hostKey(for: request(.get, URL(string: "https://B%C3%9CCHER.example/")!))
        #expect(key == "bücher.example")
        #expect(
            CircuitBreakerRegistry.hostKey(for: request(.get, URL(string: "https://b%C3%BCcher.example:8443/")!))
                == "bücher.example:8443")
    }
}

extension CircuitBreaker.Configuration {
    /// A constant 30 s open time, which these tests count with.
    static let thirtySeconds = CircuitBreaker.Configuration(openDuration: .seconds(30))
}
