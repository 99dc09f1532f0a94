import Foundation
import Testing

@testable import Rebound

@Suite("JSONBodyParser")
struct JSONBodyParserTests {
    private func parse(_ text: String, depth: Int = 64) -> JSONValue? {
        JSONBodyParser.parse(Data(text.utf8), maximumDepth: depth)
    }

    @Test(arguments: [
        (
            #"{"a": 1, "b": [true, false, null], "c": {"d": "e"}}"#,
            JSONValue.object(["a": 1, "b": .array([true, false, .null]), "c": .object(["d": "e"])])
        ),
        (" \n\t[ ] \r\n", .array([])),
        ("{}", .object([:])),
        ("-0.5e2", .number(-50)),
        ("0", .number(0)),
        ("1E+3", .number(1000)),
        (#""a\"b\\c\/d\b\f\n\r\t""#, .string("a\"b\\c/d\u{08}\u{0C}\n\r\t")),
        (#""\u00e9\u20AC\ud83d\ude00""#, .string("é€😀")),
        ("\"é€😀\"", .string("é€😀")),
        ("\u{FEFF}{\"k\":\"v\"}", .object(["k": "v"])),
    ])
    func parsesValidJSON(text: String, expected: JSONValue) {
        #expect(parse(text) == expected)
    }

    @Test(arguments: [
        "", " ", "{", "[1,", #"{"a":"#, #"{"a" 1}"#, #"{"a":1,}"#, "[1,]", "[1 2]", #"{"a":1}x"#, "01", "1.", ".5",
        "-", "1e", "+1", "tru", "nul", "True", "'a'", #""abc"#, #""\x""#, #""\u12""#, #""\ud83d""#,
        #""\ud83d\u0041""#, "\"a\u{01}b\"", "NaN", "1e999", "[1]]", "<html></html>", "{a:1}",
    ])
    func rejectsInvalidJSON(text: String) {
        #expect(parse(text) == nil)
    }

    @Test(
        arguments: [
            [0xFF, 0xFE, 0x7B, 0x00, 0x7D, 0x00],  // UTF-16 with a byte order mark
            [0x22, 0xC3, 0x28, 0x22],  // a bad continuation byte
            [0x22, 0xC0, 0xAF, 0x22],  // an overlong encoding
            [0x22, 0xED, 0xA0, 0x80, 0x22],  // a UTF-8 encoded surrogate
            [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22],  // above U+10FFFF
            [0x22, 0xE2, 0x82, 0x22],  // a truncated sequence
            [0x7B, 0xC3, 0xA9, 0x7D],  // non-ASCII outside a string
        ] as [[UInt8]])
    func rejectsBytesThatAreNotUTF8(bytes: [UInt8]) {
        #expect(JSONBodyParser.parse(Data(bytes), maximumDepth: 64) == nil)
    }

    @Test func rejectsNestingDeeperThanTheLimitWithoutRecursingFurther() {
        #expect(parse(String(repeating: "[", count: 3) + String(repeating: "]", count: 3), depth: 3) != nil)
        #expect(parse(String(repeating: "[", count: 4) + String(repeating: "]", count: 4), depth: 3) == nil)
        #expect(parse(String(repeating: "{\"a\":", count: 65) + "1" + String(repeating: "}", count: 65)) == nil)
        // A million open brackets: refused at depth 65, not a stack overflow.
        #expect(parse(String(repeating: "[", count: 1_000_000)) == nil)
    }
}
