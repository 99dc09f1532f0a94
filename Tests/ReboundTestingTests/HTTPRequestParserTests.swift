import Foundation
import Testing

@testable import ReboundTesting

private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

@Suite("HTTPRequestParser")
struct HTTPRequestParserTests {
    @Test func parsesRequestLineHeadersAndContentLength() throws {
        let text = "POST /items?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nX-Key:  v \r\n\r\nhello"

        guard case .head(let head) = HTTPRequestParser.parseHead(bytes(text)) else {
            Issue.record("not parsed")
            return
        }

        #expect(head.method == "POST")
        #expect(head.target == "/items?x=1")
        #expect(head.value(of: "x-key") == "v")
        #expect(head.bodyFraming == .length(5))
        #expect(head.keepsAlive)
        let body = HTTPRequestParser.parseBody(bytes(text)[head.length...], framing: head.bodyFraming)
        #expect(body == .body(Data("hello".utf8), consumed: 5))
    }

    @Test(arguments: ["GET / HTTP/1.1\r\nHost: a\r\n", "GET / HT", ""])
    func incompleteHeadAsksForMore(text: String) {
        #expect(HTTPRequestParser.parseHead(bytes(text)) == .incomplete)
    }

    @Test(arguments: [
        ("GET /\r\n\r\n", "malformed request line"),
        ("GET / SPDY/3\r\n\r\n", "malformed request line"),
        ("GET / HTTP/1.1\r\nNoColon\r\n\r\n", "malformed header line"),
        ("GET / HTTP/1.1\r\nContent-Length: -4\r\n\r\n", "malformed Content-Length"),
        ("GET / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", "unsupported transfer coding"),
    ])
    func malformedHeadsAreInvalidNotACrash(text: String, reason: String) {
        #expect(HTTPRequestParser.parseHead(bytes(text)) == .invalid(reason))
    }

    @Test func aTLSHandshakeIsRefusedAtOnceNotWaitedOn() {
        // The first bytes of a TLS record that carries a ClientHello: no line end comes.
        #expect(HTTPRequestParser.parseHead([0x16, 0x03, 0x01, 0x02, 0x00]) == .invalid("not an HTTP request"))
        #expect(HTTPRequestParser.parseHead(bytes("PATCH /x HT")) == .incomplete)
    }

    @Test func oversizedHeadIsInvalid() {
        let text = "GET / HTTP/1.1\r\nX: " + String(repeating: "a", count: 70_000)
        #expect(HTTPRequestParser.parseHead(bytes(text)) == .invalid("request head larger than 64 KiB"))
    }

    @Test func decodesChunkedBodiesWithExtensionsAndTrailers() {
        let body = bytes("4;ext=1\r\nWiki\r\n5\r\npedia\r\n0\r\nX-Trailer: 1\r\n\r\nNEXT")

        #expect(
            HTTPRequestParser.parseBody(body[...], framing: .chunked)
                == .body(Data("Wikipedia".utf8), consumed: body.count - 4))
    }

    @Test(arguments: ["4\r\nWi", "4\r\nWiki\r\n", "0\r\n"])
    func incompleteChunkedBodyAsksForMore(text: String) {
        #expect(HTTPRequestParser.parseBody(bytes(text)[...], framing: .chunked) == .incomplete)
    }

    @Test(arguments: [("zz\r\n", "malformed chunk size"), ("2\r\nabXY", "chunk not followed by CRLF")])
    func malformedChunkedBodyIsInvalid(text: String, reason: String) {
        #expect(HTTPRequestParser.parseBody(bytes(text)[...], framing: .chunked) == .invalid(reason))
    }

    @Test(arguments: [
        ("HTTP/1.1", nil, true), ("HTTP/1.1", "close", false), ("HTTP/1.0", nil, false),
        ("HTTP/1.0", "keep-alive", true),
    ])
    func keepAliveFollowsTheVersionAndConnectionHeader(version: String, connection: String?, keepsAlive: Bool) {
        let text = "GET / \(version)\r\n" + (connection.map { "Connection: \($0)\r\n" } ?? "") + "\r\n"
        guard case .head(let head) = HTTPRequestParser.parseHead(bytes(text)) else {
            Issue.record("not parsed")
            return
        }
        #expect(head.keepsAlive == keepsAlive)
    }
}
