import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("RateLimitQuota: reading the quota a response advertises", .timeLimit(.minutes(5)))
struct RateLimitQuotaTests {
    private func head(_ fields: [(String, String)]) -> ResponseHead {
        ResponseHead(url: exampleURL, statusCode: 200, headerFields: fields)
    }

    @Test(
        arguments: [
            // The IETF fields.
            ([("RateLimit", "\"default\";r=0;t=30")], RateLimitQuota(remaining: 0, resetsIn: .seconds(30))),
            (
                [("RateLimit", "\"default\";r=7;t=60"), ("RateLimit-Policy", "\"default\";q=100;w=60")],
                RateLimitQuota(remaining: 7, resetsIn: .seconds(60), limit: 100, window: .seconds(60))
            ),
            // Two quotas: the spent one binds, whatever the other says.
            (
                [("RateLimit", "\"burst\";r=5;t=1, \"daily\";r=0;t=3600")],
                RateLimitQuota(remaining: 0, resetsIn: .seconds(3_600))
            ),
            (
                [("RateLimit", "burst;r=9;t=1, daily;r=2;t=3600")],
                RateLimitQuota(remaining: 2, resetsIn: .seconds(3_600))
            ),
            // The earlier drafts.
            (
                [("RateLimit", "limit=100, remaining=0, reset=30")],
                RateLimitQuota(remaining: 0, resetsIn: .seconds(30), limit: 100)
            ),
            (
                [("RateLimit-Limit", "10"), ("RateLimit-Remaining", "3"), ("RateLimit-Reset", "12")],
                RateLimitQuota(remaining: 3, resetsIn: .seconds(12), limit: 10)
            ),
            // The X-RateLimit- fields: seconds, a fraction of them, or a Unix time from the response's Date.
            (
                [("X-RateLimit-Limit", "60"), ("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", "45")],
                RateLimitQuota(remaining: 0, resetsIn: .seconds(45), limit: 60)
            ),
            (
                [("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset-After", "1.5")],
                RateLimitQuota(remaining: 0, resetsIn: .milliseconds(1_500))
            ),
            (
                [
                    ("Date", "Sat, 28 Nov 2026 10:00:00 GMT"), ("X-RateLimit-Remaining", "0"),
                    ("X-RateLimit-Reset", "1795860030"),
                ],
                RateLimitQuota(remaining: 0, resetsIn: .seconds(30))
            ),
        ] as [([(String, String)], RateLimitQuota?)])
    func readsEachSpelling(fields: [(String, String)], expected: RateLimitQuota?) {
        #expect(RateLimitQuota(head(fields)) == expected, "\(fields)")
    }

    @Test(arguments: [
        [("RateLimit", "\"default\";r=-1;t=30")],
        [("RateLimit", "\"default\";r=1e3;t=30")],
        [("RateLimit", "\"default\";r=0")],
        [("RateLimit", "\"default;r=0;t=30")],
        [("RateLimit", "limit=100, remaining=none, reset=30")],
        [("RateLimit", "")],
        [("RateLimit-Remaining", "0")],
        [("RateLimit-Remaining", "0"), ("RateLimit-Reset", "soon")],
        [("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", "99999999999999999999999")],
        [("X-RateLimit-Remaining", "٣"), ("X-RateLimit-Reset", "30")],
        [("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset-After", "1.5.2")],
        [("X-RateLimit-Limit", "60")],
    ])
    func aMalformedFieldIsNoSignal(fields: [(String, String)]) {
        #expect(RateLimitQuota(head(fields)) == nil, "\(fields)")
    }

    @Test(arguments: ["\"d\";q=0;w=60", "\"d\";q=10;w=0", "\"d\";q=0;w=0"])
    func aPolicyWithAQuotaOrAWindowOfZeroIsNoSignal(policy: String) {
        // A window that never grants a request, or a window of no length, would hold a host for good: the policy is
        // left out, and the quota read as if the server had sent none.
        let quota = RateLimitQuota(head([("RateLimit", "\"d\";r=0;t=5"), ("RateLimit-Policy", policy)]))

        #expect(quota == RateLimitQuota(remaining: 0, resetsIn: .seconds(5)), "\(policy)")
    }

