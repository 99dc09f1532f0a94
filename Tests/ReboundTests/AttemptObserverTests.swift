import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An observer that records a short line for every outcome it is told.
final class RecordingObserver: AttemptObserver, RequestInterceptor {
    let name: String
    private let entries = Locked<[AttemptOutcome]>([])
    private let requestEnds = Locked<[RequestOutcome]>([])

    init(_ name: String = "observer") { self.name = name }

    func attemptDidFinish(_ outcome: AttemptOutcome) async {
        entries.withLock { $0.append(outcome) }
    }

    func requestDidFinish(_ outcome: RequestOutcome) async {
        requestEnds.withLock { $0.append(outcome) }
    }

    /// `succeeded after 2`, `failed after 3`, `cancelled after 1`: each request's end and its attempt count.
    var ends: [String] {
        requestEnds.withLock { $0 }.map { outcome in
            let how = outcome.succeeded ? "succeeded" : outcome.isCancelled ? "cancelled" : "failed"
            return "\(how) after \(outcome.attempts.count)"
        }
    }

    var outcomes: [AttemptOutcome] { entries.withLock { $0 } }

    var requestOutcomes: [RequestOutcome] { requestEnds.withLock { $0 } }

    /// `#1 503 retry 1 s`, `#2 200 succeeded`, `#1 - cancelled`…
    var lines: [String] {
        outcomes.map { outcome in
            let status = outcome.statusCode.map(String.init) ?? "-"
            let decision: String
            switch outcome.decision {
            case .succeeded: decision = "succeeded"
            case .retry(let delay): decision = "retry \(delay)"
            case .failed: decision = "failed \(outcome.error?.attemptCount ?? 0)"
            case .cancelled: decision = "cancelled"
            }
            return "#\(outcome.attempt.number) \(status) \(decision)"
        }
    }
}

struct ObserverTestError: NonRetryableError {}

@Suite("Attempt observers and inspectors", .timeLimit(.minutes(5)))
struct AttemptObserverTests {
    @Test func toldOnceOfEveryAttemptWithTheDecision() async throws {
        let observer = RecordingObserver()
        let transport = ScriptedTransport([.status(503), .urlError(.timedOut), .status(200)])
        let session = Session(
            transport: transport,
            interceptor: Interceptor(retriers: [retryAnything(limit: 5, delay: .seconds(1))], observers: [observer]),
            clock: FastForwardClock())

        _ = try await session.send(request())

        #expect(observer.lines == ["#1 503 retry 1.0 seconds", "#2 - retry 1.0 seconds", "#3 200 succeeded"])
        #expect(observer.outcomes[1].failure?.urlError?.code == .timedOut)
        #expect(Set(observer.outcomes.map(\.requestID)).count == 1)
    }

    @Test func toldOfTheFinalFailureWithTheErrorTheCallerGets() async throws {
        let observer = RecordingObserver()
        let session = Session(
            transport: ScriptedTransport([.status(500), .status(502)]),
            interceptor: Interceptor(retriers: [retryAnything(limit: 1)], observers: [observer]),
            clock: FastForwardClock())

        let thrown = await #expect(throws: ReboundError.self) { try await session.send(request()) }

        #expect(observer.lines == ["#1 500 retry 0.0 seconds", "#2 502 failed 2"])
        let told = try #require(observer.outcomes.last?.error)
        #expect(observer.outcomes.last?.decision == .failed)
        #expect(told.statusCode == thrown?.statusCode)
    }

    @Test func toldOfAnAttemptCutShortByCancellation() async throws {
        let observer = RecordingObserver()
        let transport = ScriptedTransport([.hang])
        let session = Session(
            transport: transport, interceptor: Interceptor(observers: [observer]), clock: FastForwardClock())

        let task = Task { try await session.send(request()) }
        try await transport.waitForRequests(1)
        task.cancel()

        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(observer.lines == ["#1 - cancelled"])
        #expect(observer.outcomes[0].isCancelled)
        #expect(observer.outcomes[0].attempt.request != nil)
    }

