import Foundation

/// A strict JSON parser (RFC 8259) for response bodies that must never crash, hang or recurse without bound.
///
/// It returns `nil` for anything that is not one complete JSON value in UTF-8: empty or truncated input, bytes that
/// are not UTF-8 (a UTF-16 body included), nesting deeper than `maximumDepth`, trailing garbage. A UTF-8 byte order
/// mark is skipped. Work is linear in the input's size.
struct JSONBodyParser {
    private let bytes: [UInt8]
    private let maximumDepth: Int
    private var index = 0

    static func parse(_ data: Data, maximumDepth: Int) -> JSONValue? {
        var parser = JSONBodyParser(bytes: Array(data), maximumDepth: maximumDepth)
        return parser.document()
    }

    private init(bytes: [UInt8], maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
    }

    private mutating func document() -> JSONValue? {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
        skipWhitespace()
        guard let value = value(depth: 0) else { return nil }
        skipWhitespace()
        return index == bytes.count ? value : nil
    }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
    }

    private mutating func consume(_ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { return false }
        for offset in 0..<count where bytes[index + offset] != literal.utf8Start[offset] { return false }
        index += count
        return true
    }

    private mutating func value(depth: Int) -> JSONValue? {
        guard let byte = current else { return nil }
        switch byte {
        case UInt8(ascii: "{"): return object(depth: depth + 1)
        case UInt8(ascii: "["): return array(depth: depth + 1)
        case UInt8(ascii: "\""): return string().map(JSONValue.string)
        case UInt8(ascii: "t"): return consume("true") ? .bool(true) : nil
        case UInt8(ascii: "f"): return consume("false") ? .bool(false) : nil
        case UInt8(ascii: "n"): return consume("null") ? .null : nil
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return number()
        default: return nil
        }
    }

    private mutating func object(depth: Int) -> JSONValue? {
        guard depth <= maximumDepth else { return nil }
        index += 1
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard current == UInt8(ascii: "\""), let key = string() else { return nil }
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { return nil }
            index += 1
            skipWhitespace()
            guard let member = value(depth: depth) else { return nil }
            members[key] = member
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                return .object(members)
            default: return nil
            }
        }
    }

    private mutating func array(depth: Int) -> JSONValue? {
        guard depth <= maximumDepth else { return nil }
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            guard let element = value(depth: depth) else { return nil }
            elements.append(element)
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"):
                index += 1
                return .array(elements)
            default: return nil
            }
        }
    }

    private mutating func number() -> JSONValue? {
        let start = index
        if current == UInt8(ascii: "-") { index += 1 }
        guard let first = current, isDigit(first) else { return nil }
        index += 1
        if first != UInt8(ascii: "0") { skipDigits() }
        if current == UInt8(ascii: ".") {
            index += 1
            guard let digit = current, isDigit(digit) else { return nil }
            skipDigits()
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard let digit = current, isDigit(digit) else { return nil }
            skipDigits()
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        guard let number = Double(text), number.isFinite else { return nil }
        return .number(number)
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    private mutating func skipDigits() {
        while let byte = current, isDigit(byte) { index += 1 }
    }

    /// A string starting at the opening quote; `nil` for bad escapes, raw control characters or invalid UTF-8.
    private mutating func string() -> String? {
        index += 1
        var scalars = String.UnicodeScalarView()
        while true {
            guard let byte = current else { return nil }
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return String(scalars)
            case UInt8(ascii: "\\"):
                index += 1
                guard let scalar = escape() else { return nil }
                scalars.append(scalar)
            case 0..<0x20:
                return nil
            case 0..<0x80:
                scalars.append(Unicode.Scalar(byte))
                index += 1
            default:
                guard let scalar = multiByteScalar() else { return nil }
                scalars.append(scalar)
            }
        }
    }

    /// The scalar after a backslash, with `\u` surrogate pairs joined; `nil` for anything invalid.
    private mutating func escape() -> Unicode.Scalar? {
        guard let byte = current else { return nil }
        index += 1
        switch byte {
        case UInt8(ascii: "\""): return "\""
        case UInt8(ascii: "\\"): return "\\"
        case UInt8(ascii: "/"): return "/"
        case UInt8(ascii: "b"): return "\u{08}"
        case UInt8(ascii: "f"): return "\u{0C}"
        case UInt8(ascii: "n"): return "\n"
        case UInt8(ascii: "r"): return "\r"
        case UInt8(ascii: "t"): return "\t"
        case UInt8(ascii: "u"):
            guard let high = hex4() else { return nil }
            if (0xD800..<0xDC00).contains(high) {
                guard consume("\\u"), let low = hex4(), (0xDC00..<0xE000).contains(low) else { return nil }
                return Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
            }
            return Unicode.Scalar(high)
        default: return nil
        }
    }

    private mutating func hex4() -> UInt32? {
        guard index + 4 <= bytes.count else { return nil }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    /// Decodes one well-formed UTF-8 sequence of two to four bytes (no overlongs, no surrogates).
    private mutating func multiByteScalar() -> Unicode.Scalar? {
        let lead = bytes[index]
        let length: Int
        var value: UInt32
        switch lead {
        case 0xC2...0xDF: (length, value) = (2, UInt32(lead & 0x1F))
        case 0xE0...0xEF: (length, value) = (3, UInt32(lead & 0x0F))
        case 0xF0...0xF4: (length, value) = (4, UInt32(lead & 0x07))
        default: return nil
        }
        guard index + length <= bytes.count else { return nil }
        for offset in 1..<length {
            let byte = bytes[index + offset]
            guard byte & 0xC0 == 0x80 else { return nil }
            value = value << 6 | UInt32(byte & 0x3F)
        }
        let smallest: UInt32 = length == 2 ? 0x80 : length == 3 ? 0x800 : 0x10000
        guard value >= smallest, value <= 0x10FFFF, let scalar = Unicode.Scalar(value) else { return nil }
        index += length
        return scalar
    }
}
