import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Session", .timeLimit(.minutes(5)))
struct SessionTests {
    // MARK: - Success and records

    @Test func returnsBodyResponseFinalRequestAndAttempts() async throws {
        let transport = ScriptedTransport([.response(status: 201, headers: ["X-Id": "7"], body: "made")])
        let session = Session(
            transport: transport, interceptor: Interceptor(adapters: [taggingAdapter("a", log: Log())]),
            clock: FastForwardClock())

        let response = try await session.send(request(.post))

        #expect(response.statusCode == 201)
        #expect(String(decoding: response.data, as: UTF8.self) == "made")
        #expect(response.value(forHTTPHeaderField: "x-id") == "7")
        #expect(response.request.value(forHTTPHeaderField: "X-Adapters") == "a")
        #expect(response.originalRequest.value(forHTTPHeaderField: "X-Adapters") == nil)
        #expect(response.attempts.count == 1)
        #expect(response.attempts[0].succeeded)
        #expect(response.attempts[0].statusCode == 201)
        #expect(response.retryCount == 0)
    }

    @Test func recordsEveryAttemptWithItsFailureDurationAndDelay() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport(
            [.status(503).delayed(by: .milliseconds(30)), .urlError(.timedOut), .status(200)], clock: clock)
        let session = Session(
            transport: transport, retriers: [retryAnything(limit: 5, delay: .seconds(1))], clock: clock)

        let task = Task { try await session.send(request()) }
        try await clock.waitForSleepers(1)  // the transport's 30 ms
        clock.advance(by: .milliseconds(30))
        try await clock.waitForSleeps(2)  // the first backoff
        clock.advance(by: .seconds(1))
        try await clock.waitForSleeps(3)  // the second backoff
        clock.advance(by: .seconds(1))
        let response = try await task.value

