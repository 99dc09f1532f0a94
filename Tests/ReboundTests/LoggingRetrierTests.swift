import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A sink that keeps every event.
final class EventLog: Sendable {
    private let entries = Locked<[RetryLogEvent]>([])

    var sink: LoggingRetrier.Sink { { event in self.entries.withLock { $0.append(event) } } }
    var events: [RetryLogEvent] { entries.withLock { $0 } }
    /// The messages without the request id prefix, which differs from run to run.
    var messages: [String] { events.map { String($0.message.drop { $0 != "]" }.dropFirst(2)) } }
}

@Suite("LoggingRetrier", .timeLimit(.minutes(5)))
struct LoggingRetrierTests {
    let log = EventLog()

    @Test func logsEachFailedAttemptItsDecisionAndTheFinalSuccess() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport(
            [.status(503).delayed(by: .milliseconds(20)), .urlError(.timedOut), .status(200)], clock: clock)
        let session = Session(
            transport: transport,
            interceptor: LoggingRetrier(wrapping: retryAnything(limit: 5, delay: .milliseconds(1_500)), sink: log.sink),
            clock: clock)

        let task = Task { try await session.send(request(), label: "catalog") }
        try await clock.waitForSleepers(1)
        clock.advance(by: .milliseconds(20))
        try await clock.waitForSleeps(2)
        clock.advance(by: .milliseconds(1_500))
        try await clock.waitForSleeps(3)
        clock.advance(by: .milliseconds(1_500))
        _ = try await task.value

