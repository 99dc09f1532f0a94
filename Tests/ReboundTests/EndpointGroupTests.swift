import Foundation
import ReboundTesting
import Testing

@testable import Rebound

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The outlier detector's transitions, on plain values.
@Suite("Outlier detection")
struct OutlierDetectorTests {
    typealias Detection = EndpointGroup.OutlierDetection

    @Test func failuresInARowEjectForTheBaseTimeAndASuccessStartsTheCountOver() {
        var detector = OutlierDetector(count: 3, configuration: .default)
        for _ in 0..<4 { #expect(detector.record(.failure, of: 0, at: .seconds(1)) == nil) }
        #expect(detector.record(.success, of: 0, at: .seconds(1)) == nil)
        for _ in 0..<4 { #expect(detector.record(.failure, of: 0, at: .seconds(2)) == nil) }
        let ejection = detector.record(.failure, of: 0, at: .seconds(2))
        #expect(ejection?.rule == .consecutiveFailures)
        #expect(ejection?.duration == .seconds(30))
        #expect(ejection?.ejections == 1)
        #expect(!detector.isInRotation(0, at: .seconds(31)))
        #expect(detector.isInRotation(0, at: .seconds(32)))
        // An attempt sent before the ejection that ends during it changes nothing.
        #expect(detector.record(.failure, of: 0, at: .seconds(10)) == nil)
        #expect(!detector.isInRotation(0, at: .seconds(10)))
    }

    @Test func aFailedTrialEjectsAgainForLongerUpToTheMaximum() {
        var detector = OutlierDetector(
            count: 2, configuration: Detection(consecutiveFailures: 1, maximumEjectionTime: .seconds(70)))
        var now = Duration.zero
        var durations: [Duration] = []
        for _ in 0..<3 {
            let ejection = detector.record(.failure, of: 0, at: now)
            durations.append(ejection?.duration ?? .zero)
            now += ejection?.duration ?? .zero
        }
        #expect(durations == [.seconds(30), .seconds(60), .seconds(70)])
        // A successful trial keeps it in rotation.
        #expect(detector.record(.success, of: 0, at: now) == nil)
        #expect(detector.isInRotation(0, at: now))
    }

    @Test func oneEjectionIsForgottenForEachBaseTimeInRotation() {
        var detector = OutlierDetector(count: 2, configuration: Detection(consecutiveFailures: 1))
        #expect(detector.record(.failure, of: 0, at: .zero)?.ejections == 1)
        // Back at 30 s; 65 s later (two base times), the one ejection on record is forgotten.
        #expect(detector.record(.success, of: 0, at: .seconds(30)) == nil)
        let again = detector.record(.failure, of: 0, at: .seconds(95))
        #expect(again?.ejections == 1)
        #expect(again?.duration == .seconds(30))
    }

    @Test(arguments: [(2, 0.5, 1), (3, 0.5, 1), (4, 0.5, 2), (5, 0.5, 2), (10, 0.1, 1), (4, 0.0, 1), (4, 1.0, 4)])
    func neverMoreThanTheShareRoundedDownAndAtLeastOne(count: Int, share: Double, most: Int) {
        var detector = OutlierDetector(
            count: count, configuration: Detection(consecutiveFailures: 1, maximumEjectedShare: share))
        let ejected = (0..<count).filter { detector.record(.failure, of: $0, at: .zero) != nil }
        #expect(ejected.count == most)
        #expect(detector.ejectedCount(at: .zero) == most)
    }

    @Test func theFailureRateEjectsOnceTheWindowHoldsTheMinimumOfCalls() {
        let rule = Detection.FailureRate(rate: 0.5, window: .seconds(10), minimumCalls: 4)
        var detector = OutlierDetector(
            count: 2, configuration: Detection(consecutiveFailures: nil, failureRate: rule))
        #expect(detector.record(.success, of: 1, at: .seconds(1)) == nil)
        #expect(detector.record(.failure, of: 1, at: .seconds(1)) == nil)
        #expect(detector.record(.success, of: 1, at: .seconds(2)) == nil)
        #expect(detector.record(.failure, of: 1, at: .seconds(2))?.rule == .failureRate)
        // Calls older than the window count for nothing.
        #expect(detector.record(.failure, of: 0, at: .seconds(1)) == nil)
        #expect(detector.record(.failure, of: 0, at: .seconds(1)) == nil)
        #expect(detector.record(.failure, of: 0, at: .seconds(30)) == nil)
    }
}

/// A group's routing, on the scripted transport and the manual clock.
@Suite("Endpoint groups")
struct EndpointGroupTests {
    static let eu = URL(string: "https://eu.api.example.com/v2")!
    static let us = URL(string: "https://us.api.example.com:8443/v2/")!
    static let charges = URL(string: "https://eu.api.example.com/v2/charges?customer=7#top")!

    @Test func aURLIsUnderABaseURLByOriginAndWholePathSegments() {
        #expect(EndpointGroup.isUnder(URL(string: "https://EU.api.example.com:443/v2/a")!, Self.eu))
        #expect(EndpointGroup.isUnder(URL(string: "https://eu.api.example.com/v2")!, Self.eu))
        #expect(!EndpointGroup.isUnder(URL(string: "https://eu.api.example.com/v20/a")!, Self.eu))
        #expect(!EndpointGroup.isUnder(URL(string: "http://eu.api.example.com/v2/a")!, Self.eu))
        #expect(!EndpointGroup.isUnder(URL(string: "https://eu.api.example.com:8443/v2/a")!, Self.eu))
        #expect(
            EndpointGroup.isUnder(
                URL(string: "https://eu.api.example.com/anything")!, URL(string: "https://eu.api.example.com")!))
        #expect(
            EndpointGroup.rebase(Self.charges, from: Self.eu, to: Self.us).absoluteString
                == "https://us.api.example.com:8443/v2/charges?customer=7#top")
    }

    /// Sends `url` through `session` in a task, with a flag raised when the request ends: a test that waits for the
    /// clock to be asked for a sleep stops waiting once the request ended instead.
    static func send(_ url: URL, through session: Session) -> (task: Task<Response, any Error>, finished: Locked<Bool>)
    {
        let finished = Locked(false)
        let task = Task {
            defer { finished.withLock { $0 = true } }
            return try await session.send(url)
        }
        return (task, finished)
    }

    /// A transport on which `failing` answers 503 and every other host 200.
    static func transport<C: Clock>(_ clock: C, failing: String = "eu.api.example.com") -> ScriptedTransport
    where C.Duration == Duration {
        ScriptedTransport(clock: clock) { request, _ in request.url?.host == failing ? .status(503) : .status(200) }
    }

