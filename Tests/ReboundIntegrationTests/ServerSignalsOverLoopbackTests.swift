import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A server that sends `retry-after-ms` and `x-should-retry`, well formed and not, to clients that read them.
@Suite("Server retry signals over loopback", .timeLimit(.minutes(5)))
struct ServerSignalsOverLoopbackTests {
    /// A session whose policy reads both signals, on a clock that sleeps no real time.
    private func session(_ clock: FastForwardClock) -> Session {
        Session(retriers: [RetryPolicy(retryAfter: RetryAfter(signals: .all))], clock: clock)
    }

    @Test(arguments: [
        ("1500", Duration.milliseconds(1_500)), ("250.5", .microseconds(250_500)), ("soon", .seconds(3)),
        ("-1500", .seconds(3)),
    ])
    func retryAfterMsIsTheDelayAndAMalformedOneLeavesRetryAfter(value: String, slept: Duration) async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/busy", [.status(503, headers: ["retry-after-ms": value, "Retry-After": "3"]), .status(200)])
        let clock = FastForwardClock()

        let response = try await session(clock).send(server.url("/busy"))

        #expect(response.statusCode == 200)
        #expect(server.hits("/busy") == 2)
        #expect(clock.sleeps == [slept])
    }

    @Test func shouldRetryFalseEndsTheRequestAfterOneAttemptWithThePreset() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/declined", [.status(503, headers: ["x-should-retry": "false"]), .status(200)])
        let session = Session(resilience: Resilience(clock: FastForwardClock()))

        let error = try await #require(throws: ReboundError.self) { try await session.send(server.url("/declined")) }

        #expect(server.hits("/declined") == 1)
        #expect(error.stopReason == .serverAskedNoRetry)
        #expect(error.description.hasSuffix("not retried: the server asked for no retry (1 attempt)"))
    }

    @Test(arguments: [("true", 2), ("TRUE", 2), ("maybe", 1), ("false", 1)])
    func shouldRetryTrueRetriesAStatusThePolicyWouldNot(value: String, hits: Int) async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/conflict", [.status(409, headers: ["x-should-retry": value]), .status(200)])
        let clock = FastForwardClock()

        let result = try? await session(clock).send(server.url("/conflict"))

        #expect(server.hits("/conflict") == hits)
        #expect((result?.statusCode == 200) == (hits == 2))
    }

    @Test func aMalformedShouldRetryOnARetriedStatusIsRetriedAsUsual() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/flaky", [.status(503, headers: ["x-should-retry": "no thanks"]), .status(200)])
        let clock = FastForwardClock()

        let response = try await session(clock).send(server.url("/flaky"))

        #expect(response.statusCode == 200)
        #expect(clock.sleeps == [.milliseconds(500)])
    }
}
