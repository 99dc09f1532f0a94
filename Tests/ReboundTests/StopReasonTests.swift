import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Why a request stopped", .timeLimit(.minutes(5)))
struct StopReasonTests {
    /// Sends one request on `session` and returns the error it failed with.
    private func failure(of session: Session, _ request: URLRequest = request()) async -> ReboundError? {
        do {
            _ = try await session.send(request)
            Issue.record("the request succeeded")
            return nil
        } catch {
            return error as? ReboundError
        }
    }

    @Test("The preset's repeated-failure rule is named in the error, the request's outcome and the log's last line")
    func thePresetNamesTheRepeatedFailure() async throws {
        let resilience = Resilience(clock: ManualClock(), random: .seeded(1), deadline: nil)
        let log = EventLog()
        let observer = RecordingObserver()
        let session = Session(
            transport: ScriptedTransport([.status(503), .status(503), .status(200)]), resilience: resilience,
            interceptor: LoggingRetrier(sink: log.sink), observers: [observer], clock: FastForwardClock())

        let error = await failure(of: session)

        #expect(error?.attemptCount == 2)
        #expect(error?.stopReason == .repeatedFailure)
        #expect(
            error?.description.hasSuffix(
                "attempt 2 failed with status 503; not retried: the last two attempts failed the same way (2 attempts)")
                == true)
        #expect(observer.requestOutcomes.map(\.stopReason) == [.repeatedFailure])
        #expect(log.events.map(\.stopReason) == [nil, .repeatedFailure])
        #expect(
            log.messages.last?.contains("giving up after 2 attempts: the last two attempts failed the same way") == true
        )
    }

    @Test("RetryPolicy alone retries the same failure, and names its limit when the retries are used")
    func theRetryLimitIsNamed() async throws {
        let session = Session(
            transport: ScriptedTransport([.status(503), .status(503), .status(503)]), retriers: [RetryPolicy()],
            clock: FastForwardClock())

        let error = await failure(of: session)

        #expect(error?.attemptCount == 3)
        #expect(error?.stopReason == .retryLimit)
        #expect(error?.description.hasSuffix("status 503; not retried: retry limit reached (3 attempts)") == true)
    }

    @Test("A failure no retrier retries is notRetried, and its description says only that")
    func aFailureNobodyRetriesIsNotRetried() async throws {
        let session = Session(
            transport: ScriptedTransport([.status(404)]), retriers: [RetryPolicy()], clock: FastForwardClock())

        let error = await failure(of: session)

        #expect(error?.stopReason == .notRetried)
        #expect(error?.description.hasSuffix("failed with status 404; not retried (1 attempt)") == true)
    }

    @Test("RetryPolicy answers why it declines a failure it would retry, and declines others plainly")
    func thePolicysAnswers() async throws {
        /// The question after attempts that failed with `statuses`, in order.
        func question(_ statuses: [Int]) -> (RetryRequest, ReboundError) {
            let sent = request()
            let attempts = statuses.enumerated().map { index, status in
                Attempt(
                    number: index + 1, request: sent,
                    response: HTTPURLResponse(url: exampleURL, statusCode: status, httpVersion: nil, headerFields: nil),
                    failure: .unacceptableStatusCode(status), duration: .zero)
            }
            let retry = RetryRequest(
                originalRequest: sent, lastRequest: sent, response: attempts.last?.response, attempts: attempts)
            return (retry, ReboundError(reason: .unacceptableStatusCode(statuses.last ?? 0), originalRequest: sent))
        }

        let (twoFailures, after502) = question([503, 502])
        let limited = await RetryPolicy(retryLimit: 1).retry(twoFailures, dueTo: after502)
        let (sameTwice, after503) = question([503, 503])
        let repeated = await RetryPolicy(stopsAfterRepeatedFailure: true).retry(sameTwice, dueTo: after503)
        let (notFoundOnce, after404) = question([404])
        let notFound = await RetryPolicy(retryLimit: 0).retry(notFoundOnce, dueTo: after404)

        guard case .doNotRetryBecause(.retryLimit) = limited else { Issue.record("\(limited)"); return }
        guard case .doNotRetryBecause(.repeatedFailure) = repeated else { Issue.record("\(repeated)"); return }
        guard case .doNotRetry = notFound else { Issue.record("\(notFound)"); return }
        #expect(limited.passesOn && repeated.passesOn && notFound.passesOn)
        #expect("\(repeated)" == "do not retry: the last two attempts failed the same way")
    }

    @Test("A reason given passes on to the next retrier, which may still retry; the first reason given wins")
    func aReasonPassesOn() async throws {
        let log = Log()
        let stopped = Interceptor(
            retriers: [
                loggingRetrier("limit", log: log, answer: .doNotRetryBecause(.retryLimit)),
                loggingRetrier("repeat", log: log, answer: .doNotRetryBecause(.repeatedFailure)),
                loggingRetrier("plain", log: log, answer: .doNotRetry),
            ])
        let retried = Interceptor(
            retriers: [
                loggingRetrier("limit", log: log, answer: .doNotRetryBecause(.retryLimit)),
                retryAnything(limit: 1),
            ])

        let first = await failure(
            of: Session(
                transport: ScriptedTransport([.status(500)]), interceptor: stopped, clock: FastForwardClock()))
        let second = try await Session(
            transport: ScriptedTransport([.status(500), .status(200)]), interceptor: retried,
            clock: FastForwardClock()
        ).send(request())

        #expect(first?.stopReason == .retryLimit)
        #expect(log.all == ["retry limit #0", "retry repeat #0", "retry plain #0", "retry limit #0"])
        #expect(second.retryCount == 1)
    }

    @Test("A gate's refusal, an open breaker and a retrier's own error are each named")
    func gatesBreakersAndRetrierErrors() async throws {
        let budget = RetryBudget(configuration: .init(initialTokens: 0))
        let refusedByBudget = await failure(
            of: Session(
                transport: ScriptedTransport([.status(503)]), adapters: [budget], retriers: [RetryPolicy()],
                clock: FastForwardClock()))

        let breaker = CircuitBreaker(key: "api", configuration: .thirtySeconds, clock: ManualClock())
        breaker.forceOpen()
        let refusedByBreaker = await failure(
            of: Session(
                transport: ScriptedTransport([.status(200)]), adapters: [breaker], retriers: [RetryPolicy()],
                clock: FastForwardClock()))

        let stoppedByRetrier = await failure(
            of: Session(
                transport: ScriptedTransport([.status(503)]),
                retriers: [Retrier { _, _ in .doNotRetryWithError(TestError("mine")) }], clock: FastForwardClock()))

        #expect(refusedByBudget?.stopReason == .retryBudget)
        #expect(refusedByBreaker?.stopReason == .circuitOpen)
        #expect(stoppedByRetrier?.stopReason == .retrierError)
        #expect(stoppedByRetrier?.retrierError as? TestError == TestError("mine"))
    }

    @Test("The deadline is the rule when a backoff would end after it or an attempt runs into it")
    func theDeadline() async throws {
        let clock = ManualClock()
        let pastTheDeadline = await failure(
            of: Session(
                transport: ScriptedTransport([.status(503)]),
                retriers: [Retrier { _, _ in .retryWithDelay(.seconds(5)) }], deadline: .seconds(2), clock: clock))

        let transport = ScriptedTransport([.hang])
        let session = Session(transport: transport, retriers: [RetryPolicy()], deadline: .seconds(2), clock: clock)
        let task = Task { try await session.send(request()) }
        try await transport.waitForRequests(1)
        try await clock.waitForSleepers(1)
        clock.advance(by: .seconds(2))
        let cutShort = try await #require(throws: ReboundError.self) { try await task.value }

        #expect(pastTheDeadline?.stopReason == .deadline)
        #expect(cutShort.stopReason == .deadline)
    }

    @Test("A request whose body is a stream is not retried, for that reason")
    func aStreamBody() async throws {
        var streamed = request(.put)
        streamed.httpBodyStream = InputStream(data: Data("body".utf8))

        let error = await failure(
            of: Session(
                transport: ScriptedTransport([.status(503)]), retriers: [retryAnything(limit: 2)],
                clock: FastForwardClock()),
            streamed)

        #expect(error?.stopReason == .bodyNotReplayable)
    }

    @Test("Every reason has a distinct name from a closed set")
    func namesAreDistinct() {
        let all: [StopReason] = [
            .notRetried, .retryLimit, .repeatedFailure, .retryAfterPastDeadline, .serverAskedNoRetry, .deadline,
            .retryBudget, .circuitOpen, .rateLimited, .throttled, .concurrencyLimit, .bodyNotReplayable, .retrierError,
        ]
        #expect(Set(all.map(\.name)).count == all.count)
        #expect(all.allSatisfy { $0.name.allSatisfy { $0.isLetter } })
    }
}