    /// eu answers as `eu` says, us always 200; `group` routes, among `adapters` when they are given.
    static func session(
        _ group: EndpointGroup, clock: ManualClock, adapters: [any RequestAdapter]? = nil, hedging: Hedging? = nil,
        eu: @escaping @Sendable (Int) -> ScriptedTransport.Step = { _ in .status(503) }
    ) -> (Session, ScriptedTransport) {
        let euCount = Locked(0)
        let transport = ScriptedTransport(clock: clock) { request, _ in
            guard request.url?.host == "eu.api.example.com" else { return .status(200) }
            return eu(
                euCount.withLock {
                    $0 += 1; return $0
                })
        }
        let session = Session(
            transport: transport, adapters: adapters ?? [group], retriers: [RetryPolicy(backoff: .zero)],
            hedging: hedging, clock: clock)
        return (session, transport)
    }

    /// The request names us, but the group sends its first attempt to eu, the first endpoint in rotation: a choice of
    /// the group's, not a host rewriter the registry behind it must guess about.
    @Test("A retry moved out of the group is judged by the breaker of the host it goes to, and refused at once")
    func aRetryMovedOutOfTheGroupIsJudgedByTheBreakerWhereItGoes() async throws {
        let clock = ManualClock()
        let group = EndpointGroup(endpoints: [.init(Self.eu), .init(Self.us)], clock: clock)
        let registry = CircuitBreakerRegistry(clock: clock)
        registry.breaker(for: "fallback.example.com").forceOpen()
        let transport = ScriptedTransport(clock: clock) { _, _ in .status(503) }
        let fallback = URLRequest(url: URL(string: "https://fallback.example.com/v2/charges")!)
        let mover = Retrier { request, _ in
            request.retryCount == 0 ? .retryWithRequest(fallback, delay: .seconds(1)) : .doNotRetry
        }
        let session = Session(transport: transport, adapters: [group, registry], retriers: [mover], clock: clock)

        let (task, finished) = Self.send(URL(string: "https://us.api.example.com:8443/v2/charges")!, through: session)
        // A retry judged by another breaker than the fallback's would sleep its backoff: the wait ends then too, and
        // the clock lets the request go on.
        try await waitWhile { !finished.withLock { $0 } && clock.pendingSleepCount == 0 }
        clock.advance(by: .seconds(1))
        let error = await #expect(throws: ReboundError.self) { try await task.value }

        // Refused by the fallback's open breaker when the retry was asked for: no backoff slept, nothing more sent.
        #expect(transport.requests.map { $0.url?.host } == ["eu.api.example.com"])
        #expect(error?.circuitBreakerOpenError?.key == "fallback.example.com")
        #expect(clock.sleeps.isEmpty)
        #expect(group.requestsKept == 0 && group.attemptsInFlight == 0)
    }