        let attempts = response.attempts
        #expect(attempts.map(\.number) == [1, 2, 3])
        #expect(attempts.map(\.statusCode) == [503, nil, 200])
        #expect(attempts.map(\.duration) == [.milliseconds(30), .zero, .zero])
        #expect(attempts.map(\.retryDelay) == [.seconds(1), .seconds(1), nil])
        guard case .unacceptableStatusCode(503) = attempts[0].failure else {
            Issue.record("first attempt: \(String(describing: attempts[0].failure))")
            return
        }
        #expect(attempts[1].failure?.urlError?.code == .timedOut)
        #expect(attempts[1].request != nil && attempts[1].response == nil)
    }

    @Test func conveniencesBuildTheRequestFromURLMethodHeadersAndBody() async throws {
        let transport = ScriptedTransport([.status(200)])
        let session = Session(transport: transport, clock: FastForwardClock())

        _ = try await session.send(
            exampleURL, method: .put, headers: ["Content-Type": "text/plain"], body: Data("hi".utf8))

        let sent = try #require(transport.requests.first)
        #expect(sent.httpMethod == "PUT")
        #expect(sent.url == exampleURL)
        #expect(sent.value(forHTTPHeaderField: "Content-Type") == "text/plain")
        #expect(sent.httpBody == Data("hi".utf8))
    }

    @Test func decodesAJSONBody() async throws {
        struct Item: Decodable, Equatable { let id: Int }
        let session = Session(transport: ScriptedTransport([.response(body: #"{"id": 4}"#)]), clock: FastForwardClock())

        let item: Item = try await session.send(exampleURL).decode()

        #expect(item == Item(id: 4))
    }

    @Test func decodingFailureKeepsTheDecoderErrorAndTheResponse() async throws {
        struct Item: Decodable { let id: Int }
        let session = Session(transport: ScriptedTransport([.response(body: "not json")]), clock: FastForwardClock())
        let response = try await session.send(exampleURL)

        #expect {
            _ = try response.decode(Item.self)
        } throws: { error in
            guard let error = error as? ReboundError, case .decodingFailed(let underlying) = error.reason else {
                return false
            }
            return underlying is DecodingError && error.data == Data("not json".utf8) && error.statusCode == 200
        }
    }

    // MARK: - Pipeline order

    @Test func sessionInterceptorAdaptsAndRetriesBeforeTheRequestsOwn() async throws {
        let log = Log()
        let transport = ScriptedTransport([.status(500), .status(200)])
        let session = Session(
            transport: transport,
            interceptor: Interceptor(
                adapters: [taggingAdapter("session", log: log)],
                retriers: [loggingRetrier("session", log: log, answer: .doNotRetry)]),
            clock: FastForwardClock())
        let own = Interceptor(
            adapters: [taggingAdapter("request", log: log)],
            retriers: [loggingRetrier("request", log: log, answer: .retry)])

        _ = try await session.send(request(), interceptor: own)

        #expect(
            log.all == [
                "adapt session #1", "adapt request #1", "retry session #0", "retry request #0",
                "adapt session #2", "adapt request #2",
            ])
        #expect(
            transport.requests.map { $0.value(forHTTPHeaderField: "X-Adapters") } == [
                "session,request", "session,request",
            ])
    }

    @Test func adaptersAndRetriersGivenOnTheirOwnComeBeforeTheInterceptorAndObserversAfter() async throws {
        let log = Log()
        let observer = RecordingObserver()
        let transport = ScriptedTransport([.status(500), .status(200)])
        let session = Session(
            transport: transport, adapters: [taggingAdapter("adapter", log: log)],
            retriers: [loggingRetrier("retrier", log: log, answer: .doNotRetry)],
            interceptor: Interceptor(
                adapters: [taggingAdapter("interceptor", log: log)],
                retriers: [loggingRetrier("interceptor", log: log, answer: .doNotRetry)]),
            observers: [observer], clock: FastForwardClock())

        _ = try await session.send(
            request(), adapters: [taggingAdapter("own adapter", log: log)],
            retriers: [loggingRetrier("own retrier", log: log, answer: .retry)],
            interceptor: Interceptor(adapters: [taggingAdapter("own interceptor", log: log)]))

        #expect(
            log.all == [
                "adapt adapter #1", "adapt interceptor #1", "adapt own adapter #1", "adapt own interceptor #1",
                "retry retrier #0", "retry interceptor #0", "retry own retrier #0",
                "adapt adapter #2", "adapt interceptor #2", "adapt own adapter #2", "adapt own interceptor #2",
            ])
        #expect(observer.lines == ["#1 500 retry 0.0 seconds", "#2 200 succeeded"])
    }

    @Test func aUsersOwnRetrierStructGoesToASessionOnItsOwn() async throws {
        struct RetryOnce: RequestRetrier {
            func retry(_ request: RetryRequest, dueTo error: ReboundError) async -> RetryResult {
                request.retryCount == 0 ? .retry : .doNotRetry
            }
        }
        let session = Session(
            transport: ScriptedTransport([.status(503), .status(200)]), retriers: [RetryOnce()],
            clock: FastForwardClock())

        let response = try await session.send(request())

        #expect(response.retryCount == 1)
    }

    @Test func sessionRetrierThatRetriesKeepsTheRequestRetrierFromBeingAsked() async throws {
        let log = Log()
        let session = Session(
            transport: ScriptedTransport([.status(500), .status(200)]),
            retriers: [loggingRetrier("session", log: log, answer: .retry)], clock: FastForwardClock())

        _ = try await session.send(request(), retriers: [loggingRetrier("request", log: log, answer: .retry)])

        #expect(log.all == ["retry session #0"])
    }

    @Test func everyAttemptAdaptsTheOriginalRequestAgain() async throws {
        let transport = ScriptedTransport([.status(503), .status(503), .status(200)])
        let session = Session(
            transport: transport,
            interceptor: Interceptor(adapters: [taggingAdapter("a", log: Log())], retriers: [retryAnything(limit: 2)]),
            clock: FastForwardClock())

        _ = try await session.send(request())

        #expect(transport.requests.map { $0.value(forHTTPHeaderField: "X-Adapters") } == ["a", "a", "a"])
    }

    /// `send(_:method:...)` hands the first attempt's adapters a request of their own, changed in place: the caller's
    /// request, the response's `originalRequest` and every later attempt still start from the request as given.
    @Test func aRequestBuiltFromAURLIsAdaptedAnewOnEveryAttemptAndKeptAsGiven() async throws {
        let transport = ScriptedTransport([.status(503), .status(503), .status(200)])
        let session = Session(
            transport: transport,
            adapters: [
                .modifying { request, _ in
                    let previous = request.value(forHTTPHeaderField: "X-Adapters").map { $0 + "," } ?? ""
                    request.setValue(previous + "a", forHTTPHeaderField: "X-Adapters")
                    request.url = request.url?.appendingPathComponent("adapted")
                }
            ],
            retriers: [retryAnything(limit: 2)], clock: FastForwardClock())
        let url = URL(string: "https://example.com/items")!

        let response = try await session.send(url, method: .post, body: Data("body".utf8))

        #expect(transport.requests.map { $0.value(forHTTPHeaderField: "X-Adapters") } == ["a", "a", "a"])
        #expect(transport.requests.map { $0.url?.path } == Array(repeating: "/items/adapted", count: 3))
        #expect(transport.requests.allSatisfy { $0.httpMethod == "POST" && $0.httpBody == Data("body".utf8) })
        #expect(response.originalRequest.value(forHTTPHeaderField: "X-Adapters") == nil)
        #expect(response.originalRequest.url == url)
        #expect(response.originalRequest.httpMethod == "POST")
        #expect(response.attempts.map { $0.request?.value(forHTTPHeaderField: "X-Adapters") } == ["a", "a", "a"])
    }

    /// A request sent as a URL to a chain that adapts is kept as its URL, method and body (the session builds it only
    /// when read): every record of the request gives back the request as given, and the failure's description names it.
    @Test func everyRecordOfARequestSentAsAURLGivesBackTheRequestAsGiven() async throws {
        let observer = RecordingObserver()
        let asked = Locked<[(original: URLRequest, method: HTTPMethod)]>([])
        let session = Session(
            transport: ScriptedTransport([.status(503), .status(503)]),
            adapters: [.modifying { request, _ in request.setValue("yes", forHTTPHeaderField: "X-Adapted") }],
            retriers: [
                Retrier { request, _ in
                    asked.withLock { $0.append((request.originalRequest, request.method)) }
                    return request.retryCount < 1 ? .retry : .doNotRetry
                }
            ],
            observers: [observer], clock: FastForwardClock())
        let url = URL(string: "https://example.com/items?token=secret")!

        let error = try await #require(throws: ReboundError.self) {
            try await session.send(url, method: .put, body: Data("body".utf8))
        }

        func isAsGiven(_ request: URLRequest) -> Bool {
            request.url == url && request.httpMethod == "PUT" && request.httpBody == Data("body".utf8)
                && request.value(forHTTPHeaderField: "X-Adapted") == nil
        }
        #expect(isAsGiven(error.originalRequest))
        #expect(error.lastRequest?.value(forHTTPHeaderField: "X-Adapted") == "yes")
        #expect(asked.withLock { $0 }.allSatisfy { isAsGiven($0.original) && $0.method == .put })
        #expect(asked.withLock { $0.count } == 2)
        #expect(observer.outcomes.count == 2)
        #expect(observer.outcomes.allSatisfy { isAsGiven($0.originalRequest) })
        #expect(observer.requestOutcomes.allSatisfy { isAsGiven($0.originalRequest) })
        #expect(observer.requestOutcomes.count == 1)
        #expect(error.description.hasPrefix("PUT https://example.com/items?token=<redacted>: attempt 2 failed"))
    }

    @Test func adaptersSeeTheRequestIDAttemptAndLabel() async throws {
        let contexts = Log()
        let session = Session(
            transport: ScriptedTransport([.status(500), .status(200), .status(200)]),
            interceptor: Interceptor(
                adapters: [
                    .adapter { request, context in
                        contexts.append("\(context.requestID) \(context.attempt) \(context.label ?? "-")")
                        return request
                    }
                ],
                retriers: [retryAnything(limit: 1)]),
            clock: FastForwardClock())

        _ = try await session.send(request(), label: "critical")
        _ = try await session.send(request())

        let entries = contexts.all.map { $0.split(separator: " ").map(String.init) }
        #expect(entries.map { $0[1] } == ["1", "2", "1"])
        #expect(entries.map { $0[2] } == ["critical", "critical", "-"])
        #expect(entries[0][0] == entries[1][0])
        #expect(entries[0][0] != entries[2][0])
    }

    @Test func retriersSeeTheFailedAttemptsRequestResponseBodyAndLabel() async throws {
        let seen = Log()
        let session = Session(
            transport: ScriptedTransport([.response(status: 503, body: "busy"), .status(200)]),
            interceptor: Interceptor(
                adapters: [taggingAdapter("a", log: Log())],
                retriers: [
                    .retrier { request, error in
                        seen.append(
                            [
                                "\(request.retryCount)", request.label ?? "-", "\(request.response?.statusCode ?? 0)",
                                String(decoding: request.data ?? Data(), as: UTF8.self),
                                request.lastRequest?.value(forHTTPHeaderField: "X-Adapters") ?? "-",
                                request.originalRequest.value(forHTTPHeaderField: "X-Adapters") ?? "-",
                                "\(request.attempts.count)", "\(error.statusCode ?? 0)",
                            ].joined(separator: " "))
                        return .retry
                    }
                ]),
            clock: FastForwardClock())

        _ = try await session.send(request(), label: "search")

        #expect(seen.all == ["0 search 503 busy a - 1 503"])
    }

    // MARK: - Failures reaching retriers

    @Test func eachFailedAttemptAsksTheRetrierChainExactlyOnce() async throws {
        let log = Log()
        let transport = ScriptedTransport([.status(503), .urlError(.timedOut), .status(500), .status(200)])
        let session = Session(
            transport: transport,
            interceptor: Interceptor(retriers: [
                loggingRetrier("a", log: log, answer: .doNotRetry), loggingRetrier("b", log: log, answer: .retry),
            ]),
            clock: FastForwardClock())

        _ = try await session.send(request())

        #expect(log.all == ["retry a #0", "retry b #0", "retry a #1", "retry b #1", "retry a #2", "retry b #2"])
        #expect(transport.requestCount == 4)
    }

    @Test func adapterErrorReachesRetriersAndTheRequestIsNotSent() async throws {
        let reasons = Log()
        let failOnce = Adapter { request, context in
            if context.attempt == 1 { throw TestError("no token yet") }
            return request
        }
        let transport = ScriptedTransport([.status(200)])
        let session = Session(
            transport: transport,
            interceptor: Interceptor(
                adapters: [failOnce],
                retriers: [
                    .retrier { request, error in
                        reasons.append("\(error.reason) sent=\(request.lastRequest != nil)")
                        return .retry
                    }
                ]),
            clock: FastForwardClock())

        let response = try await session.send(request())

        #expect(reasons.all == [#"adapter failed: TestError(name: "no token yet") sent=false"#])
        #expect(transport.requestCount == 1)
        #expect(response.attempts.count == 2)
        #expect(response.attempts[0].request == nil)
    }

    @Test func adapterFailureThatIsNotRetriedIsReportedAsSuch() async throws {
        let session = Session(
            transport: ScriptedTransport([]),
            adapters: [Adapter { _, _ in throw TestError("signing key missing") }], clock: FastForwardClock())

        let error = try await #require(throws: ReboundError.self) { try await session.send(request()) }

        guard case .adaptationFailed(let underlying) = error.reason else {
            Issue.record("reason: \(error.reason)")
            return
        }
        #expect(underlying as? TestError == TestError("signing key missing"))
        #expect(error.lastRequest == nil && error.response == nil && error.attemptCount == 1)
    }

    @Test func transportErrorKeepsItsURLErrorCode() async throws {
        let session = Session(transport: ScriptedTransport([.urlError(.cannotFindHost)]), clock: FastForwardClock())

        let error = try await #require(throws: ReboundError.self) { try await session.send(request()) }

        guard case .transportFailed(let underlying as URLError) = error.reason else {
            Issue.record("reason: \(error.reason)")
            return
        }
        #expect(underlying.code == .cannotFindHost)
        #expect(error.urlError?.code == .cannotFindHost)
        #expect(error.lastRequest?.url == exampleURL)
    }

    @Test func unacceptableStatusKeepsTheResponseAndBody() async throws {
        let session = Session(
            transport: ScriptedTransport([.response(status: 404, body: "gone")]), clock: FastForwardClock())

        let error = try await #require(throws: ReboundError.self) { try await session.send(request()) }

        guard case .unacceptableStatusCode(404) = error.reason else {
            Issue.record("reason: \(error.reason)")
            return
        }
        #expect(error.data == Data("gone".utf8))
        #expect(error.statusCode == 404)
        #expect(
            error.description
                == "GET https://api.example.com/items: attempt 1 failed with status 404; not retried (1 attempt)")
    }

    @Test func doNotRetryWithErrorKeepsBothTheRetriersErrorAndTheOriginal() async throws {
        let session = Session(
            transport: ScriptedTransport([.status(503), .response(status: 429, body: "slow down")]),
            retriers: [
                Retrier { request, _ in
                    request.retryCount == 0 ? .retry : .doNotRetryWithError(TestError("quota exhausted"))
                }
            ],
            clock: FastForwardClock())

        let error = try await #require(throws: ReboundError.self) { try await session.send(request()) }

        guard case .retryAborted(let retrierError, let original) = error.reason,
            case .unacceptableStatusCode(429) = original
        else {
            Issue.record("reason: \(error.reason)")
            return
        }
        #expect(retrierError as? TestError == TestError("quota exhausted"))
        #expect(error.underlyingError as? TestError == TestError("quota exhausted"))
        #expect(error.data == Data("slow down".utf8))
        #expect(error.attemptCount == 2)
    }

    @Test func errorAfterRetriesDescribesTheLastAttemptAndKeepsAllAttempts() async throws {
        let session = Session(
            transport: ScriptedTransport([.status(503), .status(503), .urlError(.timedOut)]),
            retriers: [retryAnything(limit: 2)], clock: FastForwardClock())

        let error = try await #require(throws: ReboundError.self) { try await session.send(request()) }

        #expect(error.attemptCount == 3)
        #expect(error.urlError?.code == .timedOut)
        #expect(error.response == nil)  // the last attempt got none; earlier ones are in `attempts`
        #expect(error.attempts.map(\.statusCode) == [503, 503, nil])
    }

    // MARK: - Validation

    @Test func sessionValidatorRunsOnEveryResponse() async throws {
        let session = Session(
            transport: ScriptedTransport([.response(status: 200, body: "")]),
            validator: .successfulStatusCodes.and { _, data in if data.isEmpty { throw TestError("empty") } },
            clock: FastForwardClock())

        let error = try await #require(throws: ReboundError.self) { try await session.send(request()) }

        guard case .validationFailed(let underlying) = error.reason else {
            Issue.record("reason: \(error.reason)")
            return
        }
        #expect(underlying as? TestError == TestError("empty"))
    }

    @Test func requestValidatorReplacesTheSessions() async throws {
        let session = Session(
            transport: ScriptedTransport([.status(404), .status(404)]),
            validator: .successfulStatusCodes, clock: FastForwardClock())

        let response = try await session.send(request(), validator: .acceptableStatusCodes([200, 404]))

        #expect(response.statusCode == 404)
        await #expect(throws: ReboundError.self) { try await session.send(request()) }
    }

    @Test func failingValidatorOnA200IsRetried() async throws {
        let transport = ScriptedTransport([
            .response(body: #"{"error_code": "RATE_LIMITED"}"#), .response(body: #"{"ok": true}"#),
        ])
        let session = Session(transport: transport, retriers: [retryAnything(limit: 3)], clock: FastForwardClock())
        let rejectErrorBodies = Validator.successfulStatusCodes.and { _, data in
            if String(decoding: data, as: UTF8.self).contains("error_code") { throw TestError("error body") }
        }

        let response = try await session.send(request(), validator: rejectErrorBodies)

        #expect(transport.requestCount == 2)
        #expect(String(decoding: response.data, as: UTF8.self) == #"{"ok": true}"#)
    }

    // MARK: - Delays

    @Test func retryDelaySleepsOnTheSessionsClockBeforeTheNextAttempt() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport([.status(503), .status(200)])
        let session = Session(
            transport: transport, retriers: [retryAnything(limit: 1, delay: .seconds(2))], clock: clock)

        let task = Task { try await session.send(request()) }
        try await clock.waitForSleepers(1)
        #expect(transport.requestCount == 1)
        clock.advance(by: .milliseconds(1999))
        #expect(clock.pendingSleepCount == 1)
        clock.advance(by: .milliseconds(1))
        _ = try await task.value

        #expect(transport.requestCount == 2)
        #expect(clock.sleeps == [.seconds(2)])
    }

    @Test(arguments: [RetryResult.retry, .retryWithDelay(.zero), .retryWithDelay(.seconds(-5))])
    func immediateRetriesDoNotSleep(answer: RetryResult) async throws {
        let clock = ManualClock()
        let session = Session(
            transport: ScriptedTransport([.status(503), .status(200)]),
            retriers: [Retrier { request, _ in request.retryCount == 0 ? answer : .doNotRetry }], clock: clock)

        let response = try await session.send(request())

        #expect(clock.sleeps.isEmpty)
        #expect(response.attempts.first?.retryDelay == .zero)
    }

    @Test func absurdDelayIsHeldAtTheLongestDelayInsteadOfTrappingTheClock() async throws {
        let clock = ManualClock()
        let session = Session(
            transport: ScriptedTransport([.status(503)]),
            retriers: [Retrier { _, _ in .retryWithDelay(.seconds(Int64.max)) }], clock: clock)

        let task = Task { try await session.send(request()) }
        try await clock.waitForSleepers(1)
        task.cancel()
        _ = try? await task.value

        #expect(clock.sleeps == [RetryResult.longestDelay])
    }

    // MARK: - Cancellation

    @Test func cancellationDuringTheSendEndsWithCancellationAndNoFurtherAttempt() async throws {
        let log = Log()
        let transport = ScriptedTransport([.hang, .status(200)])
        let session = Session(
            transport: transport, retriers: [loggingRetrier("r", log: log, answer: .retry)], clock: ManualClock())

        let task = Task { try await session.send(request()) }
        try await transport.waitForRequests(1)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(transport.requestCount == 1)
        #expect(log.all.isEmpty)
    }

    @Test func cancellationDuringAdaptationEndsWithCancellationBeforeAnySend() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport([.status(200)])
        let slowAdapter = Adapter { request, _ in
            try await clock.sleep(for: .seconds(10))
            return request
        }
        let session = Session(transport: transport, adapters: [slowAdapter], clock: clock)

        let task = Task { try await session.send(request()) }
        try await clock.waitForSleepers(1)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(transport.requestCount == 0)
    }

    @Test func cancellationDuringBackoffEndsAtOnceWithoutAnotherAttempt() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport([.status(503), .status(200)])
        let session = Session(
            transport: transport, retriers: [retryAnything(limit: 3, delay: .seconds(30))], clock: clock)

        let task = Task { try await session.send(request()) }
        try await clock.waitForSleepers(1)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(transport.requestCount == 1)
        #expect(clock.pendingSleepCount == 0)
    }

    @Test func cancellationWhileARetrierDecidesEndsWithCancellationEvenIfItRetries() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport([.status(503), .status(200)])
        let slowRetrier = Retrier { _, _ in
            try? await clock.sleep(for: .seconds(1))
            return .retry
        }
        let session = Session(transport: transport, retriers: [slowRetrier], clock: clock)

        let task = Task { try await session.send(request()) }
        try await clock.waitForSleepers(1)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(transport.requestCount == 1)
    }

    @Test func alreadyCancelledTaskSendsNothing() async throws {
        let transport = ScriptedTransport([.status(200)])
        let session = Session(transport: transport, clock: FastForwardClock())

        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await session.send(request())
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(transport.requestCount == 0)
    }

    @Test func transportCancelledErrorWithoutTaskCancellationIsAnOrdinaryFailure() async throws {
        let session = Session(transport: ScriptedTransport([.urlError(.cancelled)]), clock: FastForwardClock())

        let error = try await #require(throws: ReboundError.self) { try await session.send(request()) }

        #expect(error.urlError?.code == .cancelled)
    }

    // MARK: - Concurrency

    @Test func concurrentRequestsEachEndWithExactlyOneOutcome() async throws {
        let transport = ScriptedTransport { _, number in
            number % 3 == 0 ? .status(200) : (number % 3 == 1 ? .status(503) : .urlError(.timedOut))
        }
        let session = Session(transport: transport, retriers: [retryAnything(limit: 1)], clock: FastForwardClock())

        // Each task reports the attempts its one outcome recorded, or nil for anything but a response or ReboundError.
        let attemptCounts = await withTaskGroup(of: Int?.self) { group in
            for _ in 0..<500 {
                group.addTask {
                    do {
                        return try await session.send(request()).attempts.count
                    } catch let error as ReboundError {
                        return error.attemptCount
                    } catch {
                        return nil
                    }
                }
            }
            return await group.reduce(into: [Int?]()) { $0.append($1) }
        }

        #expect(attemptCounts.count == 500)
        #expect(!attemptCounts.contains(nil))
        #expect(attemptCounts.allSatisfy { $0 == 1 || $0 == 2 })
        #expect(attemptCounts.reduce(0) { $0 + ($1 ?? 0) } == transport.requestCount)
    }

    @Test func cancellingManyRequestsMidSendAndMidBackoffEndsEachWithCancellationOnce() async throws {
        // The first 200 requests are first attempts: odd ones fail with 503 and go to sleep on the clock, even ones
        // hang in the transport. Nothing can end on its own until the test cancels.
        let clock = ManualClock()
        let transport = ScriptedTransport { _, number in number % 2 == 1 ? .status(503) : .hang }
        let session = Session(transport: transport, retriers: [RetryPolicy()], clock: clock)

        let tasks = (0..<200).map { _ in
            Task { () -> String in
                do {
                    _ = try await session.send(request())
                    return "response"
                } catch is CancellationError {
                    return "cancelled"
                } catch {
                    return "error"
                }
            }
        }
        try await transport.waitForRequests(200)
        try await clock.waitForSleepers(100)
        for task in tasks { task.cancel() }
        var outcomes: [String] = []
        for task in tasks { outcomes.append(await task.value) }

        #expect(outcomes == Array(repeating: "cancelled", count: 200))
        #expect(transport.requestCount == 200)
        #expect(clock.pendingSleepCount == 0)
    }

    // MARK: - Bodies that cannot be replayed

    @Test func aStreamBodyIsNotRetriedAndNothingIsChargedForTheRetry() async throws {
        let budget = RetryBudget()
        let transport = ScriptedTransport([.status(503), .status(200)])
        let session = Session(
            transport: transport, adapters: [budget], retriers: [retryAnything(limit: 3)], clock: FastForwardClock())
        var streamed = request(.put)
        streamed.httpBodyStream = InputStream(data: Data("body".utf8))

        let error = try await #require(throws: ReboundError.self) { try await session.send(streamed) }

        #expect(error.retrierError is StreamBodyNotReplayable)
        #expect(error.reason.original.description == "unacceptable status code 503")
        #expect(transport.requestCount == 1)
        #expect(budget.tokens(for: "api.example.com") == 500)
    }

    @Test func aRetrierThatHandsOverANewRequestWithAFreshStreamIsFollowed() async throws {
        let transport = ScriptedTransport([.status(503), .status(200)])
        let fresh = Retrier { request, _ in
            guard request.retryCount == 0 else { return .doNotRetry }
            var next = request.originalRequest
            next.httpBodyStream = InputStream(data: Data("body".utf8))
            return .retryWithRequest(next, delay: .zero)
        }
        let session = Session(transport: transport, retriers: [fresh], clock: FastForwardClock())
        var streamed = request(.put)
        streamed.httpBodyStream = InputStream(data: Data("body".utf8))

        let response = try await session.send(streamed)

        #expect(response.attempts.count == 2)
    }
}
