import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A POST retried only when it never reached the server, over real HTTP.
@Suite("Retries of what never left, over loopback", .timeLimit(.minutes(5)))
struct UnsentRetryOverLoopbackTests {
    /// A transport on a URLSession of its own: its first request opens a new connection, which no other test holds.
    private func freshTransport() -> URLSessionHTTPTransport {
        URLSessionHTTPTransport(session: URLSession(configuration: .ephemeral))
    }

    @Test func aPostToAPortThatStartsListeningWithinTheBackoffReachesTheServerOnce() async throws {
        let port = try RefusedPort()
        let clock = ManualClock()
        let session = Session(transport: freshTransport(), retriers: [RetryPolicy(unsentRetryLimit: 1)], clock: clock)

        let ended = Locked(false)
        let task = Task {
            defer { ended.withLock { $0 = true } }
            return try await session.send(port.url("/orders"), method: .post, body: Data("{}".utf8))
        }
        // The connection was refused; the policy waits its backoff before it sends the POST again (or the request
        // ends, when it does not retry).
        while clock.pendingSleepCount == 0, !ended.withLock({ $0 }) { await Task.yield() }
        let server = try port.startListening()
        defer { server.stop() }
        server.route("/orders", [.status(201, body: "created")])
        clock.advance(by: .milliseconds(500))
        let response = try await task.value

        #expect(response.statusCode == 201)
        #expect(server.hits("/orders") == 1)
        #expect(response.attempts.map { $0.failure?.urlError?.code } == [.cannotConnectToHost, nil])
    }

    @Test func aPostWhoseConnectionDropsAfterItWasWrittenIsNotSentAgain() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        // The server reads the POST, then closes the connection without a reply.
        server.route("/orders", [.drop, .status(201)])
        let session = Session(
            transport: freshTransport(), retriers: [RetryPolicy(unsentRetryLimit: 2)], clock: FastForwardClock())

        let error = try await #require(throws: ReboundError.self) {
            try await session.send(server.url("/orders"), method: .post, body: Data("{}".utf8))
        }

        #expect(server.hits("/orders") == 1)
        #expect(error.urlError.map { !URLSessionHTTPTransport.failureCodesBeforeSending.contains($0.code) } == true)
    }
}
