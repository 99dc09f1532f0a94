import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The values of header `name` of every request `transport` was handed, in order.
private func values(_ name: String, in transport: ScriptedTransport) -> [String?] {
    transport.requests.map { $0.value(forHTTPHeaderField: name) }
}

/// Sends a request through `session`, whose transport answers 503, 503, 200, and lets its backoffs (0.5 s and 1 s)
/// pass on `clock`.
private func sendThroughTwoRetries(_ session: Session, _ clock: ManualClock) async throws -> Response {
    let task = Task { try await session.send(request()) }
    try await waitForSleep(of: .milliseconds(500), on: clock)
    clock.advance(by: .milliseconds(500))
    try await waitForSleep(of: .seconds(1), on: clock)
    clock.advance(by: .seconds(1))
    return try await task.value
}

@Suite("AttemptContextAdapter", .timeLimit(.minutes(5)))
struct AttemptContextAdapterTests {
    @Test func envoyHeadersCountTheAttemptsAndTheTimeLeft() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport([.status(503), .status(503), .status(200)], clock: clock)
        let session = Session(
            transport: transport, adapters: [AttemptContextAdapter.envoy], retriers: [RetryPolicy()],
            deadline: .seconds(10), clock: clock)

        _ = try await sendThroughTwoRetries(session, clock)

        #expect(values("x-envoy-attempt-count", in: transport) == ["1", "2", "3"])
        #expect(values("x-envoy-expected-rq-timeout-ms", in: transport) == ["10000", "9500", "8500"])
    }

    @Test func awsHeadersNameTheAttemptAndTheMostAttemptsAndKeepTheInvocation() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport([.status(503), .status(503), .status(200)], clock: clock)
        let session = Session(
            transport: transport, adapters: [AttemptContextAdapter.aws], retriers: [RetryPolicy()], clock: clock)

        _ = try await sendThroughTwoRetries(session, clock)

        #expect(
            values("amz-sdk-request", in: transport) == ["attempt=1; max=3", "attempt=2; max=3", "attempt=3; max=3"])
        let invocations = values("amz-sdk-invocation-id", in: transport)
        #expect(Set(invocations).count == 1)
        let invocation = try #require(invocations.first ?? nil)
        #expect(UUID(uuidString: invocation) != nil && invocation == invocation.lowercased())
    }

    @Test func aValueWithNothingToSayWritesNoHeader() async throws {
        let transport = ScriptedTransport([.status(200)])
        // A closure retrier says no limit, and there is no deadline.
        let session = Session(
            transport: transport, adapters: [AttemptContextAdapter.plain],
            retriers: [Retrier { _, _ in .doNotRetry }])

        _ = try await session.send(request())

        #expect(values("X-Attempt", in: transport) == ["1"])
        #expect(values("X-Max-Attempts", in: transport) == [nil])
        #expect(values("X-Time-Left-Ms", in: transport) == [nil])
        #expect(values("amz-sdk-request", in: transport) == [nil])
    }

    @Test func theMostAttemptsCountTheLargestLimitTheHedgingAndTheRetriersThatJoinThroughTheContext() async throws {
        func most(
            adapters: [any RequestAdapter] = [], retriers: [any RequestRetrier], hedging: Hedging? = nil
        ) async throws -> String? {
            let transport = ScriptedTransport([.status(200)])
            let session = Session(
                transport: transport, adapters: adapters + [AttemptContextAdapter.plain], retriers: retriers,
                hedging: hedging)
            _ = try await session.send(request())
            return values("X-Max-Attempts", in: transport).first ?? nil
        }
        #expect(try await most(retriers: [RetryPolicy(retryLimit: 4)]) == "5")
        #expect(try await most(retriers: [RetryPolicy(), ConnectionLostRetryPolicy()]) == "3")
        #expect(
            try await most(retriers: [
                RetryPolicy(), OfflineRetrier(monitor: ManualConnectivityMonitor(), retryLimit: 6),
            ]) == "7")
        #expect(try await most(retriers: [LoggingRetrier(wrapping: RetryPolicy(retryLimit: 1), sink: { _ in })]) == "2")
        #expect(try await most(retriers: [RetryPolicy(), Retrier { _, _ in .doNotRetry }]) == nil)
        #expect(
            try await most(retriers: [RetryPolicy()], hedging: Hedging(delay: .seconds(1), maximumAttempts: 5)) == "5")
        // A JSON-body retrier given as an adapter before it retries up to 3 times by default.
        #expect(try await most(adapters: [JSONBodyRetrier(values: ["BUSY"])], retriers: [RetryPolicy()]) == "4")
    }

    @Test func namedHeadersReplaceTheCallersAndAControlCharacterIsNeverWritten() async throws {
        let transport = ScriptedTransport([.status(200)])
        let adapter = AttemptContextAdapter(headers: [
            .init("X-Retry-Attempt", .init { "\($0.retryCount)" }),
            .init("X-Smuggled", .init { _ in "1\r\nX-Admin: true" }),
            .init("X-Nothing", .init { _ in nil }),
        ])
        var sent = request()
        sent.setValue("caller's", forHTTPHeaderField: "X-Retry-Attempt")
        let session = Session(transport: transport, adapters: [adapter])

        _ = try await session.send(sent)

        #expect(values("X-Retry-Attempt", in: transport) == ["0"])
        #expect(values("X-Smuggled", in: transport) == [nil])
        #expect(values("X-Admin", in: transport) == [nil])
        #expect(values("X-Nothing", in: transport) == [nil])
    }

    @Test(arguments: ["", "X Attempt", "X-Attempt:", "Ätt", "X\r\nY"])
    func aNameThatIsNotATokenIsRejected(name: String) {
        let error = #expect(throws: ConfigurationError.self) {
            try AttemptContextAdapter.validated(headers: [.init(name, .attempt)])
        }
        #expect(error?.message == "AttemptContextAdapter.headers must name each header with a token, got \"\(name)\"")
    }

    @Test func aNameGivenTwiceIsRejected() throws {
        let error = #expect(throws: ConfigurationError.self) {
            try AttemptContextAdapter.validated(headers: [.init("x-attempt", .attempt), .init("X-Attempt", .attempt)])
        }
        #expect(error?.message == "AttemptContextAdapter.headers names \"X-Attempt\" more than once")
        #expect(try AttemptContextAdapter.validated(headers: AttemptContextAdapter.plain.headers).headers.count == 3)
    }

    @Test func anInvalidNameWrittenInCodeTrapsNamingIt() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = AttemptContextAdapter(headers: [.init("X Attempt", .attempt)])
        }

        expectStandardError(
            of: result, contains: "AttemptContextAdapter.headers must name each header with a token, got \"X Attempt\"")
    }

    @Test func aContextMadeOutsideASessionKnowsNoDeadlineAndNoMost() async throws {
        let context = RequestContext(attempt: 2)
        let adapted = try await AttemptContextAdapter.plain.adapt(request(), context: context)

        #expect(context.timeLeft == nil && context.maximumAttempts == nil)
        #expect(adapted.value(forHTTPHeaderField: "X-Attempt") == "2")
        #expect(adapted.value(forHTTPHeaderField: "X-Time-Left-Ms") == nil)
    }
}
