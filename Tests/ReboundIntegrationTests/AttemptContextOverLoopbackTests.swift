import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a server sees of each attempt's context, over real HTTP and the real clock.
@Suite("Attempt context over loopback", .timeLimit(.minutes(5)))
struct AttemptContextOverLoopbackTests {
    @Test func theServerSeesEachAttemptsNumberAndAShrinkingTimeLeft() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/flaky", [.status(503), .status(503), .status(200, body: "ok")])
        // 50 ms between attempts, so that each sees less time left than the one before; a deadline far enough away that
        // a loaded machine does not reach it (tests that keep the cooperative threads busy can hold a backoff's wake-up
        // for tens of seconds); a URLSession of its own, whose connections no other test holds.
        let session = Session(
            transport: URLSessionHTTPTransport(session: URLSession(configuration: .ephemeral)),
            adapters: [AttemptContextAdapter.envoy, AttemptContextAdapter.aws],
            retriers: [RetryPolicy(backoff: .constant(.milliseconds(50)))], deadline: .seconds(240))

        let response = try await session.send(server.url("/flaky"))

        #expect(String(decoding: response.data, as: UTF8.self) == "ok")
        let seen = server.requests("/flaky")
        #expect(seen.map { $0.value(forHeader: "x-envoy-attempt-count") } == ["1", "2", "3"])
        #expect(
            seen.map { $0.value(forHeader: "amz-sdk-request") } == [
                "attempt=1; max=3", "attempt=2; max=3", "attempt=3; max=3",
            ])
        let left = seen.compactMap { $0.value(forHeader: "x-envoy-expected-rq-timeout-ms").flatMap { Int($0) } }
        #expect(left.count == 3)
        #expect(left.allSatisfy { (1...240_000).contains($0) }, "\(left)")
        #expect(zip(left, left.dropFirst()).allSatisfy { $0 - $1 >= 50 }, "\(left)")
    }
}
