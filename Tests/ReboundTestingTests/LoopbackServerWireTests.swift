import Foundation
import ReboundTesting
import Testing

/// The loopback server on the wire, with a bare TCP client.
@Suite("LoopbackServer on the wire", .timeLimit(.minutes(5)))
struct LoopbackServerWireTests {
    @Test func answersExpectContinueBeforeTheBodyIsSent() throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/upload") { request, _ in .status(200, body: "got \(request.body.count)") }
        let client = try RawClient(port: server.port)

        client.send("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        let interim = client.read(until: "\r\n\r\n")
        client.send("hello")
        let final = client.read(until: "got 5")

        #expect(interim.hasPrefix("HTTP/1.1 100 Continue\r\n"))
        #expect(final.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(server.requests("/upload").first?.body == Data("hello".utf8))
    }

    @Test func decodesAChunkedUpload() throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/upload", [.status(201)])
        let client = try RawClient(port: server.port)

        client.send(
            "PUT /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
        let response = client.read(until: "\r\n\r\n")

        #expect(response.hasPrefix("HTTP/1.1 201 Created\r\n"))
        #expect(server.requests("/upload").first?.body == Data("abcde".utf8))
    }

    @Test func answersPipelinedRequestsInOrderOnOneConnection() throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/n") { _, number in .status(200, body: "n=\(number);") }
        let client = try RawClient(port: server.port)

        client.send(
            "GET /n HTTP/1.1\r\nHost: x\r\n\r\nGET /n HTTP/1.1\r\nHost: x\r\n\r\nGET /n HTTP/1.1\r\nHost: x\r\n\r\n")
        let responses = client.read(until: "n=3;")

        #expect(responses.components(separatedBy: "HTTP/1.1 200 OK").count == 4)
        #expect(responses.contains("n=1;") && responses.contains("n=2;") && responses.contains("n=3;"))
    }

    @Test func answersAMalformedRequestWith400AndCloses() throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        let client = try RawClient(port: server.port)

        client.send("NONSENSE\r\n\r\n")
        let (response, closed) = client.readToEnd()

        #expect(response.hasPrefix("HTTP/1.1 400 Bad Request\r\n"))
        #expect(response.contains("Connection: close\r\n"))
        #expect(response.hasSuffix("malformed request line"))
        #expect(closed)
        #expect(server.totalHits == 0)
    }

    @Test func closesAfterAnHTTP10RequestWithoutKeepAlive() throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/", [.status(200, body: "bye")])
        let client = try RawClient(port: server.port)

        client.send("GET / HTTP/1.0\r\n\r\n")
        let (response, closed) = client.readToEnd()

        #expect(response.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(response.hasSuffix("\r\n\r\nbye"))
        #expect(closed)
    }
}
