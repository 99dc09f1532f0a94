import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Real HTTP through URLSession to the loopback server, accepting every status so that replies are seen as sent.
private func fetch(
    _ url: URL, method: HTTPMethod = .get, headers: [String: String] = [:], body: Data? = nil,
    session: URLSession = .shared
) async throws -> (Data, HTTPURLResponse) {
    try await URLSessionHTTPTransport(session: session).send(
        URLRequest(url: url, method: method, headers: headers, body: body))
}

@Suite("LoopbackServer", .timeLimit(.minutes(5)))
struct LoopbackServerTests {
    @Test func answersARoutesRepliesInOrderAndRepeatsTheLast() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/flaky", [.status(503), .status(502, body: "bad"), .status(200, body: "ok")])

        var statuses: [Int] = []
        for _ in 0..<5 { statuses.append(try await fetch(server.url("/flaky")).1.statusCode) }

        #expect(statuses == [503, 502, 200, 200, 200])
        #expect(server.hits("/flaky") == 5)
        #expect(server.totalHits == 5)
    }

    @Test func sendsHeadersAndBody() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/h", [.status(429, headers: ["Retry-After": "7", "X-Thing": "a b"], body: "slow down")])

        let (data, response) = try await fetch(server.url("/h"))

        #expect(response.statusCode == 429)
        #expect(response.value(forHTTPHeaderField: "Retry-After") == "7")
        #expect(response.value(forHTTPHeaderField: "X-Thing") == "a b")
        #expect(String(decoding: data, as: UTF8.self) == "slow down")
    }

    @Test func recordsMethodPathQueryHeadersAndBody() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/items", [.json(#"{"id":1}"#, status: 201)])

        _ = try await fetch(
            server.url("/items?page=2"), method: .post, headers: ["X-Trace": "t1"], body: Data(#"{"a":1}"#.utf8))

        let received = try #require(server.requests("/items").first)
        #expect(received.method == "POST")
        #expect(received.path == "/items")
        #expect(received.query == "page=2")
        #expect(received.value(forHeader: "x-trace") == "t1")
        #expect(received.body == Data(#"{"a":1}"#.utf8))
    }

    @Test func largeBodiesArriveWhole() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/upload") { request, _ in .status(200, body: "\(request.body.count)") }
        let body = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0) })

        let (data, _) = try await fetch(server.url("/upload"), method: .put, body: body)

        #expect(String(decoding: data, as: UTF8.self) == "300000")
        #expect(server.requests("/upload").first?.body == body)
    }

    @Test func handlerRoutesSeeTheRequestAndItsNumber() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/n") { request, number in .status(200, body: "\(request.method) \(number)") }

        _ = try await fetch(server.url("/n"))
        let (data, _) = try await fetch(server.url("/n"), method: .delete)

        #expect(String(decoding: data, as: UTF8.self) == "DELETE 2")
    }

    @Test func unknownPathsAnswer404AndAreCounted() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }

        let (_, response) = try await fetch(server.url("/nowhere"))

        #expect(response.statusCode == 404)
        #expect(server.hits("/nowhere") == 1)
    }

    @Test func reroutingResetsTheRoutesCounts() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/r", [.status(500)])
        _ = try await fetch(server.url("/r"))

        server.route("/r", [.status(200)])
        let (_, response) = try await fetch(server.url("/r"))

        #expect(response.statusCode == 200)
        #expect(server.hits("/r") == 1)
    }

    @Test func droppedConnectionReachesTheClientAsAnError() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/drop", [.drop])

        await #expect(throws: URLError.self) {
            try await fetch(server.url("/drop"), session: URLSession(configuration: .ephemeral))
        }
        #expect(server.hits("/drop") == 1)
    }

    @Test func connectionCloseInAReplyClosesTheConnectionSoTheNextDropIsSeen() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/close", [.status(200, headers: ["Connection": "close"])])
        server.route("/drop", [.drop, .status(200)])
        let session = URLSession(configuration: .ephemeral)

        _ = try await fetch(server.url("/close"), session: session)

        // Had the connection stayed open, the client would have re-sent the dropped request by itself.
        await #expect(throws: URLError.self) { try await fetch(server.url("/drop"), session: session) }
        #expect(server.hits("/drop") == 1)
    }

    @Test func delayedReplyArrivesAfterTheRequestIsCounted() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/slow", [.status(200, body: "late").delayed(by: .milliseconds(20))])

        let (data, _) = try await fetch(server.url("/slow"))
        try await server.waitForRequests(1)

        #expect(String(decoding: data, as: UTF8.self) == "late")
    }

    @Test func headRequestsGetNoBody() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/h", [.status(200, body: "body")])

        let (data, response) = try await fetch(server.url("/h"), method: .head)

        #expect(response.statusCode == 200)
        #expect(data.isEmpty)
    }

    @Test func stopClosesThePortAndIsIdempotent() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/a", [.status(200).delayed(by: .seconds(30))])
        let url = server.url("/a")
        let pending = Task { try await fetch(url, session: URLSession(configuration: .ephemeral)) }
        try await server.waitForRequests(1)

        server.stop()
        server.stop()

        // The delayed request is dropped rather than waited for, and nothing more reaches the stopped server (the
        // port may already serve another test's server, so what the new request gets is not checked).
        await #expect(throws: URLError.self) { try await pending.value }
        _ = try? await fetch(url, session: URLSession(configuration: .ephemeral))
        #expect(server.totalHits == 1)
    }

    @Test func servesManyConcurrentKeptAliveRequests() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/ok", [.status(200, body: "ok")])

        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<2_000 {
                group.addTask { try await fetch(server.url("/ok")).1.statusCode }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }

        #expect(statuses.count == 2_000 && statuses.allSatisfy { $0 == 200 })
        #expect(server.hits("/ok") == 2_000)
    }
}
