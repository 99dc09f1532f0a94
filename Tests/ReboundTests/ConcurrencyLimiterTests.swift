import Foundation
import ReboundTesting
import Testing

@testable import Rebound

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A transport that holds every request until its gate opens, and counts the requests in flight and the most at once.
private final class HeldTransport: HTTPTransport {
    let gate = Gate()
    private let counts = Locked((inFlight: 0, most: 0, sent: 0))

    var most: Int { counts.withLock { $0.most } }
    var sent: Int { counts.withLock { $0.sent } }

    func exchange(_ request: URLRequest) async throws -> (Data, ResponseHead) {
        counts.withLock {
            $0.inFlight += 1
            $0.sent += 1
            $0.most = max($0.most, $0.inFlight)
        }
        await gate.wait()
        counts.withLock { $0.inFlight -= 1 }
        return (Data(), ResponseHead(url: exampleURL, statusCode: 200, headerFields: []))
    }

    /// Waits until `count` requests were sent in all.
    func waitForSent(_ count: Int) async throws {
        try await waitWhile { sent < count }
    }
}

@Suite("ConcurrencyLimiter", .timeLimit(.minutes(5)))
struct ConcurrencyLimiterTests {
    /// A transport that answers the first request after 10 s on `clock`, any other at once.
    private func firstAnsweredAfterTenSeconds(_ clock: ManualClock) -> ScriptedTransport {
        ScriptedTransport(clock: clock) { _, number in
            number == 1 ? .status(200).delayed(by: .seconds(10)) : .status(200)
        }
    }

    private func limiter(
        _ limit: ConcurrencyLimit, queued: Int = 0, timeout: Duration = .seconds(1), clock: ManualClock = ManualClock()
    ) -> ConcurrencyLimiter {
        ConcurrencyLimiter(
            configuration: .init(limit: limit, maximumQueued: queued, queueTimeout: timeout), clock: clock)
    }

    /// Waits until `limiter` has `count` attempts queued for the example host.
    private func waitForQueued(_ count: Int, in limiter: ConcurrencyLimiter) async throws {
        try await waitWhile { limiter.snapshot(for: "api.example.com").queued < count }
    }

    /// A limit of one place and one in the queue, the place taken by `first` (held in the transport) and the queue by
    /// `waiting`.
    private func oneSentOneQueued(timeout: Duration, clock: ManualClock) async throws -> (
        ConcurrencyLimiter, HeldTransport, Session, first: Task<Response, any Error>, waiting: Task<Response, any Error>
    ) {
        let limiter = limiter(.fixed(1), queued: 1, timeout: timeout, clock: clock)
        let transport = HeldTransport()
        let session = Session(transport: transport, adapters: [limiter], clock: FastForwardClock())
        let first = Task { try await session.send(request()) }
        try await transport.waitForSent(1)
        let waiting = Task { try await session.send(request()) }
        try await waitForQueued(1, in: limiter)
        return (limiter, transport, session, first, waiting)
    }

