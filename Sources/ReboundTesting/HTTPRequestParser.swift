import Foundation

/// Parses HTTP/1.1 requests from the bytes a loopback connection has received so far.
///
/// Pure functions over a byte buffer, so that the server's socket loop stays small and the parsing is tested
/// on its own. Malformed input is reported, never trapped on.
enum HTTPRequestParser {
    /// The longest request head accepted: 64 KiB.
    static let maximumHeadLength = 64 * 1024

    /// How the body of a request is delimited.
    enum BodyFraming: Equatable {
        case none
        case length(Int)
        case chunked
    }

    /// The request line and headers of a request.
    struct Head: Equatable {
        var method: String
        var target: String
        var version: String
        var headers: [(name: String, value: String)]
        /// The bytes the head takes, up to and including the blank line.
        var length: Int
        var bodyFraming: BodyFraming

        static func == (lhs: Head, rhs: Head) -> Bool {
            lhs.method == rhs.method && lhs.target == rhs.target && lhs.version == rhs.version
                && lhs.headers.elementsEqual(rhs.headers, by: { $0 == $1 }) && lhs.length == rhs.length
                && lhs.bodyFraming == rhs.bodyFraming
        }

        /// The first value of the header `name`, compared without regard to case.
        func value(of name: String) -> String? {
            headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
        }

        /// Whether the connection stays open after the response, by the rules of HTTP/1.0 and 1.1.
        var keepsAlive: Bool {
            let connection = value(of: "Connection")?.lowercased()
            if version == "HTTP/1.0" { return connection == "keep-alive" }
            return connection != "close"
        }

        /// Whether the client waits for `100 Continue` before sending the body.
        var expectsContinue: Bool {
            value(of: "Expect")?.lowercased() == "100-continue"
        }
    }

    enum HeadResult: Equatable {
        case incomplete
        case invalid(String)
        case head(Head)
    }

    enum BodyResult: Equatable {
        case incomplete
        case invalid(String)
        /// The body, and the bytes it took on the wire after the head.
        case body(Data, consumed: Int)
    }

    private static let crlf: [UInt8] = [13, 10]

    /// Whether `byte` may appear in an HTTP token (RFC 9110's `tchar`): a method is made of these.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default: "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// Parses the head at the start of `bytes`.
    static func parseHead(_ bytes: [UInt8]) -> HeadResult {
        // A request line starts with a method, a token: anything else (a TLS handshake's first record, 0x16) cannot
        // become a request, and is refused at once rather than waited on for a line end that never comes.
        if let first = bytes.first, !isTokenByte(first) { return .invalid("not an HTTP request") }
        guard let end = find([13, 10, 13, 10], in: bytes, from: 0) else {
            return bytes.count > maximumHeadLength ? .invalid("request head larger than 64 KiB") : .incomplete
        }
        guard end <= maximumHeadLength else { return .invalid("request head larger than 64 KiB") }
        guard let text = String(bytes: bytes[..<end], encoding: .utf8) else {
            return .invalid("request head is not UTF-8")
        }
        var lines = text.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ", omittingEmptySubsequences: false)
        guard requestLine.count == 3, !requestLine[0].isEmpty, !requestLine[1].isEmpty,
            requestLine[2].hasPrefix("HTTP/1.")
        else { return .invalid("malformed request line") }

        var headers: [(name: String, value: String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
                return .invalid("malformed header line")
            }
            let name = String(line[..<colon])
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers.append((name, value))
        }

        var head = Head(
            method: String(requestLine[0]), target: String(requestLine[1]), version: String(requestLine[2]),
            headers: headers, length: end + 4, bodyFraming: .none)
        if let encoding = head.value(of: "Transfer-Encoding") {
            guard encoding.lowercased() == "chunked" else { return .invalid("unsupported transfer coding") }
            head.bodyFraming = .chunked
        } else if let length = head.value(of: "Content-Length") {
            guard let count = Int(length), count >= 0 else { return .invalid("malformed Content-Length") }
            head.bodyFraming = count > 0 ? .length(count) : .none
        }
        return .head(head)
    }

    /// Parses a body framed as `framing` at the start of `bytes` (the bytes after the head).
    static func parseBody(_ bytes: ArraySlice<UInt8>, framing: BodyFraming) -> BodyResult {
        switch framing {
        case .none:
            return .body(Data(), consumed: 0)
        case .length(let count):
            guard bytes.count >= count else { return .incomplete }
            return .body(Data(bytes.prefix(count)), consumed: count)
        case .chunked:
            return parseChunked(bytes)
        }
    }

    private static func parseChunked(_ bytes: ArraySlice<UInt8>) -> BodyResult {
        var body = Data()
        var index = bytes.startIndex
        while true {
            guard let lineEnd = find(crlf, in: bytes, from: index) else { return .incomplete }
            let sizeText =
                String(decoding: bytes[index..<lineEnd], as: UTF8.self)
                .split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16), size >= 0 else {
                return .invalid("malformed chunk size")
            }
            index = lineEnd + 2
            if size == 0 {
                // Trailer fields, if any, end with a blank line.
                while true {
                    guard let trailerEnd = find(crlf, in: bytes, from: index) else { return .incomplete }
                    let isBlank = trailerEnd == index
                    index = trailerEnd + 2
                    if isBlank { return .body(body, consumed: index - bytes.startIndex) }
                }
            }
            guard bytes.endIndex - index >= size + 2 else { return .incomplete }
            body.append(contentsOf: bytes[index..<(index + size)])
            index += size
            guard bytes[index] == 13, bytes[index + 1] == 10 else { return .invalid("chunk not followed by CRLF") }
            index += 2
        }
    }

    /// The index where `pattern` first occurs in `bytes` at or after `start`.
    private static func find<C: Collection<UInt8>>(_ pattern: [UInt8], in bytes: C, from start: C.Index) -> C.Index?
    where C.Index == Int {
        guard bytes.count >= pattern.count else { return nil }
        var index = start
        while index + pattern.count <= bytes.endIndex {
            if bytes[index] == pattern[0] && pattern.indices.allSatisfy({ bytes[index + $0] == pattern[$0] }) {
                return index
            }
            index += 1
        }
        return nil
    }
}

/// Parses `bytes` as the loopback server parses what a connection received, request after request, and returns how
/// many whole requests it found; for the parser's fuzz target, which holds it to never trapping and never looping.
@_spi(Fuzzing) public func parseRequestsForFuzzing(_ bytes: [UInt8]) -> Int {
    var rest = bytes
    var count = 0
    while !rest.isEmpty {
        guard case .head(let head) = HTTPRequestParser.parseHead(rest) else { return count }
        guard head.length <= rest.count,
            case .body(_, let consumed) = HTTPRequestParser.parseBody(rest[head.length...], framing: head.bodyFraming),
            consumed >= 0, head.length + consumed <= rest.count
        else { return count }
        count += 1
        rest.removeFirst(head.length + consumed)
        // A request of no bytes would loop for ever: the parser never returns one.
        if head.length + consumed == 0 { return count }
    }
    return count
}