    @Test func toldWithTheElapsedTimeAcrossAttempts() async throws {
        let clock = ManualClock()
        let observer = RecordingObserver()
        let transport = ScriptedTransport([.status(503).delayed(by: .seconds(2)), .status(200)], clock: clock)
        let session = Session(
            transport: transport,
            interceptor: Interceptor(retriers: [retryAnything(limit: 1, delay: .seconds(3))], observers: [observer]),
            clock: clock)

        let task = Task { try await session.send(request()) }
        try await clock.waitForSleepers(1)
        clock.advance(by: .seconds(2))
        try await clock.waitForSleeps(2)
        clock.advance(by: .seconds(3))
        _ = try await task.value

        #expect(observer.outcomes.map(\.elapsed) == [.seconds(2), .seconds(5)])
        #expect(observer.outcomes.map(\.attempt.duration) == [.seconds(2), .zero])
    }

    @Test func observersAreToldInTheOrderTheyJoinedTheRequestAndDuplicatesOnce() async throws {
        let log = Log()
        struct Named: AttemptObserver {
            let name: String
            let log: Log
            func attemptDidFinish(_ outcome: AttemptOutcome) async { log.append(name) }
        }
        let shared = RecordingObserver("shared")
        let session = Session(
            transport: ScriptedTransport([.status(200)]),
            interceptor: Interceptor(
                adapters: [shared], retriers: [shared],
                interceptors: [Interceptor(observers: [Named(name: "nested", log: log)])],
                observers: [Named(name: "session", log: log), shared]),
            clock: FastForwardClock())

        _ = try await session.send(request(), interceptor: Interceptor(observers: [Named(name: "request", log: log)]))

        // The session's interceptor registers its own observers, then adapts through the nested one; the request's
        // interceptor adapts after the session's.
        #expect(log.all == ["session", "nested", "request"])
        #expect(shared.outcomes.count == 1)
    }

    /// The session's `observers:` and a request's own are told, the session's first; another request of the same
    /// session hears only the session's; one instance in both is told once.
    @Test func aRequestsOwnObserversFollowTheSessionsAndStayItsOwn() async throws {
        let log = Log()
        struct Named: AttemptObserver {
            let name: String
            let log: Log
            func attemptDidFinish(_ outcome: AttemptOutcome) async { log.append("\(name) #\(outcome.attempt.number)") }
        }
        let both = RecordingObserver("both")
        let session = Session(
            transport: ScriptedTransport([.status(503), .status(200), .status(200)]),
            retriers: [retryAnything(limit: 1)], observers: [Named(name: "session", log: log), both],
            clock: FastForwardClock())

        _ = try await session.send(request(), observers: [Named(name: "request", log: log), both])
        _ = try await session.send(request())

        #expect(log.all == ["session #1", "request #1", "session #2", "request #2", "session #1"])
        #expect(both.lines == ["#1 503 retry 0.0 seconds", "#2 200 succeeded", "#1 200 succeeded"])
    }

    @Test func anObserverInBothTheSessionsAndTheRequestsInterceptorIsToldOnce() async throws {
        let shared = RecordingObserver("shared")
        let own = RecordingObserver("own")
        let session = Session(
            transport: ScriptedTransport([.status(503), .status(200)]),
            interceptor: Interceptor(retriers: [retryAnything(limit: 3, delay: .zero)], observers: [shared]),
            clock: FastForwardClock())

        _ = try await session.send(request(), interceptor: Interceptor(observers: [own, shared]))

        #expect(shared.lines == ["#1 503 retry 0.0 seconds", "#2 200 succeeded"])
        #expect(own.lines == shared.lines)
    }

    @Test func aBudgetInBothTheSessionsAndTheRequestsInterceptorIsChargedOnce() async throws {
        // Five retry tokens for each failure, ten to start with: two retries, if each is charged once.
        let budget = RetryBudget(
            configuration: .init(initialTokens: 10, maximumTokens: 10, retryCost: 5, successReward: 0))
        let session = Session(
            transport: ScriptedTransport([.status(503), .status(503), .status(200)]),
            adapters: [budget], retriers: [retryAnything(limit: 5, delay: .zero)], clock: FastForwardClock())

        let response = try await session.send(request(), adapters: [budget])

        #expect(response.retryCount == 2)
    }

