import Foundation
import Rebound
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Input past every limit is "no match" or ignored, never a crash or a stall.
@Suite("Bad input")
struct BadInputTests {
    // MARK: - JSON bodies

    @Test("A 50 MB body is past the size limit: no match, without parsing")
    func fiftyMegabytes() {
        var body = Data(#"{"error_code": "busy", "pad": ""#.utf8)
        body.append(Data(repeating: UInt8(ascii: "x"), count: 50 * 1024 * 1024))
        body.append(Data(#""}"#.utf8))
        let retrier = JSONBodyRetrier(values: ["busy"])
        #expect(retrier.signal(in: body) == nil)
        #expect(retrier.signal(in: Data(#"{"error_code": "busy"}"#.utf8)) != nil)
    }

    @Test(
        "100,000 levels of nesting are no match at every depth allowed",
        arguments: [1, 64, JSONBodyRetrier.maximumDepthLimit])
    func deepNesting(maximumDepth: Int) {
        let depth = 100_000
        let arrays = Data(repeating: UInt8(ascii: "["), count: depth) + Data(repeating: UInt8(ascii: "]"), count: depth)
        let objects =
            Data(String(repeating: #"{"a":"#, count: depth).utf8) + Data("1".utf8)
            + Data(repeating: UInt8(ascii: "}"), count: depth)
        let retrier = JSONBodyRetrier(maximumDepth: maximumDepth) { _ in true }
        // The parser's recursion is bounded by the depth limit, not by the input.
        #expect(retrier.signal(in: arrays) == nil)
        #expect(retrier.signal(in: objects) == nil)
        // Exactly at the limit it parses.
        let atLimit =
            Data(repeating: UInt8(ascii: "["), count: maximumDepth)
            + Data(repeating: UInt8(ascii: "]"), count: maximumDepth)
        #expect(retrier.signal(in: atLimit) != nil)
    }

    @Test(
        "Invalid UTF-8 is no match",
        arguments: [
            [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xFF, 0x22, 0x7D],  // {"a":"\xFF"}
            [0x7B, 0x22, 0xC3, 0x28, 0x22, 0x3A, 0x31, 0x7D],  // a broken two-byte sequence in a key
            [0xED, 0xA0, 0x80],  // an encoded surrogate
            [0xFE, 0xFF, 0x00, 0x7B, 0x00, 0x7D],  // UTF-16
        ] as [[UInt8]])
    func invalidUTF8(bytes: [UInt8]) {
        let retrier = JSONBodyRetrier { _ in true }
        #expect(retrier.signal(in: Data(bytes)) == nil)
    }

    // MARK: - Retry-After

    static let now = Date(timeIntervalSince1970: 1_700_000_000)

    @Test(
        "Malformed Retry-After values are ignored",
        arguments: [
            "1e300", "-5", "-0", "+5", "0x10", "5.5", "", "   ", "5, 10", "5 10", "٣", "５", "5s", "NaN", "inf",
            "Sun, 06 Nov 1994 08:49:37", "Sun, 31 Feb 2026 08:49:37 GMT",
        ])
    func ignored(value: String) {
        #expect(RetryAfter.delay(from: value, now: Self.now) == nil, "\(value)")
    }

    @Test("Huge numbers and far-future dates are held at the longest delay, then at the policy's maximum")
    func clamped() {
        for value in ["99999999999999999999999", "9223372036854775808", "Fri, 31 Dec 9999 23:59:59 GMT"] {
            let delay = RetryAfter.delay(from: value, now: Self.now)
            #expect(delay.map { $0 > .seconds(1_000_000) && $0 <= RetryResult.longestDelay } == true, "\(value)")
            let response = HTTPURLResponse(
                url: exampleURL, statusCode: 503, httpVersion: nil, headerFields: ["Retry-After": value])!
            #expect(RetryAfter.default.delay(for: response) == .seconds(60), "\(value)")
        }
        #expect(RetryAfter.delay(from: " 7 ", now: Self.now) == .seconds(7))
        #expect(RetryAfter.delay(from: "0", now: Self.now) == .zero)
        #expect(RetryAfter.delay(from: "Sun, 06 Nov 1994 08:49:37 GMT", now: Self.now) == .zero)
    }

    @Test("Two Retry-After fields, which reach the response joined by a comma, are ignored")
    func twoFields() {
        let response = HTTPURLResponse(
            url: exampleURL, statusCode: 503, httpVersion: nil, headerFields: ["Retry-After": "5, 10"])!
        #expect(RetryAfter.default.delay(for: response) == nil)
    }
}