    @Test func ofAHugeListOnlyTheFirstMembersAreRead() {
        // 10,000 quotas: the 16th (index 15) binds among the first 16; the 17th, spent for an hour, is past the bound.
        let quotas = (0..<10_000).map { index in
            switch index {
            case 15: "\"q15\";r=1;t=2"
            case 16: "\"q16\";r=0;t=3600"
            default: "\"q\(index)\";r=5;t=1"
            }
        }
        // The policy of q15 comes 17th in its field: past the bound, not read.
        let policies = (0..<16).map { "\"p\($0)\";q=1;w=1" } + ["\"q15\";q=9;w=9"]
        let fields = [
            ("RateLimit", quotas.joined(separator: ", ")),
            ("RateLimit-Policy", (policies + Array(repeating: "\"x\";q=1;w=1", count: 10_000)).joined(separator: ", ")),
        ]

        #expect(RateLimitQuota(head(fields)) == RateLimitQuota(remaining: 1, resetsIn: .seconds(2)))
    }

    @Test func aMemberPastAFieldsFirst4096BytesIsNotRead() {
        /// A spent quota padded to `length` bytes with a parameter of its own.
        func padded(to length: Int) -> String {
            let start = "\"b\";r=0;t=9;note=\""
            return start + String(repeating: "x", count: length - start.utf8.count - 1) + "\""
        }
        let first = "\"a\";r=3;t=5, "

        // The second member ends within the first 4,096 bytes: read, and it binds.
        #expect(
            RateLimitQuota(head([("RateLimit", first + padded(to: 4_096 - first.utf8.count))]))
                == RateLimitQuota(remaining: 0, resetsIn: .seconds(9)))
        // It ends one byte past them: it is not read, the first member is.
        #expect(
            RateLimitQuota(head([("RateLimit", first + padded(to: 4_097 - first.utf8.count))]))
                == RateLimitQuota(remaining: 3, resetsIn: .seconds(5)))
        // A field whose first member ends past them has nothing to read.
        #expect(RateLimitQuota(head([("RateLimit", padded(to: 5_000))])) == nil)
    }

    @Test func absurdValuesAreHeldAtAYear() throws {
        let quota = try #require(RateLimitQuota(head([("RateLimit", "\"d\";r=0;t=999999999999999999")])))

        #expect(quota.resetsIn == .seconds(86_400 * 366))
        #expect("\(quota)" == "0 left, renewed in 31622400 s")
    }
}

@Suite("RateLimitPacer", .timeLimit(.minutes(5)))
struct RateLimitPacerTests {
    let clock = ManualClock()

    private func quota(_ remaining: Int, resetsIn seconds: Int, status: Int = 200) -> ScriptedTransport.Step {
        .response(status: status, headers: ["RateLimit": "\"default\";r=\(remaining);t=\(seconds)"])
    }

    @Test func aSpentQuotaHoldsTheNextRequestUntilItIsRenewed() async throws {
        let pacer = RateLimitPacer(clock: clock)
        let transport = ScriptedTransport([quota(0, resetsIn: 10), .status(200)], clock: clock)
        let session = Session(transport: transport, adapters: [pacer], clock: clock)

        _ = try await session.send(request())
        #expect(pacer.quota(for: "api.example.com") == RateLimitQuota(remaining: 0, resetsIn: .seconds(10)))
        let task = Task { try await session.send(request()) }
        try await clock.waitForSleepers(1)
        #expect(transport.requestCount == 1)  // held, not sent
        clock.advance(by: .seconds(10))
        _ = try await task.value

        #expect(transport.requestCount == 2)
        #expect(clock.sleeps == [.seconds(10)])
    }

    @Test func concurrentRequestsDoNotOverdrawTheQuotaTheLastResponseGave() async throws {
        let pacer = RateLimitPacer(clock: clock)
        let transport = ScriptedTransport(
            [quota(2, resetsIn: 5)] + Array(repeating: .status(200), count: 3), clock: clock)
        let session = Session(transport: transport, adapters: [pacer], clock: clock)
        _ = try await session.send(request())

        let tasks = (0..<3).map { _ in Task { try await session.send(request()) } }
        try await transport.waitForRequests(3)
        try await clock.waitForSleepers(1)
        #expect(transport.requestCount == 3)  // two sent, one held
        clock.advance(by: .seconds(5))
        for task in tasks { _ = try await task.value }

        #expect(transport.requestCount == 4)
    }

