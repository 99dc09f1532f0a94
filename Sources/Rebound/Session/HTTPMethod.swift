/// An HTTP request method, such as `GET` or `POST`.
///
/// Methods are compared by their raw value, which is case-sensitive as RFC 9110 specifies.
public struct HTTPMethod: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The method's token as sent on the wire, for example `"GET"`.
    public let rawValue: String

    /// Creates a method from its token, for example `HTTPMethod(rawValue: "PURGE")`.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// The method's token.
    public var description: String { rawValue }

    /// `CONNECT`.
    public static let connect = HTTPMethod(rawValue: "CONNECT")
    /// `DELETE`.
    public static let delete = HTTPMethod(rawValue: "DELETE")
    /// `GET`.
    public static let get = HTTPMethod(rawValue: "GET")
    /// `HEAD`.
    public static let head = HTTPMethod(rawValue: "HEAD")
    /// `OPTIONS`.
    public static let options = HTTPMethod(rawValue: "OPTIONS")
    /// `PATCH`.
    public static let patch = HTTPMethod(rawValue: "PATCH")
    /// `POST`.
    public static let post = HTTPMethod(rawValue: "POST")
    /// `PUT`.
    public static let put = HTTPMethod(rawValue: "PUT")
    /// `QUERY`.
    public static let query = HTTPMethod(rawValue: "QUERY")
    /// `TRACE`.
    public static let trace = HTTPMethod(rawValue: "TRACE")
}

extension HTTPMethod: ExpressibleByStringLiteral {
    /// Creates a method from a string literal, so that `"GET"` can stand for ``HTTPMethod/get``.
    public init(stringLiteral value: String) {
        self.init(rawValue: value)
    }
}
