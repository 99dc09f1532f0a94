/// A JSON value as the ``JSONBodyRetrier`` reads it: what its predicates receive and what its values are written in.
///
/// Literals make values: `"RATE_LIMITED"`, `429`, `true`. Numbers are compared as `Double`, so `429` matches `429.0`.
public enum JSONValue: Sendable, Hashable {
    /// A string.
    case string(String)
    /// A number.
    case number(Double)
    /// `true` or `false`.
    case bool(Bool)
    /// `null`.
    case null
    /// An array.
    case array([JSONValue])
    /// An object.
    case object([String: JSONValue])

    /// The member `key` of an object; `nil` for a missing key or a value that is not an object.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    /// The element at `index` of an array; `nil` out of bounds or for a value that is not an array.
    public subscript(index: Int) -> JSONValue? {
        if case .array(let elements) = self, elements.indices.contains(index) { return elements[index] }
        return nil
    }

    /// The value at `path`: each component is an object's key, or an array's index written in decimal.
    public func value(at path: [String]) -> JSONValue? {
        var value = self
        for component in path {
            if let member = value[component] {
                value = member
            } else if let index = Int(component), let element = value[index] {
                value = element
            } else {
                return nil
            }
        }
        return value
    }

    /// The string, if this is a string.
    public var stringValue: String? {
        if case .string(let string) = self { return string }
        return nil
    }

    /// The number, if this is a number.
    public var numberValue: Double? {
        if case .number(let number) = self { return number }
        return nil
    }
}

extension JSONValue: ExpressibleByStringLiteral {
    /// A string value.
    public init(stringLiteral value: String) { self = .string(value) }
}

extension JSONValue: ExpressibleByIntegerLiteral {
    /// A number value.
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
}

extension JSONValue: ExpressibleByFloatLiteral {
    /// A number value.
    public init(floatLiteral value: Double) { self = .number(value) }
}

extension JSONValue: ExpressibleByBooleanLiteral {
    /// A Boolean value.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension JSONValue: CustomStringConvertible {
    /// The value written as compact JSON, for example `"RATE_LIMITED"` or `429`.
    public var description: String {
        switch self {
        case .string(let string):
            var text = "\""
            for scalar in string.unicodeScalars {
                switch scalar {
                case "\"": text += "\\\""
                case "\\": text += "\\\\"
                case "\n": text += "\\n"
                case "\r": text += "\\r"
                case "\t": text += "\\t"
                case _ where scalar.value < 0x20: text += "\\u" + hex4(scalar.value)
                default: text.unicodeScalars.append(scalar)
                }
            }
            return text + "\""
        case .number(let number):
            if number.rounded() == number, abs(number) < 1e15 { return String(Int64(number)) }
            return String(number)
        case .bool(let bool):
            return String(bool)
        case .null:
            return "null"
        case .array(let elements):
            return "[" + elements.map(\.description).joined(separator: ",") + "]"
        case .object(let members):
            let sorted = members.sorted { $0.key < $1.key }
            return "{"
                + sorted.map { JSONValue.string($0.key).description + ":" + $0.value.description }.joined(
                    separator: ",") + "}"
        }
    }
}

private func hex4(_ value: UInt32) -> String {
    let digits = String(value, radix: 16)
    return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
}