    @Test func manyConcurrentRequestsAgainstAQuotaWithAKnownWindowDrawNo429() async throws {
        guard #available(macOS 15.0, iOS 18.0, macCatalyst 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) else {
            return
        }
        // On a simulation, one job at a time: the clock moves only once everything it set off has settled, so no
        // request is on its way to the server while a window turns.
        let simulation = Simulation()
        let (statuses, throttled, sent, ended) = await simulation.run {
            [clock] () async -> ([Int], Int, Int, Duration) in
            // The server: 3 requests per second-long window, said in the IETF fields; 429 past them.
            let windows = Locked([Int: Int]())
            let throttled = Locked(0)
            let transport = ScriptedTransport(clock: clock) { _, _ in
                let now = clock.now.offset
                let window = Int((now / .seconds(1)).rounded(.down))
                let seconds = Int(((Duration.seconds(window + 1) - now) / .seconds(1)).rounded(.up))
                let used = windows.withLock { windows -> Int in
                    windows[window, default: 0] += 1
                    return windows[window]!
                }
                let policy = "\"q\";q=3;w=1"
                guard used <= 3 else {
                    throttled.withLock { $0 += 1 }
                    return .response(
                        status: 429, headers: ["RateLimit-Policy": policy, "RateLimit": "\"q\";r=0;t=\(seconds)"])
                }
                return .response(
                    headers: ["RateLimit-Policy": policy, "RateLimit": "\"q\";r=\(3 - used);t=\(seconds)"])
            }
            let session = Session(transport: transport, adapters: [RateLimitPacer(clock: clock)], clock: clock)
            _ = try? await session.send(request())  // the first response tells the quota
            let statuses = Locked([Int]())
            for _ in 0..<12 {
                Task(executorPreference: simulation.executor) {
                    let status = (try? await session.send(request()))?.statusCode ?? 0
                    statuses.withLock { $0.append(status) }
                }
            }
            await simulation.settle()
            while let next = clock.nextDeadline {
                clock.advance(to: next)
                await simulation.settle()
            }
            return (statuses.withLock { $0 }, throttled.withLock { $0 }, transport.requestCount, clock.now.offset)
        }