    @Test func aRetryGoesToAnotherEndpointWithItsPathQueryAndFragment() async throws {
        let clock = ManualClock()
        let group = EndpointGroup(endpoints: [.init(Self.eu), .init(Self.us)], clock: clock)
        let (session, transport) = Self.session(group, clock: clock)

        let response = try await session.send(Self.charges)

        #expect(response.attempts.count == 2)
        #expect(
            transport.requests.map { $0.url?.absoluteString }
                == [Self.charges.absoluteString, "https://us.api.example.com:8443/v2/charges?customer=7#top"])
        #expect(group.requestsKept == 0 && group.attemptsInFlight == 0)
    }

    /// eu answers 503 asking for two minutes of quiet (while `asking` holds, by default always); every other host
    /// answers 200.
    static func askingForQuiet<C: Clock>(_ clock: C, while asking: Locked<Bool> = Locked(true)) -> ScriptedTransport
    where C.Duration == Duration {
        ScriptedTransport(clock: clock) { request, _ in
            request.url?.host == "eu.api.example.com" && asking.withLock({ $0 })
                ? .response(status: 503, headers: ["Retry-After": "120"]) : .status(200)
        }
    }

    @Test(
        arguments: [
            ("https://us.example.com/v2/x", nil),
            ("https://eu.example.com/backup/x", Duration.seconds(60)),
        ] as [(String, Duration?)])
    func retryPolicyHonoursRetryAfterOnlyForARetryToTheHostThatAskedForIt(destination: String, honoured: Duration?)
        async
    {
        let sent = URLRequest(url: URL(string: "https://eu.example.com/v2/x")!)
        let policy = RetryPolicy(backoff: .constant(.seconds(1)))
        for status in [503, 429] {
            let head = ResponseHead(
                url: sent.url!, statusCode: status, headerFields: [(name: "Retry-After", value: "120")])
            let attempt = Attempt(
                number: 1, request: sent, responseHead: head, failure: .unacceptableStatusCode(status),
                duration: .zero)
            let failed = RetryRequest(
                requestID: UUID(), label: nil, original: .request(sent), lastRequest: sent, responseHead: head,
                data: nil, attempts: [attempt], roles: nil, backoffWait: nil)
            let error = ReboundError(
                reason: .unacceptableStatusCode(status), original: .request(sent), lastRequest: sent,
                responseHead: head, data: nil, attempts: [attempt])
            // An endpoint group's retry to another host waits the backoff; a 429 that said when to come back is still
            // retried there.
            let routed = failed.routed(to: URLRequest(url: URL(string: destination)!))
            #expect(await policy.retry(routed, dueTo: error).delay == honoured ?? .seconds(1))
            #expect(await policy.retry(failed, dueTo: error).delay == .seconds(60))
        }
    }

    /// A retrier of the user's own that notes where the retry goes, then retries at once.
    struct NotesWhereTheRetryGoes: RequestRetrier {
        let seen = Locked<[(destination: String?, leaves: Bool)]>([])

        func retry(_ request: RetryRequest, dueTo error: ReboundError) async -> RetryResult {
            seen.withLock { $0.append((request.destination?.url?.absoluteString, request.leavesAnsweringHost)) }
            return request.retryCount == 0 ? .retry : .doNotRetry
        }
    }

    @Test func aRetrierOfYourOwnSeesTheEndpointTheGroupSendsTheRetryTo() async throws {
        // Two endpoints: the retry leaves eu for us. One: it stays on eu, and nothing moves it.
        for endpoints in [[Self.eu, Self.us], [Self.eu]] {
            let group = EndpointGroup(endpoints: endpoints.map { .init($0) })
            let transport = Self.askingForQuiet(ManualClock())
            let retrier = NotesWhereTheRetryGoes()
            let session = Session(transport: transport, adapters: [group], retriers: [retrier])
            _ = try? await session.send(Self.charges)
            let seen = retrier.seen.withLock { $0 }
            let moved = endpoints.count > 1
            #expect(seen.count == (moved ? 1 : 2))
            #expect(
                seen.first?.destination == (moved ? "https://us.api.example.com:8443/v2/charges?customer=7#top" : nil))
            #expect(seen.first?.leaves == moved)
            #expect(transport.requests.last?.url?.host == (moved ? "us.api.example.com" : "eu.api.example.com"))
        }
        // A retry request made by hand for a test says the same.
        let made = RetryRequest(
            originalRequest: URLRequest(url: Self.charges), lastRequest: URLRequest(url: Self.charges),
            destination: URLRequest(url: URL(string: "https://us.api.example.com:8443/v2/charges")!))
        #expect(made.leavesAnsweringHost)
        #expect(!RetryRequest(originalRequest: URLRequest(url: Self.charges)).leavesAnsweringHost)
    }

    @Test(
        "A retry to another endpoint waits its backoff, not the Retry-After the failed endpoint asked for",
        .timeLimit(.minutes(1)))
    func aRetryToAnotherEndpointIsNotHeldByTheQuietTheFailedOneAskedFor() async throws {
        for deadline in [nil, .seconds(10)] as [Duration?] {
            let clock = ManualClock()
            let group = EndpointGroup(endpoints: [.init(Self.eu), .init(Self.us)], clock: clock)
            let transport = Self.askingForQuiet(clock)
            let session = Session(
                transport: transport, adapters: [group], retriers: [RetryPolicy(backoff: .zero)], deadline: deadline,
                clock: clock)

            // Neither held for the 60 s the policy honours at most (the clock is never advanced), nor stopped by the
            // deadline's rule: us never asked to wait.
            let (task, finished) = Self.send(Self.charges, through: session)
            try await waitWhile { !finished.withLock { $0 } && clock.pendingSleepCount <= (deadline == nil ? 0 : 1) }
            task.cancel()
            let response = try await task.value

            #expect(transport.requests.map { $0.url?.host } == ["eu.api.example.com", "us.api.example.com"])
            #expect(response.attempts[0].retryDelay == .zero)
            #expect(group.requestsKept == 0 && group.attemptsInFlight == 0)
        }
    }

    @Test(
        "With the preset and its deadline, a request fails over after its backoff though the endpoint asked for more",
        .timeLimit(.minutes(1)))
    func withThePresetARequestFailsOverThoughTheFailedEndpointAskedForMoreThanTheDeadline() async throws {
        let clock = ManualClock()
        let resilience = Resilience(clock: clock, random: .seeded(3), deadline: .seconds(30))
        let group = EndpointGroup(
            endpoints: [.init(Self.eu), .init(Self.us)], breakers: resilience.breakers, clock: clock)
        let transport = Self.askingForQuiet(clock)
        let session = Session(transport: transport, resilience: resilience, endpointGroup: group, clock: clock)

        let (task, finished) = Self.send(Self.charges, through: session)
        // The deadline's timer and the backoff: the backoff is the preset's (below 0.5 s), then us answers.
        try await waitWhile { !finished.withLock { $0 } && clock.pendingSleepCount < 2 }
        clock.advance(by: .milliseconds(500))
        let response = try await task.value

        #expect(response.attempts.map { $0.request?.url?.host } == ["eu.api.example.com", "us.api.example.com"])
        #expect(response.attempts[0].retryDelay.map { $0 <= .milliseconds(500) } == true)
    }

    /// However a `classify:` counts the attempt (one that ignores every answer, too), for as long as the group's
    /// `maximumQuiet` allows (60 s by default; zero: no quiet at all).
    @Test(arguments: [(false, nil), (true, nil), (false, .seconds(10)), (false, .zero)] as [(Bool, Duration?)])
    func anEndpointThatAskedForQuietTakesNoAttemptUntilThenWhileAnotherIsLeft(
        ignoringAll: Bool, maximumQuiet: Duration?
    ) async throws {
        let clock = ManualClock()
        let ignoring: @Sendable (AttemptOutcome) -> CircuitBreaker.Verdict = { _ in .ignored }
        let group = EndpointGroup(
            endpoints: [.init(Self.eu), .init(Self.us)], clock: clock, classify: ignoringAll ? ignoring : nil,
            maximumQuiet: maximumQuiet ?? EndpointGroup.defaultMaximumQuiet)
        let held = maximumQuiet ?? .seconds(60)
        #expect(group.maximumQuiet == held)
        let asking = Locked(true)
        let transport = Self.askingForQuiet(clock, while: asking)
        let session = Session(
            transport: transport, adapters: [group], retriers: [RetryPolicy(backoff: .zero)], clock: clock)

        // eu asks for two minutes, held at the group's bound: until then the next requests go to us at once, without
        // trying eu first.
        _ = try await session.send(Self.charges)
        asking.withLock { $0 = false }
        if held > .zero {
            let next = try await session.send(Self.charges)
            clock.advance(by: held - .seconds(1))
            let later = try await session.send(Self.charges)
            #expect(next.attempts.map { $0.request?.url?.host } == ["us.api.example.com"])
            #expect(later.attempts.map { $0.request?.url?.host } == ["us.api.example.com"])
            clock.advance(by: .seconds(1))
        }
        // Its quiet over (or none held), eu, first in the failover order, is first again.
        let after = try await session.send(Self.charges)
        #expect(after.attempts.map { $0.request?.url?.host } == ["eu.api.example.com"])
        #expect(group.requestsKept == 0 && group.attemptsInFlight == 0)
    }

    @Test func aNegativeMaximumQuietWrittenInCodeTrapsNamingIt() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = EndpointGroup(
                endpoints: [.init(URL(string: "https://eu.example.com")!)], maximumQuiet: .seconds(-1))
        }
        expectStandardError(of: result, contains: "EndpointGroup.maximumQuiet must be 0 or more, got -1.0 seconds")
    }

    @Test func anEndpointThatAskedForQuietStillTakesAnAttemptWhenNoOtherIsLeft() async throws {
        let clock = ManualClock()
        let breakers = CircuitBreakerRegistry(clock: clock)
        let group = EndpointGroup(endpoints: [.init(Self.eu), .init(Self.us)], breakers: breakers, clock: clock)
        let asking = Locked(true)
        let transport = ScriptedTransport(clock: clock) { request, _ in
            request.url?.host == "eu.api.example.com" && asking.withLock({ $0 })
                ? .response(status: 503, headers: ["Retry-After": "30"]) : .status(200)
        }
        let session = Session(transport: transport, adapters: [group, breakers], clock: clock)
        _ = try? await session.send(Self.charges)
        asking.withLock { $0 = false }
        // us out of rotation too: eu takes the request, though it asked for quiet.
        breakers.breaker(for: "us.api.example.com:8443").forceOpen()
        let next = try await session.send(Self.charges)
        #expect(next.attempts.map { $0.request?.url?.host } == ["eu.api.example.com"])
    }

    @Test(
        "A retry the group leaves on the endpoint that asked for quiet still waits for it, within the deadline",
        .timeLimit(.minutes(1)))
    func aRetryThatStaysOnTheEndpointThatAskedForQuietStillHonoursIt() async throws {
        let clock = ManualClock()
        let breakers = CircuitBreakerRegistry(clock: clock)
        let group = EndpointGroup(endpoints: [.init(Self.eu), .init(Self.us)], breakers: breakers, clock: clock)
        let transport = Self.askingForQuiet(clock)
        let session = Session(
            transport: transport, adapters: [group, breakers], retriers: [RetryPolicy(backoff: .zero)],
            deadline: .seconds(10), clock: clock)
        // us out of rotation: the retry would go to eu again, which asked for two minutes.
        breakers.breaker(for: "us.api.example.com:8443").forceOpen()

        let error = await #expect(throws: ReboundError.self) { try await session.send(Self.charges) }

        #expect(error?.stopReason == .retryAfterPastDeadline)
        #expect(transport.requests.map { $0.url?.host } == ["eu.api.example.com"])
        #expect(group.requestsKept == 0 && group.attemptsInFlight == 0)
    }

    @Test func anEndpointThatKeepsFailingIsEjectedThenTriedAgain() async throws {
        let clock = ManualClock()
        let ejections = Locked<[EndpointGroup.Ejection]>([])
        let group = EndpointGroup(
            name: "payments", endpoints: [.init(Self.eu), .init(Self.us)], clock: clock,
            onEjection: { ejection in ejections.withLock { $0.append(ejection) } })
        let (session, transport) = Self.session(group, clock: clock)

        // Five requests fail at eu and succeed at us; the fifth failure ejects eu.
        for _ in 0..<5 { _ = try await session.send(Self.charges) }
        #expect(transport.requestCount == 10)
        #expect(
            ejections.withLock { $0.map(\.description) } == [
                "endpoint https://eu.api.example.com/v2 of payments ejected for 30 s (consecutiveFailures, ejection 1)"
            ])
        #expect(!group.isInRotation(.init(Self.eu)))

        // Ejected: the next request goes to us at once.
        let direct = try await session.send(Self.charges)
        #expect(direct.attempts.count == 1)
        #expect(direct.attempts[0].request?.url?.host == "us.api.example.com")

        // After the ejection, eu is tried again; it fails, and is ejected for twice as long.
        clock.advance(by: .seconds(30))
        let trial = try await session.send(Self.charges)
        #expect(trial.attempts.map { $0.request?.url?.host } == ["eu.api.example.com", "us.api.example.com"])
        #expect(ejections.withLock { $0.last.map { "\($0.rule) \($0.duration)" } } == "trialFailed 60.0 seconds")
        #expect(group.requestsKept == 0 && group.attemptsInFlight == 0)
    }

    @Test func aGroupGivesBackTheRoomOfABurstOnceItsRequestsEnded() async throws {
        let clock = ManualClock()
        let group = EndpointGroup(endpoints: [.init(Self.eu), .init(Self.us)], clock: clock)
        let (session, transport) = Self.session(group, clock: clock, eu: { _ in .status(200).delayed(by: .seconds(1)) })
        let burst = (0..<200).map { _ in
            Task { try await session.send(URL(string: "https://eu.api.example.com/v2/items")!) }
        }
        try await transport.waitForRequests(200)
        try await clock.waitForSleepers(200)
        #expect(group.requestsKept == 200 && group.routesCapacity >= 200)
        clock.advance(by: .seconds(1))
        for request in burst { _ = try await request.value }
        #expect(group.requestsKept == 0 && group.attemptsInFlight == 0)
        #expect(group.routesCapacity <= 64)
    }

    @Test func aHedgeGoesToAnotherEndpointThanTheAttemptInFlight() async throws {
        let clock = ManualClock()
        let group = EndpointGroup(endpoints: [.init(Self.eu), .init(Self.us)], clock: clock)
        let (session, transport) = Self.session(
            group, clock: clock, hedging: Hedging(delay: .seconds(1)),
            eu: { _ in .status(200).delayed(by: .seconds(10)) })

        let hedged = Task { try await session.send(URL(string: "https://eu.api.example.com/v2/items")!) }
        try await transport.waitForRequests(1)
        try await clock.waitForSleepers(2)
        clock.advance(by: .seconds(1))
        let response = try await hedged.value

        #expect(transport.requests.map { $0.url?.host } == ["eu.api.example.com", "us.api.example.com"])
        #expect(response.request.url?.host == "us.api.example.com")
        #expect(group.requestsKept == 0 && group.attemptsInFlight == 0)
    }

    @Test(
        "A hedge to an endpoint that did not ask for quiet starts at once after another endpoint asked for it",
        .timeLimit(.minutes(1)))
    func aHedgeToAnotherEndpointIsNotHeldByTheQuietOneEndpointAskedFor() async throws {
        let clock = ManualClock()
        let ap = URL(string: "https://ap.api.example.com/v2")!
        let group = EndpointGroup(endpoints: [.init(Self.eu), .init(Self.us), .init(ap)], clock: clock)
        // eu is slow; us answers 503 asking for a minute of quiet; ap answers at once.
        let transport = ScriptedTransport(clock: clock) { request, _ in
            switch request.url?.host {
            case "eu.api.example.com": .status(200).delayed(by: .seconds(10))
            case "us.api.example.com": .response(status: 503, headers: ["Retry-After": "60"])
            default: .status(200)
            }
        }
        let session = Session(
            transport: transport, adapters: [group], retriers: [RetryPolicy(backoff: .zero)],
            hedging: Hedging(delay: .seconds(1), maximumInFlight: 3, maximumAttempts: 3), clock: clock)

        let (task, finished) = Self.send(URL(string: "https://eu.api.example.com/v2/items")!, through: session)
        try await transport.waitForRequests(1)
        try await clock.waitForSleepers(2)
        clock.advance(by: .seconds(1))
        // The hedge after us's 503 goes to ap at once; held for us's minute, it would ask the clock for it.
        try await waitWhile { !finished.withLock { $0 } && !clock.sleeps.contains { $0 > .seconds(10) } }
        task.cancel()
        let response = try await task.value

        #expect(
            transport.requests.map { $0.url?.host } == [
                "eu.api.example.com", "us.api.example.com", "ap.api.example.com",
            ])
        #expect(response.request.url?.host == "ap.api.example.com")
        #expect(group.requestsKept == 0 && group.attemptsInFlight == 0)
    }

    @Test func aHedgeGoesBesideNoAttemptItRacesEvenToAnEndpointWhereTheRequestFailed() async throws {
        let clock = ManualClock()
        let group = EndpointGroup(endpoints: [.init(Self.eu), .init(Self.us)], clock: clock)
        // eu fails at once; us answers after 10 s.
        let transport = ScriptedTransport(clock: clock) { request, _ in
            request.url?.host == "eu.api.example.com" ? .status(503) : .status(200).delayed(by: .seconds(10))
        }
        let session = Session(
            transport: transport, adapters: [group], retriers: [RetryPolicy(backoff: .zero)],
            hedging: Hedging(delay: .seconds(1)), clock: clock)

        let hedged = Task { try await session.send(Self.charges) }
        // The first attempt fails at eu; its retry goes to us, and waits there; its hedge goes to eu, not beside it.
        try await transport.waitForRequests(2)
        try await clock.waitForSleepers(2)
        clock.advance(by: .seconds(1))
        try await transport.waitForRequests(3)
        try await clock.waitForSleepers(1)
        clock.advance(by: .seconds(9))
        let response = try await hedged.value

        let hosts = transport.requests.map { $0.url?.host ?? "-" }
        #expect(hosts == ["eu.api.example.com", "us.api.example.com", "eu.api.example.com"])
        #expect(response.request.url?.host == "us.api.example.com")
        #expect(group.requestsKept == 0 && group.attemptsInFlight == 0)
    }

    @Test(.timeLimit(.minutes(1)))
    func aHedgeIsJudgedByTheBreakerOfTheEndpointItGoesTo() async throws {
        // The first attempt hangs at eu while another request's failure opens eu's breaker: the hedge goes to us, so
        // us's breaker decides, and lets it start.
        let clock = ManualClock()
        let breakers = CircuitBreakerRegistry(
            configuration: .init(tripCondition: .consecutiveFailures(1), openDuration: .seconds(30)), clock: clock)
        let group = EndpointGroup(endpoints: [.init(Self.eu), .init(Self.us)], clock: clock)
        let transport = ScriptedTransport(clock: clock) { request, _ in
            guard request.url?.host == "eu.api.example.com" else { return .status(200) }
            return request.url?.path == "/v2/fails" ? .status(503) : .status(200).delayed(by: .seconds(10))
        }
        let session = Session(
            transport: transport, adapters: [group, breakers], retriers: [RetryPolicy()],
            hedging: Hedging(delay: .seconds(1)), clock: clock)
        let hedged = Task { try await session.send(URL(string: "https://eu.api.example.com/v2/items")!) }
        try await transport.waitForRequests(1)
        try await clock.waitForSleepers(2)
        _ = try? await Session(transport: transport, adapters: [group, breakers], clock: clock)
            .send(URL(string: "https://eu.api.example.com/v2/fails")!)
        #expect(breakers.breaker(for: "eu.api.example.com").state == .open)
        clock.advance(by: .seconds(1))

        let response = try await hedged.value

        #expect(response.attempts.map(\.hedge) == [0, 1])
        #expect(response.request.url?.host == "us.api.example.com")
        #expect(group.requestsKept == 0 && group.attemptsInFlight == 0)
    }

    @Test(.timeLimit(.minutes(1)))
    func anEndpointWhoseHalfOpenBreakerHasItsTrialInFlightTakesNoOtherAttempt() async throws {
        let clock = ManualClock()
        let breakers = CircuitBreakerRegistry(
            configuration: .init(tripCondition: .consecutiveFailures(1), openDuration: .seconds(1)), clock: clock)
        let group = EndpointGroup(endpoints: [.init(Self.eu), .init(Self.us)], breakers: breakers, clock: clock)
        let transport = ScriptedTransport(clock: clock) { request, _ in
            guard request.url?.host == "eu.api.example.com" else { return .status(200) }
            return request.url?.path == "/v2/fails" ? .status(503) : .status(200).delayed(by: .seconds(5))
        }
        let session = Session(transport: transport, adapters: [group, breakers], clock: clock)
        _ = try? await session.send(URL(string: "https://eu.api.example.com/v2/fails")!)
        clock.advance(by: .seconds(1))
        #expect(breakers.breaker(for: "eu.api.example.com").state == .halfOpen)

        // The first request after the break is eu's trial; while it is in flight, the next goes to us.
        let trial = Task { try await session.send(URL(string: "https://eu.api.example.com/v2/items")!) }
        try await transport.waitForRequests(2)
        try await clock.waitForSleepers(1)
        let next = try await session.send(Self.charges)
        #expect(next.request.url?.host == "us.api.example.com")
        clock.advance(by: .seconds(5))
        #expect(try await trial.value.request.url?.host == "eu.api.example.com")
        #expect(breakers.breaker(for: "eu.api.example.com").state == .closed)
        #expect(group.requestsKept == 0 && group.attemptsInFlight == 0)
    }

    @Test(.timeLimit(.minutes(1)))
    func aHedgeTheBreakerOfItsEndpointRefusesDoesNotStartAndLeavesNothing() async throws {
        let clock = ManualClock()
        let breakers = CircuitBreakerRegistry(clock: clock)
        let group = EndpointGroup(endpoints: [.init(Self.eu), .init(Self.us)], clock: clock)
        let transport = ScriptedTransport(clock: clock) { _, _ in .status(200).delayed(by: .seconds(2)) }
        let session = Session(
            transport: transport, adapters: [group, breakers], retriers: [RetryPolicy()],
            hedging: Hedging(delay: .seconds(1)), clock: clock)
        breakers.breaker(for: "us.api.example.com:8443").forceOpen()

        let hedged = Task { try await session.send(URL(string: "https://eu.api.example.com/v2/items")!) }
        try await transport.waitForRequests(1)
        try await clock.waitForSleepers(2)
        // The hedge would go to us, whose breaker refuses it: it does not start, and the first attempt answers.
        clock.advance(by: .seconds(1))
        try await clock.waitForSleepers(1)
        clock.advance(by: .seconds(1))
        let response = try await hedged.value

        #expect(response.attempts.map(\.hedge) == [0])
        #expect(transport.requestCount == 1)
        #expect(group.requestsKept == 0 && group.attemptsInFlight == 0)
    }

    @Test func weightedSelectionDrawsInProportionToTheWeights() async throws {
        let clock = ManualClock()
        let group = EndpointGroup(
            endpoints: [.init(Self.eu, weight: 3), .init(Self.us, weight: 1)], selection: .weighted, clock: clock,
            random: .seeded(11))
        let (session, transport) = Self.session(group, clock: clock, eu: { _ in .status(200) })
        for _ in 0..<400 { _ = try await session.send(Self.charges) }

        let toEU = transport.requests.count { $0.url?.host == "eu.api.example.com" }
        // About 300 of 400 at 3:1 (267 at 2:1, 320 at 4:1); these seeded draws give 298.
        #expect(toEU == 298)
        #expect(group.requestsKept == 0 && group.attemptsInFlight == 0)
    }

    @Test func aRequestThatSucceedsAfterAFailureItsChainAcceptedIsForgotten() async throws {
        // Every attempt counted a failure (a classify of the caller's own), though the chain accepts the 200.
        let clock = ManualClock()
        let group = EndpointGroup(
            endpoints: [.init(Self.eu), .init(Self.us)], outlierDetection: .off, clock: clock,
            classify: { _ in .failure })
        let (session, _) = Self.session(group, clock: clock, eu: { _ in .status(200) })
        _ = try await session.send(Self.charges)
        #expect(group.requestsKept == 0 && group.attemptsInFlight == 0)
    }

    @Test func aBaseURLThatNamesItsSchemesDefaultPortIsKeyedWithoutIt() {
        let endpoint = EndpointGroup.Endpoint(URL(string: "https://EU.api.example.com:443/v2")!)
        #expect(endpoint.baseURL.absoluteString == "https://EU.api.example.com/v2")
        let group = EndpointGroup(endpoints: [endpoint, .init(URL(string: "http://10.0.0.2:80")!)])
        #expect(group.hosts == ["eu.api.example.com", "10.0.0.2"])
    }

    @Test func aRequestUnderNoEndpointGoesThroughUntouched() async throws {
        let clock = ManualClock()
        let group = EndpointGroup(endpoints: [.init(Self.eu), .init(Self.us)], clock: clock)
        let (session, transport) = Self.session(group, clock: clock)
        _ = try await session.send(URL(string: "https://other.example.com/v2/charges")!)
        #expect(transport.requests.map { $0.url?.absoluteString } == ["https://other.example.com/v2/charges"])
        #expect(group.requestsKept == 0 && group.attemptsInFlight == 0)
    }

    @Test func anEndpointWhoseBreakerIsOpenIsOutOfRotation() async throws {
        let clock = ManualClock()
        let breakers = CircuitBreakerRegistry(clock: clock)
        let group = EndpointGroup(endpoints: [.init(Self.eu), .init(Self.us)], breakers: breakers, clock: clock)
        let transport = ScriptedTransport(clock: clock) { _, _ in .status(200) }
        // The group first, the breakers after it: each judges the endpoint's host.
        let session = Session(
            transport: transport, adapters: [group, breakers], retriers: [RetryPolicy()], clock: clock)
        breakers.breaker(for: "eu.api.example.com").forceOpen()

        let response = try await session.send(Self.charges)

        #expect(response.attempts.count == 1)
        #expect(transport.requests.map { $0.url?.host } == ["us.api.example.com"])
    }

    @Test func aRegistryInShadowModeMovesNoAttemptAndTellsWhatItWouldHaveRefused() async throws {
        let clock = ManualClock()
        let breakers = CircuitBreakerRegistry(
            configuration: .init(tripCondition: .consecutiveFailures(1)), clock: clock, enforcement: .shadow)
        let group = EndpointGroup(
            endpoints: [.init(Self.eu), .init(Self.us)], outlierDetection: .off, breakers: breakers, clock: clock)
        let observer = RecordingObserver()
        let (session, transport) = Self.session(group, clock: clock, adapters: [group, breakers])
        breakers.breaker(for: "eu.api.example.com").forceOpen()

        // Enforced, eu's open breaker would send the request to us; in shadow mode it goes to eu as without breakers,
        // and the breaker tells the refusal it would have made there.
        let response = try await session.send(Self.charges, observers: [observer])

        #expect(transport.requests.map { $0.url?.host } == ["eu.api.example.com", "us.api.example.com"])
        #expect(response.attempts.count == 2)
        let refusals = observer.requestOutcomes.flatMap(\.shadowRefusals)
        #expect(refusals.map(\.key) == ["eu.api.example.com"])
        #expect(refusals.map(\.stage) == [.attempt])
    }

    @Test func eachEndpointIsJudgedByItsOwnBreakerAndARetryByTheEndpointItGoesTo() async throws {
        let clock = ManualClock()
        let breakers = CircuitBreakerRegistry(
            configuration: .init(tripCondition: .consecutiveFailures(2)), clock: clock)
        let group = EndpointGroup(endpoints: [.init(Self.eu), .init(Self.us)], breakers: breakers, clock: clock)
        let (session, _) = Self.session(group, clock: clock, adapters: [group, breakers])

        // The second failure at eu opens eu's breaker; its retry goes to us, and us's breaker grants it.
        for _ in 0..<2 { _ = try await session.send(Self.charges) }
        #expect(breakers.breaker(for: "eu.api.example.com").state == .open)
        #expect(breakers.breaker(for: "us.api.example.com:8443").state == .closed)
        // eu's breaker open, its endpoint is out of rotation: the next request goes to us at once.
        let next = try await session.send(Self.charges)
        #expect(next.attempts.map { $0.request?.url?.host } == ["us.api.example.com"])
        #expect(group.requestsKept == 0 && group.attemptsInFlight == 0)
    }

    @Test func withThePresetTheGroupAdaptsFirstAndEachEndpointHasItsOwnParts() async throws {
        let clock = FastForwardClock()
        let resilience = Resilience(clock: clock, random: .seeded(3), deadline: nil)
        let group = EndpointGroup(
            endpoints: [.init(Self.eu), .init(Self.us)], breakers: resilience.breakers, clock: clock)
        let transport = Self.transport(clock)
        let session = Session(transport: transport, resilience: resilience, endpointGroup: group, clock: clock)

        // Every request succeeds at us; after five failures in a row eu is out of rotation (its breaker open, and
        // ejected), and requests go to us at once.
        for _ in 0..<8 { _ = try await session.send(Self.charges) }
        let hosts = transport.requests.map { $0.url?.host ?? "-" }
        #expect(hosts.count { $0 == "eu.api.example.com" } == 5)
        #expect(hosts.count { $0 == "us.api.example.com" } == 8)
        #expect(resilience.breakers.breaker(for: "eu.api.example.com").state != .closed)
        #expect(Set(resilience.breakers.breakers.keys) == ["eu.api.example.com", "us.api.example.com:8443"])
        #expect(group.requestsKept == 0 && group.attemptsInFlight == 0)
    }

    @Test func aHeaderTheCallerSetGoesToEveryEndpointThoughACredentialOfTheSameNameAdaptedAnEarlierAttempt()
        async throws
    {
        let clock = ManualClock()
        let group = EndpointGroup(endpoints: [.init(Self.eu), .init(Self.us)], clock: clock)
        // After the group: it applies its credential to eu only, and registered its scope at the first attempt.
        let auth = AuthenticationInterceptor(
            authenticator: TokenAuthenticator(), credential: Token(value: 1), hosts: ["eu.api.example.com"])
        let (session, transport) = Self.session(group, clock: clock, adapters: [group, auth])
        var charges = URLRequest(url: Self.charges)
        charges.setValue("Caller", forHTTPHeaderField: "Authorization")
        _ = try await session.send(charges)

        let sent = transport.requests.map { ($0.url?.host ?? "-", $0.value(forHTTPHeaderField: "Authorization")) }
        #expect(sent.map(\.0) == ["eu.api.example.com", "us.api.example.com"])
        #expect(sent.map(\.1) == ["Bearer 1", "Caller"])
    }

    @Test func aMoveAPartCannotTellTheCredentialsOfDropsWhatARedirectToAnotherOriginDrops() throws {
        var request = URLRequest(url: URL(string: "https://us.api.example.com:8443/v2/charges")!)
        request.setValue("Bearer 1", forHTTPHeaderField: "Authorization")
        request.setValue("a=1", forHTTPHeaderField: "cookie")
        request.setValue("kept", forHTTPHeaderField: "X-Caller")
        var moved = request
        Redirection.secureMove(&moved, from: Self.charges, scopes: nil, applied: [])
        #expect(moved.value(forHTTPHeaderField: "Authorization") == nil)
        #expect(moved.value(forHTTPHeaderField: "Cookie") == nil)
        #expect(moved.value(forHTTPHeaderField: "X-Caller") == "kept")
        // Within one origin, nothing is dropped.
        var same = request
        Redirection.secureMove(
            &same, from: URL(string: "https://us.api.example.com:8443/v1")!, scopes: nil, applied: [])
        #expect(same.value(forHTTPHeaderField: "Authorization") == "Bearer 1")
        // Known scopes: only a credential one of them applied is dropped.
        var caller = request
        Redirection.secureMove(&caller, from: Self.charges, scopes: [], applied: [])
        #expect(caller.value(forHTTPHeaderField: "Authorization") == "Bearer 1")
    }

    @Test func aRequestUnderNestedBaseURLsIsUnderTheLongest() async throws {
        let clock = ManualClock()
        let root = URL(string: "https://api.example.com")!
        let backup = URL(string: "https://api.example.com/backup")!
        let group = EndpointGroup(name: "api", endpoints: [.init(root), .init(backup)], clock: clock)
        let observer = RecordingObserver()
        let session = Session(
            transport: ScriptedTransport(clock: clock) { _, _ in .status(200) }, adapters: [group],
            observers: [observer], clock: clock)
        _ = try await session.send(URL(string: "https://api.example.com/backup/items")!)
        _ = try await session.send(URL(string: "https://api.example.com/items")!)
        // Each goes to the first endpoint in rotation, its path kept after its own base.
        #expect(
            observer.outcomes.map { $0.request.url?.absoluteString } == [
                "https://api.example.com/items", "https://api.example.com/items",
            ])
        #expect(observer.outcomes.map { $0.endpoint?.baseURL } == [root, root])
    }

    @Test(arguments: [false, true])
    func aRequestIsRoutedByTheFirstGroupThatCoversItAndALaterOneLetsItThrough(usFirst: Bool) async throws {
        let clock = ManualClock()
        // Two groups over the same endpoints, in opposite orders: the first in the chain routes.
        let euFirst = EndpointGroup(name: "eu-first", endpoints: [.init(Self.eu), .init(Self.us)], clock: clock)
        let usFirstGroup = EndpointGroup(name: "us-first", endpoints: [.init(Self.us), .init(Self.eu)], clock: clock)
        let observer = RecordingObserver()
        // Only us fails: a request the second group moved there would fail and count against the first group's eu.
        let transport = Self.transport(clock, failing: "us.api.example.com")
        let session = Session(
            transport: transport, adapters: usFirst ? [usFirstGroup, euFirst] : [euFirst, usFirstGroup],
            retriers: [RetryPolicy(backoff: .zero)], observers: [observer], clock: clock)

        let response = try await session.send(Self.charges)

        let hosts = transport.requests.map { $0.url?.host }
        let heard = observer.outcomes.map { $0.endpointGroup }
        if usFirst {
            // The first group sends the first attempt to us and its retry to eu; the second group moves neither.
            #expect(hosts == ["us.api.example.com", "eu.api.example.com"])
            #expect(heard == ["us-first", "us-first"])
        } else {
            #expect(hosts == ["eu.api.example.com"])
            #expect(heard == ["eu-first"])
        }
        #expect(response.attempts.count == hosts.count)
        // The group that routed judged the endpoints its attempts went to; the other kept nothing and ejected none.
        for group in [euFirst, usFirstGroup] {
            #expect(group.requestsKept == 0 && group.attemptsInFlight == 0)
            #expect(group.endpoints.allSatisfy { group.isInRotation($0) })
        }
    }

    @Test func aGroupTheChainHoldsTwiceLeavesAnAttemptWhereItsFirstPassSentIt() async throws {
        let clock = ManualClock()
        let group = EndpointGroup(endpoints: [.init(Self.eu), .init(Self.us)], clock: clock)
        let (session, transport) = Self.session(group, clock: clock, adapters: [group, group])

        _ = try await session.send(Self.charges)

        // The first attempt stays at eu, where the first pass sent it, and its retry goes to us.
        #expect(transport.requests.map { $0.url?.host } == ["eu.api.example.com", "us.api.example.com"])
        #expect(group.requestsKept == 0 && group.attemptsInFlight == 0)
    }

    @Test func theErrorNamesTheEndpointItsLastAttemptWasSentTo() async throws {
        let clock = ManualClock()
        let group = EndpointGroup(endpoints: [.init(Self.eu), .init(Self.us)], clock: clock)
        let session = Session(
            transport: ScriptedTransport(clock: clock) { _, _ in .status(503) }, adapters: [group],
            retriers: [RetryPolicy(retryLimit: 1, backoff: .zero)], clock: clock)

        let error = await #expect(throws: ReboundError.self) { try await session.send(Self.charges) }

        // The request was written for eu; its retry went to us, and failed there too. The query value stays hidden.
        #expect(
            error?.description
                == "GET https://eu.api.example.com/v2/charges?customer=<redacted>#top: attempt 2 (sent to "
                + "us.api.example.com:8443) failed with status 503; not retried: retry limit reached (2 attempts)")
    }

    @Test func observersHearTheGroupAndTheEndpointOfEachAttemptItSent() async throws {
        let clock = ManualClock()
        let group = EndpointGroup(name: "payments", endpoints: [.init(Self.eu), .init(Self.us)], clock: clock)
        let observer = RecordingObserver()
        let transport = Self.transport(clock)
        let session = Session(
            transport: transport, adapters: [group], retriers: [RetryPolicy(backoff: .zero)], observers: [observer],
            clock: clock)
        _ = try await session.send(Self.charges)
        // A request under none of the group's endpoints is not routed.
        _ = try await session.send(URL(string: "https://other.example.com/v2/charges")!)

        let heard = observer.outcomes.map { ($0.endpointGroup, $0.endpoint?.description) }
        #expect(heard.map(\.0) == ["payments", "payments", nil])
        #expect(heard.map(\.1) == ["https://eu.api.example.com/v2", "https://us.api.example.com:8443/v2/", nil])
    }

    @Test func aBreakerAndAThrottleClassifyEachAttemptWithTheEndpointTheGroupSentItTo() async throws {
        let clock = ManualClock()
        let group = EndpointGroup(name: "payments", endpoints: [.init(Self.eu), .init(Self.us)], clock: clock)
        let seen = Locked<[String]>([])
        func classify(_ part: String) -> @Sendable (AttemptOutcome) -> CircuitBreaker.Verdict {
            { outcome in
                seen.withLock {
                    $0.append("\(part) \(outcome.endpointGroup ?? "-") \(outcome.endpoint?.description ?? "-")")
                }
                return CircuitBreaker.defaultVerdict(for: outcome)
            }
        }
        let breaker = CircuitBreaker(configuration: .init(classify: classify("breaker")), clock: clock)
        let throttle = AdaptiveThrottle(clock: clock, classify: classify("throttle"))
        let (session, _) = Self.session(group, clock: clock, adapters: [group, breaker, throttle])
        _ = try await session.send(Self.charges)
        // The 503, counted as its retry is asked for, and the 200, settled after it: each with where it went.
        let (eu, us) = ("https://eu.api.example.com/v2", "https://us.api.example.com:8443/v2/")
        #expect(
            seen.withLock { $0 }.sorted() == [
                "breaker payments \(eu)", "breaker payments \(us)", "throttle payments \(eu)",
                "throttle payments \(us)",
            ])
    }

    @Test func aCredentialGivenTheGroupsHostsReachesItsEndpointsOnly() async throws {
        let clock = ManualClock()
        let group = EndpointGroup(endpoints: [.init(Self.eu), .init(Self.us)], clock: clock)
        #expect(group.hosts == ["eu.api.example.com", "us.api.example.com:8443"])
        let auth = AuthenticationInterceptor(
            authenticator: TokenAuthenticator(), credential: Token(value: 1), hosts: group.hosts)
        let transport = ScriptedTransport(clock: clock) { request, _ in
            // eu fails; us redirects once to a host outside the group.
            switch request.url?.host {
            case "eu.api.example.com": .status(503)
            case "us.api.example.com": .response(status: 302, headers: ["Location": "https://cdn.example.net/x"])
            default: .status(200)
            }
        }
        let session = Session(
            transport: transport, adapters: [group], retriers: [RetryPolicy(backoff: .zero)], interceptor: auth,
            clock: clock)
        _ = try await session.send(Self.charges)

        let sent = transport.requests.map { ($0.url?.host ?? "-", $0.value(forHTTPHeaderField: "Authorization")) }
        #expect(sent.map(\.0) == ["eu.api.example.com", "us.api.example.com", "cdn.example.net"])
        #expect(sent.map(\.1) == ["Bearer 1", "Bearer 1", nil])
    }

    @Test(arguments: [nil, 2] as [Int?])
    func aCredentialTheGroupMovesIsTakenOffThoughItChangedMeanwhile(replacement: Int?) async throws {
        let clock = ManualClock()
        let group = EndpointGroup(endpoints: [.init(Self.eu), .init(Self.us)], clock: clock)
        let auth = AuthenticationInterceptor(
            authenticator: TokenAuthenticator(), credential: Token(value: 1), hosts: ["eu.api.example.com"])
        // Between the credential's adapt and the group's move of the retry to us: a logout, or a refresh.
        let change = Adapter.modifying { _, context in
            if context.attempt == 2 { auth.credential = replacement.map { Token(value: $0) } }
        }
        let (session, transport) = Self.session(group, clock: clock, adapters: [auth, change, group])
        _ = try await session.send(Self.charges)

        let sent = transport.requests.map { ($0.url?.host ?? "-", $0.value(forHTTPHeaderField: "Authorization")) }
        #expect(sent.map(\.0) == ["eu.api.example.com", "us.api.example.com"])
        // The credential applied at eu never reaches us, which is not one of its hosts.
        #expect(sent.map(\.1) == ["Bearer 1", nil])
    }

    @Test(arguments: [false, true])
    func aCredentialThatAdaptsBeforeTheGroupReachesAnotherEndpointOnlyIfItIsOneOfItsHosts(givenHosts: Bool) async throws
    {
        let clock = ManualClock()
        let group = EndpointGroup(endpoints: [.init(Self.eu), .init(Self.us)], clock: clock)
        // Without hosts, the credential belongs to the host of the first request it adapts: the caller's, eu.
        let auth = AuthenticationInterceptor(
            authenticator: TokenAuthenticator(), credential: Token(value: 1), hosts: givenHosts ? group.hosts : nil)
        let (session, transport) = Self.session(group, clock: clock, adapters: [auth, group])
        var charges = URLRequest(url: Self.charges)
        charges.setValue("caller", forHTTPHeaderField: "X-Caller")
        _ = try await session.send(charges)

        let sent = transport.requests.map { ($0.url?.host ?? "-", $0.value(forHTTPHeaderField: "Authorization")) }
        #expect(sent.map(\.0) == ["eu.api.example.com", "us.api.example.com"])
        #expect(sent.map(\.1) == ["Bearer 1", givenHosts ? "Bearer 1" : nil])
        // What the caller set goes to every endpoint of the group.
        #expect(transport.requests.allSatisfy { $0.value(forHTTPHeaderField: "X-Caller") == "caller" })
    }

    @Test func aCredentialTheGroupMovesFromHTTPSToAClearTextEndpointIsTakenOffAndNotAppliedAgain() async throws {
        let clock = ManualClock()
        let plain = URL(string: "http://us.api.example.com/v2")!
        let group = EndpointGroup(endpoints: [.init(Self.eu), .init(plain)], clock: clock)
        let auth = AuthenticationInterceptor(
            authenticator: TokenAuthenticator(), credential: Token(value: 1), hosts: group.hosts)
        let (session, transport) = Self.session(group, clock: clock, adapters: [auth, group])
        _ = try await session.send(Self.charges)

        // Applied at eu over https; the retry the group moves to plain http carries none, though us is in scope.
        let sent = transport.requests.map { ($0.url?.scheme ?? "-", $0.value(forHTTPHeaderField: "Authorization")) }
        #expect(sent.map(\.0) == ["https", "http"])
        #expect(sent.map(\.1) == ["Bearer 1", nil])
    }
}