    @Test("A full host without a queue refuses at once, with an error no retrier is asked about")
    func aFullHostRefuses() async throws {
        let limiter = limiter(.fixed(2))
        let transport = HeldTransport()
        let session = Session(
            transport: transport, adapters: [limiter], retriers: [retryAnything(limit: 5)], clock: FastForwardClock())
        let first = Task { try await session.send(request()) }
        let second = Task { try await session.send(request()) }
        try await transport.waitForSent(2)
        #expect(limiter.snapshot(for: exampleURL) == .init(limit: 2, inFlight: 2, queued: 0))

        let error = try await #require(throws: ReboundError.self) { try await session.send(request()) }

        #expect(error.errorType == "concurrencyLimit")
        #expect(error.attempts.count == 1, "a retrier was asked")
        guard case .adaptationFailed(let refusal as ConcurrencyLimitExceeded) = error.reason else {
            Issue.record("reason: \(error.reason)")
            return
        }
        #expect(refusal == .init(key: "api.example.com", limitHit: .inFlight, limit: 2, inFlight: 2, queued: 0))
        #expect(
            refusal.description
                == "concurrency limit for api.example.com reached (no place): 2 of 2 in flight, 0 queued")
        await transport.gate.open()
        _ = try await (first.value, second.value)
        #expect(transport.sent == 2)
        #expect(limiter.placesHeld == 0)
        #expect(limiter.hostsKept == 0, "an idle host with a fixed limit is forgotten")
    }

    @Test("The queue: first come, first served, bounded, and a full queue refuses at once")
    func theQueue() async throws {
        let limiter = limiter(.fixed(1), queued: 2)
        let transport = HeldTransport()
        let order = Log()
        let session = Session(transport: transport, adapters: [limiter], clock: FastForwardClock())
        func send(_ name: String) -> Task<Void, any Error> {
            Task {
                var request = request()
                request.setValue(name, forHTTPHeaderField: "X-Name")
                _ = try await session.send(request)
                order.append(name)
            }
        }
        let first = send("first")
        try await transport.waitForSent(1)
        let second = send("second")
        try await waitForQueued(1, in: limiter)
        let third = send("third")
        try await waitForQueued(2, in: limiter)

        let error = try await #require(throws: ReboundError.self) { try await session.send(request()) }
        #expect((error.underlyingError as? ConcurrencyLimitExceeded)?.limitHit == .queue)
        #expect(transport.sent == 1)

        await transport.gate.open()
        for task in [first, second, third] { try await task.value }
        #expect(transport.most == 1)
        #expect(order.all == ["first", "second", "third"])
        #expect(limiter.placesHeld == 0)
    }

    @Test("An attempt that waits longer than the queue timeout fails, and the queue forgets it")
    func theQueueTimeout() async throws {
        let clock = ManualClock()
        let (limiter, transport, _, first, waiting) = try await oneSentOneQueued(timeout: .seconds(2), clock: clock)
        try await clock.waitForSleepers(1)

        clock.advance(by: .seconds(2))

        let error = try await #require(throws: ReboundError.self) { try await waiting.value }
        #expect((error.underlyingError as? ConcurrencyLimitExceeded)?.limitHit == .queueTimeout)
        #expect(limiter.snapshot(for: exampleURL) == .init(limit: 1, inFlight: 1, queued: 0))
        await transport.gate.open()
        _ = try await first.value
        #expect(transport.sent == 1)
        #expect(limiter.placesHeld == 0)
    }

    @Test("A request cancelled while it waits in the queue ends at once and leaves nothing behind")
    func cancelledInTheQueue() async throws {
        let clock = ManualClock()
        let (limiter, transport, session, first, waiting) = try await oneSentOneQueued(
            timeout: .seconds(1), clock: clock)

        waiting.cancel()

        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(limiter.snapshot(for: "api.example.com").queued == 0)
        // The timer of the cancelled wait is gone too: nothing sleeps on the clock.
        try await waitWhile { clock.pendingSleepCount > 0 }
        await transport.gate.open()
        _ = try await first.value
        _ = try await session.send(request())
        #expect(transport.sent == 2)
        #expect(limiter.placesHeld == 0)
    }

    /// Adapts a request for attempt 1 of a request of its own, as a session would, and returns its registrations.
    private func adapted(by limiter: ConcurrencyLimiter, id: UUID) async throws -> RegisteredRoles {
        let roles = RegisteredRoles(besides: .none)
        _ = try await limiter.adapt(
            request(), context: RequestContext(requestID: id, attempt: 1, label: nil, roles: roles))
        return roles
    }

    /// Settles attempt 1 of request `id` through the parts registered in `roles`, as the session does when it ends.
    private func settle(_ id: UUID, roles: RegisteredRoles) {
        let attempt = Attempt(number: 1, request: nil, response: nil, failure: nil, duration: .zero)
        for part in roles.ledger.settling(attempt: attempt.number).accountants {
            part.settle(attempt, of: id, ledger: roles.ledger) {
                AttemptOutcome(requestID: id, originalRequest: request(), attempt: attempt, decision: .cancelled)
            }
        }
    }

    /// A limit of one place and one in the queue, with attempt 1 of a request holding the place and attempt 1 of
    /// another waiting in a task for it, each with its id and registrations.
    private func oneHeldOneWaiting() async throws -> (
        ConcurrencyLimiter, first: (id: UUID, roles: RegisteredRoles), second: (id: UUID, roles: RegisteredRoles),
        waiting: Task<URLRequest, any Error>
    ) {
        let limiter = limiter(.fixed(1), queued: 1)
        let first = (id: UUID(), roles: RegisteredRoles(besides: .none))
        _ = try await limiter.adapt(
            request(), context: RequestContext(requestID: first.id, attempt: 1, label: nil, roles: first.roles))
        let second = (id: UUID(), roles: RegisteredRoles(besides: .none))
        let waiting = Task {
            try await limiter.adapt(
                request(), context: RequestContext(requestID: second.id, attempt: 1, label: nil, roles: second.roles))
        }
        try await waitForQueued(1, in: limiter)
        return (limiter, first, second, waiting)
    }

    @Test("An attempt settled just as a place is handed to it, before its task resumes, gives that place back")
    func aPlaceHandedAsTheAttemptIsSettledComesBack() async throws {
        // The handover and the settling race only in the moment between them: many rounds, so that the settling comes
        // first in most of them, as it does when the deadline fires then.
        for _ in 0..<200 {
            let (limiter, first, second, waiting) = try await oneHeldOneWaiting()

            // The first attempt ends and hands its place to the second, whose deadline comes at once: the session
            // cancels the attempt, then settles it, without waiting for its task.
            settle(first.id, roles: first.roles)
            waiting.cancel()
            settle(second.id, roles: second.roles)
            _ = await waiting.result

            #expect(limiter.placesHeld == 0)
            #expect(limiter.hostsKept == 0)
        }
    }

    @Test("An attempt settled while it waits leaves the queue, even if nothing cancelled its task")
    func anAttemptSettledWhileItWaitsLeavesTheQueue() async throws {
        let (limiter, first, second, waiting) = try await oneHeldOneWaiting()

        settle(second.id, roles: second.roles)

        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(limiter.snapshot(for: "api.example.com") == .init(limit: 1, inFlight: 1, queued: 0))
        settle(first.id, roles: first.roles)
        #expect(limiter.placesHeld == 0)
        #expect(limiter.hostsKept == 0)
    }

    @Test("A long queue: each wait times out on time, in order, whatever left the queue before it")
    func aLongQueueTimesOutInOrder() async throws {
        let clock = ManualClock()
        let count = 1_000
        let limiter = limiter(.fixed(1), queued: count, timeout: .seconds(1), clock: clock)
        let firstID = UUID()
        let first = try await adapted(by: limiter, id: firstID)
        let waits = (0..<count).map { _ in
            Task {
                let context = RequestContext(
                    requestID: UUID(), attempt: 1, label: nil, roles: RegisteredRoles(besides: .none))
                return try await limiter.adapt(request(), context: context)
            }
        }
        try await waitForQueued(count, in: limiter)
        try await clock.waitForSleepers(count)
        // Every other wait is cancelled, from the front and the back of the queue alike.
        for (index, wait) in waits.enumerated() where index.isMultiple(of: 2) { wait.cancel() }
        try await waitWhile { limiter.snapshot(for: "api.example.com").queued > count / 2 }

        clock.advance(by: .seconds(1))

        for (index, wait) in waits.enumerated() {
            let error = await #expect(throws: (any Error).self) { try await wait.value }
            if index.isMultiple(of: 2) {
                #expect(error is CancellationError)
            } else {
                #expect((error as? ConcurrencyLimitExceeded)?.limitHit == .queueTimeout)
            }
        }
        #expect(limiter.snapshot(for: "api.example.com") == .init(limit: 1, inFlight: 1, queued: 0))
        settle(firstID, roles: first)
        #expect(limiter.placesHeld == 0)
        #expect(limiter.hostsKept == 0)
    }

    @Test("Every attempt gives its place back, whatever ends it", arguments: PlaceEnding.allCases)
    func everyPathGivesThePlaceBack(ending: PlaceEnding) async throws {
        let limiter = limiter(.fixed(1))
        let clock = ManualClock()
        let breaker = CircuitBreaker(clock: clock)
        var adapters: [any RequestAdapter] = [limiter]
        let transport: ScriptedTransport
        switch ending {
        case .success: transport = ScriptedTransport([.status(200)])
        case .status: transport = ScriptedTransport([.status(503)])
        case .transportFailure: transport = ScriptedTransport([.urlError(.timedOut)])
        case .laterAdapterFails:
            transport = ScriptedTransport([.status(200)])
            adapters.append(Adapter { _, _ in throw TestError("later") })
        case .breakerOpen:
            transport = ScriptedTransport([.status(200)])
            breaker.forceOpen()
            adapters.append(breaker)
        case .cancelledInFlight, .deadline:
            transport = ScriptedTransport([.hang])
        }
        let session = Session(
            transport: transport, adapters: adapters,
            deadline: ending == .deadline ? .seconds(1) : nil, clock: clock)

        let task = Task { try await session.send(request()) }
        switch ending {
        case .cancelledInFlight:
            try await transport.waitForRequests(1)
            task.cancel()
        case .deadline:
            try await transport.waitForRequests(1)
            try await clock.waitForSleepers(1)
            clock.advance(by: .seconds(1))
        default: break
        }
        _ = await task.result

        #expect(limiter.placesHeld == 0)
        #expect(limiter.snapshot(for: "api.example.com").inFlight == 0)
    }

    enum PlaceEnding: CaseIterable, Sendable {
        case success, status, transportFailure, laterAdapterFails, breakerOpen, cancelledInFlight, deadline
    }

    @Test(
        "A failed attempt gives its place back before the retriers decide: another request takes it meanwhile",
        arguments: [false, true])
    func placeComesBackBeforeTheRetriersDecide(stoppedByALaterAdapter: Bool) async throws {
        let limiter = limiter(.fixed(1))
        let (asked, decided) = (Locked(false), Gate())
        // A retrier that takes its time (a token refresh, the offline retrier's wait for the network).
        let slow = Retrier { _, _ in
            asked.withLock { $0 = true }
            await decided.wait()
            return .doNotRetry
        }
        // The first attempt fails with a 503, or in an adapter after the limiter's (a signer finding no network).
        let signerFails = Locked(stoppedByALaterAdapter)
        let signer = Adapter.modifying { _, _ in
            if signerFails.withLock({ $0 }) { throw URLError(.notConnectedToInternet) }
        }
        let session = Session(
            transport: ScriptedTransport(stoppedByALaterAdapter ? [.status(200)] : [.status(503), .status(200)]),
            adapters: [limiter, signer], retriers: [slow], clock: FastForwardClock())

        let first = Task { try await session.send(request()) }
        try await waitWhile { !asked.withLock { $0 } }
        signerFails.withLock { $0 = false }
        let inFlightWhileDeciding = limiter.snapshot(for: "api.example.com").inFlight
        // With no queue, a host whose one place were still held would refuse this request at once.
        let second = try await session.send(request())
        await decided.open()
        await #expect(throws: ReboundError.self) { try await first.value }

        #expect(inFlightWhileDeciding == 0)
        #expect(second.statusCode == 200)
        #expect(limiter.placesHeld == 0)
    }

    @Test("Each retry takes a place of its own, and gives it back")
    func retriesTakePlaces() async throws {
        let limiter = limiter(.fixed(1))
        let transport = ScriptedTransport([.status(503), .status(503), .status(200)])
        let session = Session(
            transport: transport, adapters: [limiter], retriers: [RetryPolicy(backoff: .zero)],
            clock: FastForwardClock())

        let response = try await session.send(request())

        #expect(response.retryCount == 2)
        #expect(limiter.placesHeld == 0)
    }

    @Test("Hosts have places of their own, and sessions sharing a limiter share them")
    func perHostAndShared() async throws {
        let limiter = limiter(.fixed(1))
        let held = HeldTransport()
        let first = Session(transport: held, adapters: [limiter], clock: FastForwardClock())
        let second = Session(transport: ScriptedTransport { _, _ in .status(200) }, adapters: [limiter])
        let task = Task { try await first.send(request()) }
        try await held.waitForSent(1)

        await #expect(throws: ReboundError.self) { try await second.send(request()) }
        _ = try await second.send(request(.get, URL(string: "https://other.example.com/")!))

        await held.gate.open()
        _ = try await task.value
    }

    @Test("Before an adapter that moves requests to another host, it holds places of the host they are sent to")
    func holdsPlacesOfTheHostSentTo() async throws {
        let clock = ManualClock()
        let limiter = limiter(.fixed(1), clock: clock)
        // Every request goes to one real host, whichever host it names.
        let moving = movingAdapter()
        let transport = firstAnsweredAfterTenSeconds(clock)
        let session = Session(transport: transport, adapters: [limiter, moving], clock: clock)
        let first = Task { try await session.send(URL(string: "https://a.example.com/items")!) }
        try await clock.waitForSleepers(1)

        // The first request holds the real host's one place, not a.example.com's: the second, written for another
        // host, is refused there.
        #expect(limiter.snapshot(for: "real.example.com").inFlight == 1)
        #expect(limiter.snapshot(for: "a.example.com").inFlight == 0)
        let error = await #expect(throws: ReboundError.self) {
            try await session.send(URL(string: "https://b.example.com/items")!)
        }
        #expect((error?.underlyingError as? ConcurrencyLimitExceeded)?.key == "real.example.com")
        #expect(transport.requestCount == 1)

        clock.advance(by: .seconds(10))
        _ = try await first.value
        #expect(limiter.placesHeld == 0)
    }

    @Test("Held twice, each time before an adapter that moves the request, it holds one place of the host sent to")
    func heldTwiceBeforeTwoMovesHoldsOnePlaceOfTheHostSentTo() async throws {
        let clock = ManualClock()
        let limiter = limiter(.fixed(1), clock: clock)
        let transport = firstAnsweredAfterTenSeconds(clock)
        // The request moves to mid.example.com, then to real.example.com, with the limiter before each move.
        let session = Session(
            transport: transport,
            adapters: [limiter, movingAdapter(to: "https://mid.example.com/items"), limiter, movingAdapter()],
            clock: clock)
        let first = Task { try await session.send(URL(string: "https://a.example.com/items")!) }
        try await clock.waitForSleepers(1)

        // One place, the real host's: none of the host the request named, none of the one it passed through.
        #expect(limiter.placesHeld == 1)
        #expect(limiter.snapshot(for: "real.example.com").inFlight == 1)
        #expect(limiter.snapshot(for: "a.example.com").inFlight == 0)
        #expect(limiter.snapshot(for: "mid.example.com").inFlight == 0)
        let error = await #expect(throws: ReboundError.self) {
            try await session.send(URL(string: "https://b.example.com/items")!)
        }
        #expect((error?.underlyingError as? ConcurrencyLimitExceeded)?.key == "real.example.com")

        clock.advance(by: .seconds(10))
        _ = try await first.value
        #expect(limiter.placesHeld == 0)
        #expect(limiter.snapshot(for: "real.example.com").inFlight == 0)
    }

    @Test("An attempt a later adapter sends to a host the limiter lets through gives its place back")
    func anAttemptMovedToAnUnlimitedHostGivesItsPlaceBack() async throws {
        let clock = ManualClock()
        // The limiter lets unlimited.example.com through untouched: its key function gives it no key.
        let limiter = ConcurrencyLimiter(
            configuration: .init(limit: .fixed(1)),
            key: { $0.url?.host == "unlimited.example.com" ? nil : CircuitBreakerRegistry.hostKey(for: $0) },
            clock: clock)
        let moving = movingAdapter(to: "https://unlimited.example.com/items")
        let transport = firstAnsweredAfterTenSeconds(clock)
        let session = Session(transport: transport, adapters: [limiter, moving], clock: clock)
        let first = Task { try await session.send(URL(string: "https://a.example.com/items")!) }
        try await clock.waitForSleepers(1)

        // The first request, in flight to the unlimited host, holds no place of a.example.com: the second goes too.
        #expect(limiter.placesHeld == 0)
        _ = try await session.send(URL(string: "https://a.example.com/items")!)
        #expect(transport.requestCount == 2)

        clock.advance(by: .seconds(10))
        _ = try await first.value
        #expect(limiter.placesHeld == 0)
    }

    @Test("Wrapped in a decorator that forwards adapt, the limiter still gives every place back")
    func behindAWrapper() async throws {
        let limiter = limiter(.fixed(1))
        let session = Session(
            transport: ScriptedTransport { _, _ in .status(503) }, adapters: [ForwardingAdapter(wrapped: limiter)],
            retriers: [RetryPolicy(backoff: .zero)], clock: FastForwardClock())
        for _ in 0..<3 { _ = try? await session.send(request()) }
        #expect(limiter.placesHeld == 0)
    }

    @Test("Under heavy concurrency the host never sees more than the limit, and every request ends once")
    func underConcurrency() async throws {
        let limiter = limiter(.fixed(4), queued: 1_000, timeout: .seconds(60))
        let transport = HeldTransport()
        let session = Session(transport: transport, adapters: [limiter], clock: FastForwardClock())
        let opener = Task {
            try await transport.waitForSent(4)
            await transport.gate.open()
        }
        let ended = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<200 { group.addTask { (try? await session.send(request())) != nil } }
            return await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
        }
        try await opener.value

        #expect(ended == 200)
        #expect(transport.most <= 4)
        #expect(transport.sent == 200)
        #expect(limiter.placesHeld == 0)
    }

    @Test("AIMD: a failure shrinks the limit by a tenth, a success with half the limit in flight grows it by one")
    func aimdEndToEnd() async throws {
        let limiter = limiter(.aimd(.init(initial: 10)))
        let transport = ScriptedTransport([.status(503), .status(503), .status(200)])
        let session = Session(transport: transport, adapters: [limiter], clock: FastForwardClock())
        _ = try? await session.send(request())
        #expect(limiter.snapshot(for: "api.example.com").limit == 9)
        _ = try? await session.send(request())
        #expect(limiter.snapshot(for: "api.example.com").limit == 8)
        // One at a time is less than half of 8: the client is the bottleneck, and the limit stays.
        _ = try await session.send(request())
        #expect(limiter.snapshot(for: "api.example.com").limit == 8)
        #expect(limiter.hostsKept == 1, "an adaptive limit is remembered")
    }

    @Test("AIMD's steps, from Netflix's rule")
    func aimdSteps() {
        var state = LimitState(.aimd(.init(initial: 4, minimum: 2, maximum: 6, timeout: .seconds(5))))
        state.update(latency: .milliseconds(10), inFlight: 2, dropped: false)
        #expect(state.current == 5)
        state.update(latency: .milliseconds(10), inFlight: 2, dropped: false)
        #expect(state.current == 5, "2 in flight is below half of 5")
        state.update(latency: .milliseconds(10), inFlight: 3, dropped: false)
        state.update(latency: .milliseconds(10), inFlight: 3, dropped: false)
        #expect(state.current == 6, "capped at the maximum")
        state.update(latency: .seconds(6), inFlight: 1, dropped: false)
        #expect(state.current == 5, "slower than the timeout counts as a drop: at least 1 less")
        for _ in 0..<5 { state.update(latency: .milliseconds(10), inFlight: 1, dropped: true) }
        #expect(state.current == 2, "never below the minimum")
    }

    @Test("Gradient: the limit grows while latency holds and shrinks when it climbs")
    func gradientSteps() {
        var state = LimitState(.gradient(.init(initial: 10, minimum: 1, maximum: 100)))
        // Ten samples at 100 ms: the long-term latency is theirs, the gradient 1, the limit grows by 0.2 × 4.
        for _ in 0..<10 { state.update(latency: .milliseconds(100), inFlight: 10, dropped: false) }
        #expect(abs(state.estimate - 18) < 1e-9)
        let before = state.estimate
        // Latency doubles: the gradient falls to 0.5 and the limit with it, a fifth of the way each time.
        state.update(latency: .milliseconds(200), inFlight: 18, dropped: false)
        #expect(state.estimate < before)
        for _ in 0..<30 { state.update(latency: .milliseconds(400), inFlight: 18, dropped: false) }
        #expect(state.current < 12)
        // Too few in flight: the limit does not move.
        let held = state.estimate
        state.update(latency: .milliseconds(100), inFlight: 1, dropped: false)
        #expect(state.estimate == held)
    }

    @Test func anInvalidSettingReadAtRunTimeIsATypedError() throws {
        #expect(throws: ConfigurationError.self) { try ConcurrencyLimiter.Configuration.validated(limit: .fixed(0)) }
        #expect(throws: ConfigurationError.self) { try ConcurrencyLimiter.Configuration.validated(maximumQueued: -1) }
        #expect(throws: ConfigurationError.self) { try ConcurrencyLimiter.Configuration.validated(queueTimeout: .zero) }
        #expect(throws: ConfigurationError.self) { try ConcurrencyLimit.AIMD.validated(backoffRatio: 1) }
        #expect(throws: ConfigurationError.self) { try ConcurrencyLimit.AIMD.validated(initial: 0) }
        #expect(throws: ConfigurationError.self) { try ConcurrencyLimit.Gradient.validated(smoothing: 0) }
        let error = #expect(throws: ConfigurationError.self) {
            try ConcurrencyLimit.Gradient.validated(initial: 5)
        }
        #expect(
            error?.message
                == "ConcurrencyLimit.Gradient.initial must be between the minimum and the maximum (20...200), got 5")
        #expect(try ConcurrencyLimiter.Configuration.validated() == .default)
    }

    @Test func anInvalidSettingWrittenInCodeTrapsNamingIt() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = ConcurrencyLimiter.Configuration(limit: .fixed(0))
        }

        expectStandardError(of: result, contains: "ConcurrencyLimit.fixed must be at least 1, got 0")
    }
}
