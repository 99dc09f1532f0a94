import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A server that misbehaves on purpose. Each fault costs one attempt, which the attempt timeout (or the connection's
/// loss) ends, and the policy retries onto a healthy reply.
@Suite("A faulty server costs one attempt", .timeLimit(.minutes(5)))
struct FaultyServerTests {
    typealias Reply = LoopbackServer.Reply

    static let faults: [(String, Reply)] = [
        ("stall before headers", .stall),
        ("stall mid-body", .stallMidBody(length: 4096)),
        ("close mid-body", .closeMidBody(length: 4096)),
        ("reset", .reset),
        (
            "slow trickle",
            Reply.status(200, body: String(repeating: "x", count: 200)).trickled(bytes: 10, every: .milliseconds(100))
        ),
    ]

    @Test("Each fault ends its attempt and the retry succeeds", arguments: 0..<5)
    func faultThenHealthy(index: Int) async throws {
        let (name, fault) = Self.faults[index]
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/flaky", [fault, .status(200, body: "ok")])
        // RetryPolicy for timeouts; ConnectionLostRetryPolicy for a connection lost mid-body, which Linux reports as
        // `URLError.unknown`.
        let session = Session(
            retriers: [RetryPolicy(backoff: .zero), ConnectionLostRetryPolicy(exponentialBackoffScale: 0.01)],
            attemptTimeout: .milliseconds(400), clock: ContinuousClock())

        let response = try await session.send(server.url("/flaky"))
        #expect(String(decoding: response.data, as: UTF8.self) == "ok", "\(name)")
        // Two attempts, the fault's and the healthy one; a machine so loaded that the healthy answer takes longer than
        // the attempt timeout retries that one too, and the route answers 200 again.
        #expect(response.attempts.count >= 2, "\(name)")
        #expect(
            response.attempts[0].failure?.urlError != nil,
            "\(name): \(String(describing: response.attempts[0].failure))")
        #expect(server.hits("/flaky") == response.attempts.count)
    }

    @Test("A stalled server ends at the attempt timeout, not at URLSession's 60 s, and stopping it frees its threads")
    func stallWithoutRetry() async throws {
        let server = try LoopbackServer()
        server.route("/stall", [.stall])
        let session = Session(attemptTimeout: .milliseconds(300))
        let error = try await #require(throws: ReboundError.self) { try await session.send(server.url("/stall")) }
        #expect(error.urlError?.code == .timedOut)
        server.stop()  // returns: the stalled connection's thread wakes
    }

    @Test("A POST on a kept-alive connection the server dropped ends within the attempt timeout")
    func postOnDroppedKeepAlive() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/first", [Reply.status(200, body: "one").closingSilently()])
        server.route("/post", [.status(200, body: "two")])
        let session = Session(retriers: [RetryPolicy(backoff: .zero)], attemptTimeout: .seconds(2))

        _ = try await session.send(server.url("/first"))
        // Whatever URLSession makes of the dead connection (a retry of its own, an error, a hang), the request ends:
        // a hang would be cut by the attempt timeout and retried on a new connection (the suite's time limit catches a
        // request that never ends).
        let response = try await session.send(server.url("/post"), method: .post, body: Data("b".utf8))
        #expect(response.statusCode == 200)
        #expect(server.requests("/post").first?.body == Data("b".utf8))
    }
}