    @Test func aPartIsToldOnlyInTheRolesItIsGivenOrRegistersNeverForItsType() async throws {
        let unregistered = RecordingObserver()
        let registering = RegisteringObserver()
        let session = Session(
            transport: ScriptedTransport([.status(200)]), adapters: [registering], interceptor: unregistered,
            clock: FastForwardClock())

        _ = try await session.send(request())
        _ = try? await session.send(request())  // the script is exhausted: a transport failure

        #expect(unregistered.lines.isEmpty)
        #expect(registering.recorded.lines == ["#1 200 succeeded", "#1 - failed 1"])
    }

    @Test func aNonRetryableErrorIsNotOfferedToRetriers() async throws {
        let log = Log()
        let failing = Adapter { _, _ in throw ObserverTestError() }
        let session = Session(
            transport: ScriptedTransport([.status(200)]),
            interceptor: Interceptor(adapters: [failing], retriers: [loggingRetrier("r", log: log, answer: .retry)]),
            clock: FastForwardClock())

        let error = await #expect(throws: ReboundError.self) { try await session.send(request()) }

        #expect(log.all.isEmpty)
        #expect(error?.underlyingError is ObserverTestError)
        #expect(error?.reason.isNonRetryable == true)
    }

    /// An observer that joins each request it adapts.
    final class RegisteringObserver: RequestAdapter, AttemptObserver {
        let recorded = RecordingObserver()
        func adapt(_ request: consuming URLRequest, context: RequestContext) async throws -> URLRequest {
            context.observe(self)
            return request
        }
        func attemptDidFinish(_ outcome: AttemptOutcome) async { await recorded.attemptDidFinish(outcome) }
    }

    // MARK: - Validators in the chain

    final class RejectsBody: ResponseValidator, RequestInterceptor {
        let body: String
        let log: Log
        init(body: String, log: Log) {
            self.body = body
            self.log = log
        }
        func adapt(_ request: consuming URLRequest, context: RequestContext) async throws -> URLRequest {
            context.validateResponses(with: self)
            context.validateResponses(with: self)  // twice: still once per response
            return request
        }
        func validate(_ head: ResponseHead, data: Data, context: RequestContext) throws {
            log.append("inspect #\(context.attempt)")
            if String(decoding: data, as: UTF8.self) == body { throw TestError("bad body") }
        }
    }

    @Test func aValidatorInTheChainTurnsAnAcceptedResponseIntoAFailureForTheRetriers() async throws {
        let log = Log()
        let transport = ScriptedTransport([.response(body: "bad"), .response(body: "good")])
        let session = Session(
            transport: transport,
            interceptor: Interceptor(
                retriers: [retryAnything(limit: 1)], interceptors: [RejectsBody(body: "bad", log: log)]),
            clock: FastForwardClock())

        let response = try await session.send(request())

        #expect(String(decoding: response.data, as: UTF8.self) == "good")
        #expect(log.all == ["inspect #1", "inspect #2"])
        guard case .validationFailed(let error as TestError) = response.attempts[0].failure else {
            Issue.record("first attempt: \(String(describing: response.attempts[0].failure))")
            return
        }
        #expect(error == TestError("bad body"))
    }

    @Test func aValidatorInTheChainDoesNotSeeResponsesTheValidatorInEffectRejected() async throws {
        let log = Log()
        let session = Session(
            transport: ScriptedTransport([.response(status: 500, body: "bad")]),
            interceptor: RejectsBody(body: "bad", log: log), clock: FastForwardClock())

        let error = await #expect(throws: ReboundError.self) { try await session.send(request()) }

        #expect(log.all.isEmpty)
        #expect(error?.statusCode == 500)
    }

    @Test func aRequestsInspectorRunsAfterTheSessions() async throws {
        let log = Log()
        let session = Session(
            transport: ScriptedTransport([.response(body: "ok")]),
            interceptor: RejectsBody(body: "x", log: log), clock: FastForwardClock())

        _ = try await session.send(request(), interceptor: RejectsBody(body: "y", log: log))

        #expect(log.all == ["inspect #1", "inspect #1"])
    }
}