        #expect(statuses == Array(repeating: 200, count: 12))
        #expect(throttled == 0)
        #expect(sent == 13)
        #expect(ended == .seconds(4))  // 13 requests at 3 a second: the fifth window
    }

    @Test func aResponsesCountLeavesOutTheRequestsStillInFlight() async throws {
        let pacer = RateLimitPacer(clock: clock)
        let gate = Gate()
        let transport = ScriptedTransport(clock: clock) { _, number in
            if number == 2 { await gate.wait() }
            return number == 1 ? self.quota(3, resetsIn: 10) : .response(headers: ["RateLimit": "\"d\";r=2;t=10"])
        }
        let session = Session(transport: transport, adapters: [pacer], clock: clock)
        _ = try await session.send(request())  // 3 left

        let held = Task { try await session.send(request()) }  // the second request, in flight until the gate opens
        try await transport.waitForRequests(2)
        _ = try await session.send(request())  // the third: its response says 2 left, of which one is in flight

        #expect(pacer.quota(for: "api.example.com")?.remaining == 1)
        await gate.open()
        _ = try await held.value
    }

    @Test func anAttemptIsCountedInFlightOnlyUntilItsAnswerAndItsQuotaIsReadThen() async throws {
        let pacer = RateLimitPacer(clock: clock)
        // The first request's answer says 5 left, and its retrier takes 10 s to decide; the second's, sent meanwhile,
        // says 1 left.
        let transport = ScriptedTransport(clock: clock) { request, _ in
            request.url?.path == "/slow-decision"
                ? self.quota(5, resetsIn: 60, status: 503) : self.quota(1, resetsIn: 60)
        }
        let deciding = Retrier { [clock] _, _ in
            try? await clock.sleep(for: .seconds(10))
            return .doNotRetry
        }
        let session = Session(transport: transport, adapters: [pacer], retriers: [deciding], clock: clock)
        let first = Task {
            try await session.send(URLRequest(url: URL(string: "https://api.example.com/slow-decision")!))
        }
        try await clock.waitForSleepers(1)
        _ = try await session.send(request())

        // The first attempt has its answer: it is no longer in flight, so the 1 left is 1 left.
        #expect(pacer.quota(for: "api.example.com")?.remaining == 1)
        clock.advance(by: .seconds(10))
        _ = try? await first.value
        // Its answer was read when it came: the decision's end does not bring its older quota back.
        #expect(pacer.quota(for: "api.example.com")?.remaining == 1)
        #expect(pacer.requestsKept == 0)
    }

    @Test func aRenewalPastTheMaximumWaitFailsTheRequestAtOnceWithoutSendingIt() async throws {
        let pacer = RateLimitPacer(maximumWait: .seconds(30), clock: clock)
        let transport = ScriptedTransport([quota(0, resetsIn: 45), .status(200)], clock: clock)
        let session = Session(transport: transport, adapters: [pacer], retriers: [RetryPolicy()], clock: clock)
        _ = try await session.send(request())

        let error = try await #require(throws: ReboundError.self) { try await session.send(request()) }

        guard case .adaptationFailed(let spent as RateLimitQuotaSpent) = error.reason else {
            Issue.record("reason: \(error.reason)")
            return
        }
        #expect(spent == RateLimitQuotaSpent(key: "api.example.com", renewedIn: .seconds(45)))
        #expect("\(spent)" == "rate limit quota for api.example.com spent: renewed in 45 s")
        #expect(transport.requestCount == 1)
        #expect(clock.sleeps.isEmpty)
    }

    @Test func aRenewalPastTheDeadlineFailsTheRequestAtOnceAndOneBeforeItIsWaitedFor() async throws {
        let pacer = RateLimitPacer(clock: clock)
        let transport = ScriptedTransport(
            [quota(0, resetsIn: 20), quota(0, resetsIn: 5), .status(200)], clock: clock)
        let session = Session(transport: transport, adapters: [pacer], deadline: .seconds(10), clock: clock)
        _ = try await session.send(request())

        // Renewed in 20 s, past the 10 s deadline: the request ends now, nothing sent, the clock not moved.
        let error = try await #require(throws: ReboundError.self) { try await session.send(request()) }
        guard case .adaptationFailed(let spent as RateLimitQuotaSpent) = error.reason else {
            Issue.record("reason: \(error.reason)")
            return
        }
        #expect(spent.renewedIn == .seconds(20))
        #expect(transport.requestCount == 1)
        #expect(clock.now.offset == .zero)

        // Renewed in 5 s, within the deadline: the request waits for it, then goes.
        clock.advance(by: .seconds(20))
        _ = try await session.send(request())  // its response says: none left, renewed in 5 s
        let held = Task { try await session.send(request()) }
        try await waitForSleep(of: .seconds(5), on: clock)
        #expect(transport.requestCount == 2)
        clock.advance(by: .seconds(5))
        #expect(try await held.value.statusCode == 200)
        #expect(transport.requestCount == 3)
    }

    @Test func eachHostHasItsOwnQuotaAndAHostThatAdvertisesNoneIsNeverHeld() async throws {
        let pacer = RateLimitPacer(clock: clock)
        let transport = ScriptedTransport(clock: clock) { request, _ in
            request.url?.host == "api.example.com" ? .response(headers: ["RateLimit": "\"d\";r=0;t=60"]) : .status(200)
        }
        let session = Session(transport: transport, adapters: [pacer], clock: clock)
        let other = URLRequest(url: URL(string: "https://other.example.com/")!)

        _ = try await session.send(request())
        for _ in 0..<3 { _ = try await session.send(other) }

        #expect(transport.requestCount == 4)
        #expect(pacer.quota(for: "other.example.com") == nil)
        #expect(clock.sleeps.isEmpty)
    }

    @Test func aRetryAfterA429IsPacedByTheQuotaItAdvertises() async throws {
        let pacer = RateLimitPacer(clock: clock)
        let transport = ScriptedTransport([quota(0, resetsIn: 3, status: 429), .status(200)], clock: clock)
        let session = Session(
            transport: transport, adapters: [pacer],
            retriers: [RetryPolicy(retryableHTTPStatusCodes: [429], backoff: .zero)],
            clock: clock)

        let task = Task { try await session.send(request()) }
        try await clock.waitForSleepers(1)
        clock.advance(by: .seconds(3))
        let response = try await task.value

        #expect(response.statusCode == 200)
        #expect(clock.sleeps == [.seconds(3)])
    }

    @Test func cancellingAHeldRequestEndsItAndSendsNothing() async throws {
        let pacer = RateLimitPacer(clock: clock)
        let transport = ScriptedTransport([quota(0, resetsIn: 10), .status(200)], clock: clock)
        let session = Session(transport: transport, adapters: [pacer], clock: clock)
        _ = try await session.send(request())

        let task = Task { try await session.send(request()) }
        try await clock.waitForSleepers(1)
        task.cancel()

        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(transport.requestCount == 1)
        #expect(pacer.requestsKept == 0)
    }

    @Test func aRenewedQuotaIsNotHeldUntilAResponseSaysItAgain() async throws {
        let pacer = RateLimitPacer(clock: clock)
        let transport = ScriptedTransport(
            [quota(0, resetsIn: 1)] + Array(repeating: .status(200), count: 3), clock: clock)
        let session = Session(transport: transport, adapters: [pacer], clock: clock)
        _ = try await session.send(request())

        clock.advance(by: .seconds(1))
        for _ in 0..<3 { _ = try await session.send(request()) }

        #expect(transport.requestCount == 4)
        #expect(clock.sleeps.isEmpty)
        #expect(pacer.quota(for: "api.example.com") == nil)
    }

    @Test func behindAWrapperThatMakesItsOwnContextNothingIsCountedInFlightForGood() async throws {
        let pacer = RateLimitPacer(clock: clock)
        // A decorator that hands the pacer a context of its own, through which nothing registers: the pacer never
        // hears how those attempts end (the session's observers tell it under the request's own identifier).
        let wrapper = Adapter { request, context in
            try await pacer.adapt(request, context: RequestContext(attempt: context.attempt))
        }
        let transport = ScriptedTransport(clock: clock) { _, _ in self.quota(10, resetsIn: 60) }
        let session = Session(transport: transport, adapters: [wrapper], observers: [pacer], clock: clock)

        for _ in 0..<3 { _ = try await session.send(request()) }

        // Each response's count stands as the server gave it: no attempt is counted as still in flight.
        #expect(pacer.quota(for: "api.example.com")?.remaining == 10)
        #expect(pacer.requestsKept == 0)
        #expect(clock.sleeps.isEmpty)
    }

    /// A transport whose every response says 3 requests are left, renewed in `seconds`, without a policy; a request
    /// named in `holding` (its `X-Name`) is held until its gate opens.
    private func threeLeft(renewedIn seconds: Int, holding: [String: Gate]) -> ScriptedTransport {
        ScriptedTransport(clock: clock) { request, _ in
            if let gate = request.value(forHTTPHeaderField: "X-Name").flatMap({ holding[$0] }) { await gate.wait() }
            return .response(headers: ["RateLimit": "\"d\";r=3;t=\(seconds)"])
        }
    }

    /// The example request, named `name` in its `X-Name` field.
    private func named(_ name: String) -> URLRequest {
        var request = request()
        request.setValue(name, forHTTPHeaderField: "X-Name")
        return request
    }

    @Test func anAttemptInFlightAcrossARenewalIsNotSubtractedFromTheNextQuota() async throws {
        let pacer = RateLimitPacer(clock: clock)
        let holdA = Gate()
        let holdD = Gate()
        // No policy in the fields: at a renewal the pacer lets the host go until a response says its quota again.
        let transport = threeLeft(renewedIn: 10, holding: ["a": holdA, "d": holdD])
        let session = Session(transport: transport, adapters: [pacer], clock: clock)
        _ = try await session.send(named("first"))
        let a = Task { try await session.send(named("a")) }  // in flight across the renewal
        try await transport.waitForRequests(2)
        clock.advance(by: .seconds(10))
        _ = try await session.send(named("c"))  // after the renewal: its response says the quota again
        let d = Task { try await session.send(named("d")) }  // in flight against the new quota
        try await transport.waitForRequests(4)

        await holdA.open()
        _ = try await a.value
        // A's end lowers nothing of the new quota's count: D is still in flight, so 3 left less D.
        #expect(pacer.quota(for: "api.example.com")?.remaining == 2)
        await holdD.open()
        _ = try await d.value
        #expect(pacer.requestsKept == 0)
    }

    @Test func anAttemptInFlightWhenItsHostIsForgottenIsNotSubtractedFromTheHostsNextQuota() async throws {
        // Room for one host: the second host's quota makes the pacer forget the first.
        let pacer = RateLimitPacer(clock: clock, maximumHosts: 1)
        let holdFirst = Gate()
        let holdSecond = Gate()
        let transport = threeLeft(renewedIn: 60, holding: ["first": holdFirst, "second": holdSecond])
        let session = Session(transport: transport, adapters: [pacer], clock: clock)
        let other = URLRequest(url: URL(string: "https://other.example.com/")!)

        _ = try await session.send(request())
        let first = Task { try await session.send(named("first")) }  // in flight against the first record
        try await transport.waitForRequests(2)
        _ = try await session.send(other)  // the other host takes the only place
        _ = try await session.send(request())  // heard again: a new record
        let second = Task { try await session.send(named("second")) }  // in flight against the new record
        try await transport.waitForRequests(5)

        await holdFirst.open()
        _ = try await first.value
        // The first's end lowers nothing of the new record's count: the second is still in flight, so 3 less 1.
        #expect(pacer.quota(for: "api.example.com")?.remaining == 2)
        await holdSecond.open()
        _ = try await second.value
        #expect(pacer.requestsKept == 0)
    }

    @Test func beforeAnAdapterThatMovesRequestsToAnotherHostItPacesByTheHostTheyAreSentTo() async throws {
        let pacer = RateLimitPacer(clock: clock)
        // Every request goes to one real host, whichever host it names.
        let moving = movingAdapter()
        let transport = ScriptedTransport([quota(1, resetsIn: 10), .status(200), .status(200)], clock: clock)
        let session = Session(transport: transport, adapters: [pacer, moving], clock: clock)

        _ = try await session.send(URL(string: "https://a.example.com/items")!)
        // The quota is the real host's: one request left, taken by a request naming another host.
        try #require(pacer.quota(for: "real.example.com") == RateLimitQuota(remaining: 1, resetsIn: .seconds(10)))
        #expect(pacer.quota(for: "a.example.com") == nil)
        _ = try await session.send(URL(string: "https://b.example.com/items")!)
        #expect(pacer.quota(for: "real.example.com")?.remaining == 0)
        let held = Task { try await session.send(URL(string: "https://c.example.com/items")!) }
        try await clock.waitForSleepers(1)
        #expect(transport.requestCount == 2)  // held: the real host's quota is spent
        clock.advance(by: .seconds(10))
        _ = try await held.value

        #expect(transport.requests.map { $0.url?.host } == Array(repeating: "real.example.com", count: 3))
        #expect(pacer.requestsKept == 0)
    }

    @Test func anAttemptThatReachesThePacerAfterTheDeadlineEndedItsRequestIsNotCountedForGood() async throws {
        let pacer = RateLimitPacer(clock: clock)
        let stubborn = Gate()
        // An adapter before the pacer that holds the request named "late", ignoring cancellation: the deadline ends
        // the request while its attempt's task goes on, and reaches the pacer after the request ended.
        let holding = Adapter { request, _ in
            if request.value(forHTTPHeaderField: "X-Name") == "late" { await stubborn.wait() }
            return request
        }
        let transport = threeLeft(renewedIn: 60, holding: [:])
        let session = Session(
            transport: transport, adapters: [holding, pacer], deadline: .seconds(1), clock: clock)
        _ = try await session.send(request())  // the host's quota is known: 3 left

        let late = Task { try await session.send(named("late")) }
        try await clock.waitForSleepers(1)  // the deadline's timer
        clock.advance(by: .seconds(1))
        let error = await #expect(throws: ReboundError.self) { try await late.value }
        #expect(error?.stopReason == .deadline)
        await stubborn.open()
        try await transport.waitForRequests(2)  // past the pacer, which let it through

        // Taken from the quota, but not counted in flight: the pacer would never hear it end.
        #expect(pacer.requestsKept == 0)
        #expect(pacer.quota(for: "api.example.com")?.remaining == 2)
    }

    // MARK: - Bounds on what a server can make the pacer keep or do

    @Test func maximumWaitBoundsARequestsWholeWaitAcrossItsAttempts() async throws {
        let pacer = RateLimitPacer(maximumWait: .seconds(3), clock: clock)
        // Each answer: none left, renewed in 2 s; the request's first attempt draws a 429, which is retried.
        let transport = ScriptedTransport(
            [quota(0, resetsIn: 2), quota(0, resetsIn: 2, status: 429), .status(200)], clock: clock)
        let session = Session(
            transport: transport, adapters: [pacer],
            retriers: [RetryPolicy(retryableHTTPStatusCodes: [429], backoff: .zero)], clock: clock)
        _ = try await session.send(request())

        let finished = Locked(false)
        let task = Task {
            defer { finished.withLock { $0 = true } }
            return try await session.send(request())
        }
        try await clock.waitForSleepers(1)
        clock.advance(by: .seconds(2))  // the first attempt waited 2 s of its 3, and draws the 429
        try await waitWhile { !finished.withLock { $0 } && clock.pendingSleepCount == 0 }
        #expect(clock.pendingSleepCount == 0, "the retry waits for the next renewal")
        clock.advance(by: .seconds(2))  // a retry that waits (not the pacer's way) ends instead of holding the test
        let error = try await #require(throws: ReboundError.self) { try await task.value }

        // Its retry would wait 2 s more, past what is left of its 3 s: it fails at once, not sent.
        guard case .adaptationFailed(let spent as RateLimitQuotaSpent) = error.reason else {
            Issue.record("reason: \(error.reason)")
            return
        }
        #expect(spent.renewedIn == .seconds(2))
        #expect(error.attempts.count == 2)
        #expect(transport.requestCount == 2)
        #expect(clock.sleeps == [.seconds(2)])
        #expect(pacer.requestsKept == 0)
    }

    @Test func maximumWaitBoundsARequestsWholeWaitAcrossSuccessiveRenewals() async throws {
        guard #available(macOS 15.0, iOS 18.0, macCatalyst 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) else {
            return
        }
        let simulation = Simulation()
        let pacer = RateLimitPacer(maximumWait: .seconds(3), clock: clock)
        let (outcomes, throttled) = await simulation.run { [clock] () async -> ([(Int?, Duration)], Int) in
            // The server: 2 requests per second-long window, said in the IETF fields; 429 past them.
            let windows = Locked([Int: Int]())
            let throttled = Locked(0)
            let transport = ScriptedTransport(clock: clock) { _, _ in
                let now = clock.now.offset
                let window = Int((now / .seconds(1)).rounded(.down))
                let used = windows.withLock { windows -> Int in
                    windows[window, default: 0] += 1
                    return windows[window]!
                }
                let fields = ["RateLimit-Policy": "\"q\";q=2;w=1", "RateLimit": "\"q\";r=\(max(2 - used, 0));t=1"]
                guard used <= 2 else {
                    throttled.withLock { $0 += 1 }
                    return .response(status: 429, headers: fields)
                }
                return .response(headers: fields)
            }
            let session = Session(transport: transport, adapters: [pacer], clock: clock)
            _ = try? await session.send(request())  // the first response tells the quota: 1 left in this window
            // 20 requests at once, each ending with its status (nil: the pacer refused it) and the time.
            let outcomes = Locked([(Int?, Duration)]())
            for _ in 0..<20 {
                Task(executorPreference: simulation.executor) {
                    var status: Int?
                    do {
                        status = try await session.send(request()).statusCode
                    } catch let error as ReboundError {
                        if case .adaptationFailed(is RateLimitQuotaSpent) = error.reason {
                            status = nil
                        } else {
                            status = 0
                        }
                    } catch {
                        status = 0
                    }
                    outcomes.withLock { $0.append((status, clock.now.offset)) }
                }
            }
            await simulation.settle()
            while let next = clock.nextDeadline {
                clock.advance(to: next)
                await simulation.settle()
            }
            return (outcomes.withLock { $0 }, throttled.withLock { $0 })
        }

        // One goes at once, two at each of the renewals at 1, 2 and 3 s; the others have waited 3 s by then, and
        // another renewal is past their maximumWait: they fail at 3 s at the latest.
        #expect(outcomes.count == 20)
        #expect(outcomes.filter { $0.0 == 200 }.count == 7)
        #expect(outcomes.filter { $0.0 == nil }.count == 13)
        #expect(outcomes.allSatisfy { $0.1 <= .seconds(3) }, "\(outcomes.map(\.1))")
        #expect(throttled == 0)
        #expect(pacer.requestsKept == 0)
    }

    @Test func aRequestThatWaitedAndIsCancelledInItsNextWaitLeavesNothingKept() async throws {
        let pacer = RateLimitPacer(clock: clock)
        let transport = ScriptedTransport(
            [quota(0, resetsIn: 1), quota(0, resetsIn: 1, status: 429), .status(200)], clock: clock)
        let session = Session(
            transport: transport, adapters: [pacer],
            retriers: [RetryPolicy(retryableHTTPStatusCodes: [429], backoff: .zero)], clock: clock)
        _ = try await session.send(request())

        let task = Task { try await session.send(request()) }
        try await clock.waitForSleepers(1)
        clock.advance(by: .seconds(1))  // it waited 1 s, is sent, draws a 429, and waits again for its retry
        try await transport.waitForRequests(2)
        try await clock.waitForSleepers(1)
        task.cancel()

        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(transport.requestCount == 2)
        #expect(pacer.requestsKept == 0)
    }

    @Test(arguments: ["\"d\";q=0;w=1", "\"d\";q=5;w=0"])
    func aPolicyOfZeroHoldsNoRequest(policy: String) async throws {
        let pacer = RateLimitPacer(clock: clock)
        let transport = ScriptedTransport(
            [.response(headers: ["RateLimit": "\"d\";r=0;t=1", "RateLimit-Policy": policy]), .status(200)],
            clock: clock)
        let session = Session(transport: transport, adapters: [pacer], clock: clock)
        _ = try await session.send(request())
        #expect(pacer.quota(for: "api.example.com") == RateLimitQuota(remaining: 0, resetsIn: .seconds(1)))

        // Past the renewal, the host is let go as without a policy: no window that never grants one holds it.
        clock.advance(by: .seconds(1))
        let task = Task { try await session.send(request()) }
        try await waitWhile { transport.requestCount < 2 && clock.pendingSleepCount == 0 }

        #expect(transport.requestCount == 2)
        #expect(clock.sleeps.isEmpty)
        task.cancel()
        _ = try? await task.value
    }

    @Test(arguments: [
        ["RateLimit": "\"d\";r=0;t=86400"],
        ["RateLimit": "\"d\";r=0;t=86400", "RateLimit-Policy": "\"d\";q=100;w=86400"],
        ["Date": "Sat, 28 Nov 2026 10:00:00 GMT", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1795946400"],
    ])
    func oneResponseHoldsAHostNoLongerThanMaximumHold(fields: [String: String]) async throws {
        #expect(RateLimitPacer.defaultMaximumHold == .seconds(60))
        let pacer = RateLimitPacer(maximumWait: .seconds(90), clock: clock, maximumHold: .seconds(60))
        let transport = ScriptedTransport([.response(headers: fields), .status(200)], clock: clock)
        let session = Session(transport: transport, adapters: [pacer], clock: clock)
        _ = try await session.send(request())  // the quota is spent for a day, it says

        let held = try #require(pacer.quota(for: "api.example.com"))
        #expect(held.resetsIn == .seconds(60), "\(fields)")
        #expect(held.window == (fields["RateLimit-Policy"] == nil ? nil : .seconds(60)))
        // The next request waits for the renewal at the bound, then goes.
        let task = Task { try await session.send(request()) }
        try await clock.waitForSleepers(1)
        clock.advance(by: .seconds(60))
        #expect(try await task.value.statusCode == 200)
        #expect(clock.sleeps == [.seconds(60)])
    }

    @Test func anInvalidMaximumHoldWrittenInCodeTrapsNamingIt() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = RateLimitPacer(maximumHold: .seconds(-1))
        }

        expectStandardError(of: result, contains: "RateLimitPacer.maximumHold must be 0 or more")
    }

    @Test func aForgottenHostIsNotHeldAndItsQuotaIsReadAfresh() async throws {
        let pacer = RateLimitPacer(clock: clock)
        let transport = ScriptedTransport(clock: clock) { _, number in
            number <= 2 ? .response(headers: ["RateLimit": "\"d\";r=0;t=50"]) : .status(200)
        }
        let session = Session(transport: transport, adapters: [pacer], clock: clock)
        let other = URLRequest(url: URL(string: "https://other.example.com/")!)
        _ = try await session.send(request())
        _ = try await session.send(other)

        pacer.forgetQuota(for: "api.example.com")
        #expect(pacer.quota(for: "api.example.com") == nil)
        #expect(pacer.quota(for: "other.example.com") != nil)
        _ = try await session.send(request())  // not held
        pacer.forgetAllQuotas()
        _ = try await session.send(other)  // not held

        #expect(transport.requestCount == 4)
        #expect(clock.sleeps.isEmpty)
        #expect(pacer.hostsKept == 0)
    }

    @Test func aHostIdlePastItsRenewalIsForgottenThoughNoNewHostComes() async throws {
        let pacer = RateLimitPacer(clock: clock)
        let transport = ScriptedTransport(clock: clock) { request, _ in
            switch request.url?.host {
            case "api.example.com":
                .response(headers: ["RateLimit": "\"d\";r=5;t=1", "RateLimit-Policy": "\"d\";q=5;w=1"])
            case "slow.example.com": .response(headers: ["RateLimit": "\"d\";r=5;t=60"])
            default: .status(200)
            }
        }
        let session = Session(transport: transport, adapters: [pacer], clock: clock)
        let other = URLRequest(url: URL(string: "https://other.example.com/")!)
        _ = try await session.send(request())
        _ = try await session.send(URLRequest(url: URL(string: "https://slow.example.com/")!))
        #expect(pacer.hostsKept == 2)

        // Past the first host's renewal, requests go only to a host that advertises nothing (no new host is kept).
        clock.advance(by: .seconds(2))
        for _ in 0..<4 { _ = try await session.send(other) }

        // The host renewed with nothing in flight is forgotten; the one renewed in a minute is kept.
        #expect(pacer.hostsKept == 1)
        #expect(pacer.quota(for: "slow.example.com")?.remaining == 5)
    }
}
