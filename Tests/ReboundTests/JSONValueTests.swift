import Rebound
import Testing

@Suite("JSONValue")
struct JSONValueTests {
    let body: JSONValue = .object([
        "error": .object(["code": "RATE_LIMITED", "status": 429]),
        "errors": .array([.object(["code": 7])]),
    ])

    @Test func findsValuesByPath() {
        #expect(body.value(at: ["error", "code"]) == "RATE_LIMITED")
        #expect(body.value(at: ["errors", "0", "code"]) == 7)
        #expect(body.value(at: ["errors", "1", "code"]) == nil)
        #expect(body.value(at: ["error", "code", "x"]) == nil)
        #expect(body.value(at: []) == body)
        #expect(body["error"]?["status"]?.numberValue == 429)
        #expect(body["error"]?["code"]?.stringValue == "RATE_LIMITED")
    }

    @Test func numbersCompareAsDoubles() {
        #expect(JSONValue.number(429.0) == 429)
        #expect(Set<JSONValue>([429, "429"]).count == 2)
    }

    @Test(arguments: [
        (JSONValue.string("a\"b\n\u{01}"), #""a\"b\n\u0001""#), (429, "429"), (1.5, "1.5"), (true, "true"),
        (.null, "null"), (.array([1, "x"]), #"[1,"x"]"#), (.object(["b": 1, "a": .null]), #"{"a":null,"b":1}"#),
    ])
    func describesItselfAsCompactJSON(value: JSONValue, text: String) {
        #expect(value.description == text)
    }
}
