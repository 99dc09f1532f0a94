import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("URLSessionTransport", .timeLimit(.minutes(1)))
struct URLSessionTransportTests {
    @Test func returnsAnyStatusWithItsBodyAndHeaders() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/teapot", [.status(418, headers: ["X-Kind": "teapot"], body: "short and stout")])

        let (data, response) = try await URLSessionTransport().send(URLRequest(url: server.url("/teapot")))

        #expect(response.statusCode == 418)
        #expect(response.value(forHTTPHeaderField: "X-Kind") == "teapot")
        #expect(String(decoding: data, as: UTF8.self) == "short and stout")
    }

    @Test func sendsMethodHeadersAndBody() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/echo", [.status(204)])

        _ = try await URLSessionTransport().send(
            URLRequest(url: server.url("/echo"), method: .patch, headers: ["X-A": "1"], body: Data("patch".utf8)))

        let received = try #require(server.requests("/echo").first)
        #expect(received.method == "PATCH")
        #expect(received.value(forHeader: "X-A") == "1")
        #expect(received.body == Data("patch".utf8))
    }

    @Test func alreadyCancelledTaskSendsNothing() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/a", [.status(200)])
        let url = server.url("/a")

        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await URLSessionTransport().send(URLRequest(url: url))
        }

        await #expect(throws: CancellationError.self) { try await task.value }
        // Prove the server is still answering, then that the cancelled request never reached it.
        _ = try await URLSessionTransport().send(URLRequest(url: url))
        #expect(server.hits("/a") == 1)
    }

    @Test func cancellingDuringTheSendEndsItWithCancellation() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/slow", [.status(200).delayed(by: .seconds(30))])
        let url = server.url("/slow")

        let task = Task { try await URLSessionTransport().send(URLRequest(url: url)) }
        try await server.waitForRequests(1)
        task.cancel()

        await #expect(throws: CancellationError.self) { try await task.value }
    }

    @Test func refusedConnectionIsCannotConnectToHost() async throws {
        let down = try RefusedPort()
        defer { down.close() }

        await #expect {
            try await URLSessionTransport(session: URLSession(configuration: .ephemeral)).send(
                URLRequest(url: down.url()))
        } throws: { error in
            (error as? URLError)?.code == .cannotConnectToHost
        }
    }
}
