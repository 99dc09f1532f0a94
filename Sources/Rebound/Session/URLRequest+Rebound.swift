import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension URLRequest {
    /// Creates a request from a URL, a method, headers and a body in one call.
    ///
    /// - Parameters:
    ///   - url: The URL to request.
    ///   - method: The HTTP method; ``HTTPMethod/get`` by default.
    ///   - headers: Header fields to set, replacing any of the same name; none by default.
    ///   - body: The body to send; none by default.
    public init(url: URL, method: HTTPMethod, headers: [String: String] = [:], body: Data? = nil) {
        self.init(url: url)
        // A new request's method is already GET, and Foundation's setter normalizes the name it is given, work for
        // nothing on a GET: only another method is set. Likewise no body is set when there is none.
        if method != .get { httpMethod = method.rawValue }
        for (name, value) in headers {
            setValue(value, forHTTPHeaderField: name)
        }
        if let body { httpBody = body }
    }

    /// The request's method as an ``HTTPMethod``; `GET` when the request does not set one, as `URLSession` does.
    public var method: HTTPMethod {
        get { httpMethod.map(HTTPMethod.init(rawValue:)) ?? .get }
        set { httpMethod = newValue.rawValue }
    }
}
