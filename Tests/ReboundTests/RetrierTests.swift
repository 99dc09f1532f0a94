import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Retrier", .timeLimit(.minutes(5)))
struct RetrierTests {
    let fallback = URL(string: "https://fallback.example.com/items")!

    /// Critical requests get five retries on the fallback host; the others one, on the same host.
    var byKind: Retrier {
        let fallback = fallback
        return Retrier { request, error in
            let patience = request.label == "critical" ? 5 : 1
            guard request.retryCount < patience else { return .doNotRetryWithError(error) }
            guard request.label == "critical" else { return .retryWithDelay(.seconds(1)) }
            var moved = request.originalRequest
            moved.url = fallback
            return .retryWithRequest(moved, delay: .milliseconds(250))
        }
    }

    @Test func sendsTheNextAttemptsToTheModifiedRequest() async throws {
        let log = Log()
        let transport = ScriptedTransport { request, _ in
            request.url?.host == "api.example.com" ? .status(503) : .status(200)
        }
        let session = Session(
            transport: transport, adapters: [taggingAdapter("a", log: log)], retriers: [byKind],
            clock: FastForwardClock())

        let response = try await session.send(request(), label: "critical")

        #expect(transport.requests.map(\.url?.host) == ["api.example.com", "fallback.example.com"])
        #expect(response.request.value(forHTTPHeaderField: "X-Adapters") == "a")
        #expect(response.originalRequest.url == exampleURL)
        #expect(response.attempts.map(\.retryDelay) == [.milliseconds(250), nil])
    }

    @Test func treatsKindsOfRequestDifferently() async throws {
        let transport = ScriptedTransport { _, _ in .urlError(.cannotConnectToHost) }
        let session = Session(transport: transport, retriers: [byKind], clock: FastForwardClock())

        let plain = await #expect(throws: ReboundError.self) { try await session.send(request()) }
        let critical = await #expect(throws: ReboundError.self) { try await session.send(request(), label: "critical") }

        #expect(plain?.attemptCount == 2)
        #expect(critical?.attemptCount == 6)
    }

    @Test func stoppingWithTheGivenFailureEndsWithItUnwrappedAndAsksNoLaterRetrier() async throws {
        let log = Log()
        let session = Session(
            transport: ScriptedTransport([.status(503)]),
            retriers: [
                Retrier { _, error in .doNotRetryWithError(error) }, loggingRetrier("later", log: log, answer: .retry),
            ],
            clock: FastForwardClock())

        let error = try await #require(throws: ReboundError.self) { try await session.send(request()) }

        guard case .unacceptableStatusCode(503) = error.reason else {
            Issue.record("expected the attempt's own failure, got \(error.reason)")
            return
        }
        #expect(log.all.isEmpty)
    }

    @Test func stoppingWithAnotherErrorKeepsTheAttemptsFailureBesideIt() async throws {
        let session = Session(
            transport: ScriptedTransport([.status(503)]),
            retriers: [Retrier { _, _ in .doNotRetryWithError(TestError("x")) }],
            clock: FastForwardClock())

        let error = try await #require(throws: ReboundError.self) { try await session.send(request()) }

        guard case .retryAborted(let stop as TestError, .unacceptableStatusCode(503)) = error.reason else {
            Issue.record("expected retryAborted, got \(error.reason)")
            return
        }
        #expect(stop == TestError("x"))
    }

    @Test func mediaPlayerDefaultRetriesAnyFailureThreeTimesThenEndsWithTheLastOne() async throws {
        let clock = FastForwardClock()
        let log = Log()
        let session = Session(
            transport: ScriptedTransport([.status(503), .urlError(.timedOut), .status(500), .status(404)]),
            retriers: [.mediaPlayerDefault, loggingRetrier("later", log: log, answer: .retry)], clock: clock)

        let error = try await #require(throws: ReboundError.self) {
            try await session.send(request(.post))
        }

        #expect(error.attemptCount == 4)
        #expect(error.statusCode == 404)
        guard case .unacceptableStatusCode(404) = error.reason else {
            Issue.record("expected the last failure, got \(error.reason)")
            return
        }
        #expect(clock.sleeps == [.seconds(1), .seconds(exp(0.25)), .seconds(exp(0.5))])
        #expect(log.all.isEmpty)
    }

    @Test(arguments: [(0, 1.0), (1, exp(0.25)), (6, exp(1.5)), (7, 5.0), (1_000, 5.0), (Int.max, 5.0), (-4, 1.0)])
    func mediaPlayerDelayIsEToAQuarterOfTheRetryCountCappedAtFiveSeconds(retryCount: Int, seconds: Double) {
        #expect(Retrier.mediaPlayerDelay(forRetryCount: retryCount) == .seconds(seconds))
    }

    @Test func retryWithRequestCarriesItsRequestAndDelay() {
        let result = RetryResult.retryWithRequest(request(), delay: .seconds(-3))
        #expect(result.retryRequired)
        #expect(result.delay == .zero)
        #expect(result.request?.url == exampleURL)
        #expect(RetryResult.retry.request == nil)
    }
}
