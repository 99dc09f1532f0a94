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

    @Test func aTruncatedChunkedBodySendsOneChunkOfHalfTheBodyAndCloses() throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/chunked", [.truncatedChunked(length: 8)])
        let client = try RawClient(port: server.port)

        client.send("GET /chunked HTTP/1.1\r\nHost: x\r\n\r\n")
        let (response, closed) = client.readToEnd()

        #expect(response.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(response.contains("Transfer-Encoding: chunked\r\n"))
        #expect(!response.contains("Content-Length"))
        #expect(response.hasSuffix("\r\n\r\n4\r\nxxxx\r\n"))  // no last chunk
        #expect(closed)
    }

    @Test func aMalformedStatusLineIsSentAndTheConnectionCloses() throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/garbage", [.malformedStatusLine])
        let client = try RawClient(port: server.port)

        client.send("GET /garbage HTTP/1.1\r\nHost: x\r\n\r\n")
        let (response, closed) = client.readToEnd()

        #expect(response.hasPrefix("HTTP/1.1 2x0 Broken\r\n"))
        #expect(closed)
    }

    @Test func chaosPutsTheSameFaultsInTheSameRequestNumbersForASeed() {
        let faults: [LoopbackServer.Reply] = [.reset, .drop, .status(503)]
        let chaos = LoopbackServer.Chaos(rate: 0.3, faults: faults, seed: 7)
        let again = LoopbackServer.Chaos(rate: 0.3, faults: faults, seed: 7)
        let other = LoopbackServer.Chaos(rate: 0.3, faults: faults, seed: 8)
        func drawn(_ chaos: LoopbackServer.Chaos) -> [Int] {
            (1...10_000).filter { chaos.fault(forRequest: $0) != nil }
        }

        #expect(drawn(chaos) == drawn(again))
        #expect(drawn(chaos) != drawn(other))
        #expect((2_850...3_150).contains(drawn(chaos).count))
        // Each fault about as often as the others.
        func kind(_ reply: LoopbackServer.Reply) -> String {
            reply.dropsConnection ? "drop" : reply.fault == .reset ? "reset" : "\(reply.status)"
        }
        let kinds = drawn(chaos).compactMap { chaos.fault(forRequest: $0) }.map(kind)
        #expect(Set(kinds) == ["drop", "reset", "503"])
        for fault in Set(kinds) { #expect((850...1_150).contains(kinds.filter { $0 == fault }.count), "\(fault)") }
        #expect(drawn(LoopbackServer.Chaos(rate: 0, faults: faults, seed: 7)).isEmpty)
        #expect(drawn(LoopbackServer.Chaos(rate: 1, faults: faults, seed: 7)).count == 10_000)
    }

    @Test func aChaosRouteAnswersTheFaultsItDrewAndTheScriptElsewhere() throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        let chaos = LoopbackServer.Chaos(rate: 0.5, faults: [.status(503)], seed: 3)
        server.route("/items", [.status(200, body: "ok")], chaos: chaos)

        for number in 1...20 {
            let client = try RawClient(port: server.port)
            client.send("GET /items HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            let (response, _) = client.readToEnd()
            let expected =
                chaos.fault(forRequest: number) == nil ? "HTTP/1.1 200 OK" : "HTTP/1.1 503 Service Unavailable"
            #expect(response.hasPrefix(expected), "request \(number)")
        }
        #expect(server.hits("/items") == 20)
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