        #expect(
            log.messages == [
                "GET https://api.example.com/items: attempt 1 failed with status 503; retry in 1.5 s (20 ms so far)",
                "GET https://api.example.com/items: attempt 2 failed with transport failed: URLError -1001 (timedOut); retry in 1.5 s (1.52 s so far)",
                "GET https://api.example.com/items: succeeded with status 200 after 3 attempts (3.02 s)",
            ])
        let first = try #require(log.events.first)
        #expect(first.level == .notice)
        #expect(first.label == "catalog")
        #expect(first.message.hasPrefix("[\(first.requestID.uuidString.prefix(8).lowercased()) catalog] "))
        #expect(first.attempt == 1 && first.method == "GET" && first.statusCode == 503)
        #expect(first.decision == .retry(after: .milliseconds(1_500)))
        #expect(log.events.map(\.level) == [.notice, .notice, .info])
        #expect(log.events.map(\.elapsed) == [.milliseconds(20), .milliseconds(1_520), .milliseconds(3_020)])
    }

    @Test func logsGivingUpAtErrorLevel() async throws {
        let session = Session(
            transport: ScriptedTransport([.status(503), .status(500)]),
            interceptor: LoggingRetrier(wrapping: RetryPolicy(retryLimit: 1), sink: log.sink),
            clock: FastForwardClock())

        _ = try? await session.send(request())

        #expect(log.events.map(\.decision) == [.retry(after: .milliseconds(500)), .failed])
        #expect(log.events.map(\.endReason) == [nil, nil])
        #expect(log.events.map(\.wrappedAnswer) == ["retry in 500 ms", "do not retry: retry limit reached"])
        #expect(log.events.map(\.stopReason) == [nil, .retryLimit])
        #expect(log.events.last?.level == .error)
        #expect(
            log.messages.last
                == "GET https://api.example.com/items: attempt 2 failed with status 500; giving up after 2 attempts: "
                + "retry limit reached (500 ms)"
        )
    }

    @Test func logsFailingWithARetriersError() async throws {
        let session = Session(
            transport: ScriptedTransport([.status(429)]),
            interceptor: LoggingRetrier(
                wrapping: Retrier { _, _ in .doNotRetryWithError(TestError("quota")) }, sink: log.sink),
            clock: FastForwardClock())

        _ = try? await session.send(request(.put))

        #expect(log.events.map(\.decision) == [.failed])
        #expect(log.events.map(\.endReason) == ["TestError(name: \"quota\")"])
        #expect(
            log.messages == [
                "PUT https://api.example.com/items: attempt 1 failed with status 429; failing with TestError(name: \"quota\") (0 ms)"
            ])
    }

    @Test func logsAFirstAttemptSuccessAndCancellationOnlyAtDebugLevel() async throws {
        let transport = ScriptedTransport([.status(204), .hang])
        let quiet = Session(
            transport: transport, interceptor: LoggingRetrier(sink: log.sink), clock: FastForwardClock())
        _ = try await quiet.send(request())
        #expect(log.events.isEmpty)

        let verbose = Session(
            transport: transport, interceptor: LoggingRetrier(minimumLevel: .debug, sink: log.sink),
            clock: FastForwardClock())
        let task = Task { try await verbose.send(request()) }
        try await transport.waitForRequests(2)
        task.cancel()
        _ = try? await task.value

        #expect(log.messages == ["GET https://api.example.com/items: cancelled during attempt 1 (0 ms)"])
        #expect(log.events.map(\.level) == [.debug])
    }

    @Test func logsTheDecisionOfTheWholeChain() async throws {
        // The logger wraps nothing, so it answers doNotRetry; the retrier after it retries, and that is logged.
        let session = Session(
            transport: ScriptedTransport([.status(500), .status(200)]),
            interceptor: Interceptor(retriers: [LoggingRetrier(sink: log.sink), retryAnything(limit: 1)]),
            clock: FastForwardClock())

        _ = try await session.send(request())

        #expect(log.events.map(\.decision) == [.retry(after: .zero), .succeeded])
    }

    @Test(arguments: [
        [ScriptedTransport.Step.status(503), .status(503), .status(503)],
        [.urlError(.timedOut), .status(200)],
        [.status(404)],
        [.urlError(.cannotConnectToHost), .urlError(.timedOut), .status(502), .status(200)],
    ])
    func neverChangesTheWrappedRetriersDecision(script: [ScriptedTransport.Step]) async throws {
        func run(_ retrier: any RequestRetrier) async -> [Int?] {
            let session = Session(
                transport: ScriptedTransport(script), retriers: [retrier], clock: FastForwardClock())
            do {
                return try await session.send(request()).attempts.map(\.statusCode)
            } catch let error as ReboundError {
                return error.attempts.map(\.statusCode) + [-1]
            } catch {
                return []
            }
        }
        let policy = RetryPolicy(retryLimit: 2)

        #expect(await run(LoggingRetrier(wrapping: policy, sink: log.sink)) == (await run(policy)))
        #expect(!log.events.isEmpty)
    }

    @Test func passesAdaptingAndObservingOnToTheWrappedChain() async throws {
        let breaker = CircuitBreaker(
            configuration: .init(tripCondition: .consecutiveFailures(1), openDuration: .seconds(30)),
            clock: ManualClock())
        let transport = ScriptedTransport { _, _ in .status(500) }
        let session = Session(
            transport: transport,
            interceptor: LoggingRetrier(wrapping: Interceptor(adapters: [breaker]), sink: log.sink),
            clock: FastForwardClock())

        _ = try? await session.send(request())
        let error = await #expect(throws: ReboundError.self) { try await session.send(request()) }

        #expect(breaker.state == .open)
        #expect(error?.underlyingError is CircuitBreakerOpenError)
        #expect(transport.requestCount == 1)
        #expect(log.messages.last?.contains("circuit breaker is open; it lets a trial call through in 30 s") == true)
        // The event names the refusing breaker's state; the failure that tripped it had no breaker to name.
        #expect(log.events.last?.breakerState == .open)
        #expect(log.events.first?.breakerState == nil)
    }

    @Test func secretsNeverReachTheSink() async throws {
        let secrets = ["s3cr3t-bearer", "c00kie", "k3y-value", "t0ken", "pa55word", "hunter2", "x-sig", "frag-token"]
        var sent = URLRequest(
            url: URL(
                string:
                    "https://me:hunter2@api.example.com/items?token=t0ken&page=2&API_KEY=k3y-value&Signature=x-sig#access_token=frag-token"
            )!)
        sent.setValue("Bearer s3cr3t-bearer", forHTTPHeaderField: "Authorization")
        sent.setValue("session=c00kie", forHTTPHeaderField: "Cookie")
        sent.setValue("k3y-value", forHTTPHeaderField: "X-Api-Key")
        sent.setValue("pa55word", forHTTPHeaderField: "X-Client-Secret")
        sent.setValue("42", forHTTPHeaderField: "X-Request-Id")
        let session = Session(
            transport: ScriptedTransport([.status(500), .status(500)]),
            interceptor: LoggingRetrier(
                wrapping: retryAnything(limit: 1), minimumLevel: .trace, includesHeaders: true, sink: log.sink),
            clock: FastForwardClock())

        _ = try? await session.send(sent)

        let event = try #require(log.events.first)
        let everything = log.events.map { "\($0)" }.joined()
        for secret in secrets { #expect(!everything.contains(secret), "\(secret) leaked") }
        #expect(
            event.url
                == "https://<redacted>@api.example.com/items?token=<redacted>&page=<redacted>&API_KEY=<redacted>&Signature=<redacted>#access_token=<redacted>"
        )
        #expect(event.requestHeaders.first { $0.name == "X-Request-Id" }?.value == "42")
        #expect(event.message.contains("Authorization: <redacted>, Cookie: <redacted>"))
    }

    @Test func theLineSinkWritesOneLinePerEvent() async throws {
        let pipe = Pipe()
        let session = Session(
            transport: ScriptedTransport([.status(503), .status(200)]),
            interceptor: LoggingRetrier(
                wrapping: retryAnything(limit: 1), sink: LoggingRetrier.lines(to: pipe.fileHandleForWriting)),
            clock: FastForwardClock())

        _ = try await session.send(request())
        try pipe.fileHandleForWriting.close()

        let lines = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            .split(separator: "\n").map(String.init)
        #expect(lines.count == 2)
        #expect(
            lines[0].hasSuffix(
                "GET https://api.example.com/items: attempt 1 failed with status 503; retry in 0 ms (0 ms so far)"))
        #expect(lines[1].hasSuffix("succeeded with status 200 after 2 attempts (0 ms)"))
    }

    @Test func namesTheWrappedRetriersAnswerWhereTheChainDidOtherwise() async throws {
        let session = Session(
            transport: ScriptedTransport([.status(503), .status(200)]),
            retriers: [LoggingRetrier(wrapping: ConnectionLostRetryPolicy(), sink: log.sink), RetryPolicy()],
            clock: FastForwardClock())

        _ = try await session.send(request())

        #expect(log.events.map(\.wrappedAnswer) == ["do not retry", nil])
        #expect(
            log.messages == [
                "GET https://api.example.com/items: attempt 1 failed with status 503; retry in 500 ms (0 ms so far); ConnectionLostRetryPolicy answered do not retry",
                "GET https://api.example.com/items: succeeded with status 200 after 2 attempts (500 ms)",
            ])
    }

    @Test func logsTheRedirectsEachAttemptFollowedWithItsOutcomeRedacted() async throws {
        func redirect(to location: String) -> ScriptedTransport.Step {
            .response(status: 302, headers: ["Location": location])
        }
        // Attempt 1: two hops, then 503; attempt 2: one hop, then 200.
        let transport = ScriptedTransport([
            redirect(to: "https://cdn.example.com/a?token=SECRET"), redirect(to: "/b"), .status(503),
            redirect(to: "https://cdn.example.com/c"), .status(200),
        ])
        let session = Session(
            transport: transport, interceptor: LoggingRetrier(wrapping: retryAnything(limit: 2), sink: log.sink),
            clock: FastForwardClock())

        _ = try await session.send(request())

        #expect(
            log.events.map(\.redirects) == [
                [
                    "GET https://api.example.com/items → 302 → GET https://cdn.example.com/a?token=<redacted>",
                    "GET https://cdn.example.com/a?token=<redacted> → 302 → GET https://cdn.example.com/b",
                ],
                ["GET https://api.example.com/items → 302 → GET https://cdn.example.com/c"],
            ])
        #expect(
            log.messages == [
                "GET https://cdn.example.com/b: attempt 1 failed with status 503; retry in 0 ms (0 ms so far); redirected: GET https://api.example.com/items → 302 → GET https://cdn.example.com/a?token=<redacted>, GET https://cdn.example.com/a?token=<redacted> → 302 → GET https://cdn.example.com/b",
                "GET https://cdn.example.com/c: succeeded with status 200 after 2 attempts (0 ms); redirected: GET https://api.example.com/items → 302 → GET https://cdn.example.com/c",
            ])
        #expect(!log.events.contains { $0.message.contains("SECRET") })
    }

    @Test func amongRetriersOnlyItLogsTheRedirectsOfTheAttemptsAfterTheFirst() async throws {
        let transport = ScriptedTransport([
            .response(status: 302, headers: ["Location": "/a"]), .status(503),
            .response(status: 302, headers: ["Location": "/b"]), .status(200),
        ])
        let session = Session(
            transport: transport, retriers: [LoggingRetrier(wrapping: retryAnything(limit: 2), sink: log.sink)],
            clock: FastForwardClock())

        _ = try await session.send(request())

        #expect(
            log.events.map(\.redirects) == [
                [], ["GET https://api.example.com/items → 302 → GET https://api.example.com/b"],
            ])
    }

    @Test func loggingAnInterceptorWithTheShorthandKeepsItsAdapter() async throws {
        let auth = AuthenticationInterceptor(
            authenticator: TokenAuthenticator(), credential: Token(value: 7), clock: FastForwardClock())
        let transport = ScriptedTransport([.status(200)])
        let session = Session(
            transport: transport, interceptor: .logging(auth, sink: log.sink), clock: FastForwardClock())

        _ = try await session.send(request())

        #expect(transport.requests.first?.value(forHTTPHeaderField: "Authorization") == "Bearer 7")
        let retriersOnly = LoggingRetrier.logging(RetryPolicy(), sink: log.sink)
        #expect(retriersOnly.wrapped is RetryPolicy)
    }

    @Test func aRefusalAShadowBreakerWouldHaveMadeIsNamedAtNoticeAtLeast() async throws {
        let log = EventLog()
        let breaker = CircuitBreaker(
            key: "api.example.com",
            configuration: .init(tripCondition: .consecutiveFailures(1), openDuration: .seconds(30)),
            clock: ManualClock(), enforcement: .shadow)
        let transport = ScriptedTransport { _, number in .status(number == 1 ? 500 : 200) }
        let session = Session(
            transport: transport, adapters: [breaker], observers: [LoggingRetrier(sink: log.sink)],
            clock: FastForwardClock())

        await #expect(throws: ReboundError.self) { try await session.send(request()) }
        _ = try await session.send(request())

        let event = try #require(log.events.last)
        #expect(event.level == .notice)
        #expect(event.decision == .succeeded)
        #expect(event.shadowRefusals.map(\.stage) == [.attempt])
        #expect(
            event.message.hasSuffix(
                "succeeded with status 200 (0 ms); in shadow mode, CircuitBreaker for api.example.com would refuse "
                    + "attempt 1 (circuitOpen)"))
    }

    @Test func eachEventNamesTheGroupAndTheEndpointThatSentItsAttempt() async throws {
        let clock = ManualClock()
        let (eu, us) = (URL(string: "https://eu.api.example.com/v2")!, URL(string: "https://us.api.example.com/v2")!)
        let group = EndpointGroup(name: "payments", endpoints: [.init(eu), .init(us)], clock: clock)
        let transport = EndpointGroupTests.transport(clock)
        let session = Session(
            transport: transport, adapters: [group],
            retriers: [LoggingRetrier(wrapping: RetryPolicy(backoff: .zero), minimumLevel: .debug, sink: log.sink)],
            clock: clock)
        _ = try await session.send(URL(string: "https://eu.api.example.com/v2/charges")!)

        #expect(log.events.map(\.endpointGroup) == ["payments", "payments"])
        #expect(log.events.map { $0.endpoint?.baseURL } == [eu, us])
        #expect(
            log.messages == [
                "GET https://eu.api.example.com/v2/charges via payments: attempt 1 failed with status 503; retry in 0 ms (0 ms so far)",
                "GET https://us.api.example.com/v2/charges via payments: succeeded with status 200 after 2 attempts (0 ms)",
            ])
    }

    @Test func aRequestCancelledWhileWaitingToRetryIsLoggedWithItsLastAttemptsEndpoint() async throws {
        let clock = ManualClock()
        let eu = URL(string: "https://eu.api.example.com/v2")!
        let group = EndpointGroup(name: "payments", endpoints: [.init(eu)], clock: clock)
        let session = Session(
            transport: ScriptedTransport([.status(503)]), adapters: [group],
            retriers: [
                LoggingRetrier(
                    wrapping: RetryPolicy(backoff: .constant(.seconds(1))), minimumLevel: .debug, sink: log.sink)
            ],
            clock: clock)
        let task = Task { try await session.send(URL(string: "https://eu.api.example.com/v2/charges")!) }
        try await clock.waitForSleepers(1)
        task.cancel()
        _ = try? await task.value

        let cancelled = try #require(log.events.last)
        #expect(cancelled.decision == .cancelled)
        #expect(cancelled.endpointGroup == "payments" && cancelled.endpoint?.baseURL == eu)
        #expect(cancelled.message.contains("via payments: cancelled while waiting to retry after attempt 1"))
    }

}
