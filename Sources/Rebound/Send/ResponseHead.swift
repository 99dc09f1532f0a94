import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The status and header fields of an HTTP response, as a transport answers with them, with the `HTTPURLResponse`
/// built only when code asks for it.
///
/// The session reads a response through its head: the status for validation and redirects, a few fields
/// (`Location`, `Retry-After`) by name. A transport on another HTTP client (AsyncHTTPClient) makes a head from its
/// own response's status and fields, so that no Foundation response is built for a request whose code never asks for
/// one: on Linux, building an `HTTPURLResponse` checks every field's name.
/// ``URLSessionHTTPTransport`` wraps the `HTTPURLResponse` it got, which then costs nothing more.
///
/// Every public `response` property of the library's records (``Attempt/response``, ``ReboundError/response``,
/// ``Response/httpResponse`` and the others) reads ``httpURLResponse``, which is built on first use and kept: copies
/// of a head share it, and it is safe to read from any thread.
public struct ResponseHead: Sendable {
    /// One reference wide, so that a record that keeps a head is no larger than one that kept the response.
    private let storage: Storage

    private enum Storage: Sendable {
        case foundation(HTTPURLResponse)
        case fields(Fields)
    }

    /// Creates a head from a status and header fields, in the order the server sent them.
    ///
    /// - Parameters:
    ///   - url: The URL the response answers, the request's.
    ///   - statusCode: The status code.
    ///   - httpVersion: The protocol version, as `HTTPURLResponse` spells it; `"HTTP/1.1"` by default.
    ///   - headerFields: The header fields, in order; a name may appear more than once.
    public init(
        url: URL, statusCode: Int, httpVersion: String = "HTTP/1.1", headerFields: [(name: String, value: String)]
    ) {
        storage = .fields(Fields(url: url, statusCode: statusCode, httpVersion: httpVersion, fields: headerFields))
    }

    /// Creates a head that reads `response`, which ``httpURLResponse`` then returns as it is.
    public init(_ response: HTTPURLResponse) {
        storage = .foundation(response)
    }

    /// The status code.
    public var statusCode: Int {
        switch storage {
        case .foundation(let response): response.statusCode
        case .fields(let fields): fields.statusCode
        }
    }

    /// Whether the server throttled the request: 429 Too Many Requests, which budgets charge and retry policies back
    /// off for as throttling rather than as a failure.
    var isThrottling: Bool { statusCode == 429 }

    /// The URL the response answers; `nil` only if a transport's `HTTPURLResponse` had none.
    public var url: URL? {
        switch storage {
        case .foundation(let response): response.url
        case .fields(let fields): fields.url
        }
    }

    /// The header fields: in the order the server sent them, or, read from an `HTTPURLResponse`, in no particular
    /// order and with repeated fields already combined.
    public var headerFields: [(name: String, value: String)] {
        switch storage {
        case .foundation(let response):
            response.allHeaderFields.compactMap { name, value in
                guard let name = name as? String, let value = value as? String else { return nil }
                return (name, value)
            }
        case .fields(let fields): fields.fields
        }
    }

    /// The value of a header field, its name compared without regard to case; the values of a repeated field joined
    /// with `", "`; `nil` if the response lacks it.
    public func value(forHTTPHeaderField name: String) -> String? {
        switch storage {
        case .foundation(let response): return response.value(forHTTPHeaderField: name)
        case .fields(let fields):
            // Appended in place: joining anew for each field would copy what was joined so far every time.
            var found: String?
            for field in fields.fields where Self.sameName(field.name, name) {
                if found == nil {
                    found = field.value
                } else {
                    found?.append(", " + field.value)
                }
            }
            return found
        }
    }

    /// The response as an `HTTPURLResponse`: built from the status and fields on first use (repeated fields joined
    /// with `", "`), then kept; the transport's own when it answered with one.
    public var httpURLResponse: HTTPURLResponse {
        switch storage {
        case .foundation(let response): response
        case .fields(let fields): fields.httpURLResponse
        }
    }

    /// The header fields as one dictionary, as `HTTPURLResponse` keeps them: the values of a repeated name joined with
    /// `", "`, in order.
    var combinedHeaderFields: [String: String] { Self.combined(headerFields) }

    /// `fields` as one dictionary, the values of a repeated name joined with `", "`, in order.
    private static func combined(_ fields: [(name: String, value: String)]) -> [String: String] {
        var combined: [String: String] = [:]
        for (name, value) in fields {
            combined[name] = combined[name].map { $0 + ", " + value } ?? value
        }
        return combined
    }

    /// Whether ``httpURLResponse`` has been built or was the transport's own: what the tests read to hold the session
    /// to building none on its own.
    var hasHTTPURLResponse: Bool {
        switch storage {
        case .foundation: true
        case .fields(let fields): fields.isBuilt
        }
    }

    /// Whether two field names are the same, compared as ASCII without regard to case (as HTTP compares them), with
    /// no Foundation call.
    static func sameName(_ lhs: String, _ rhs: String) -> Bool {
        var left = lhs.utf8.makeIterator()
        var right = rhs.utf8.makeIterator()
        while true {
            switch (left.next(), right.next()) {
            case (nil, nil): return true
            case (let a?, let b?) where a == b || (a | 0x20 == b | 0x20 && (a | 0x20) >= 0x61 && (a | 0x20) <= 0x7A):
                continue
            default: return false
            }
        }
    }

    /// A head made of fields, with the `HTTPURLResponse` built from them once asked for.
    ///
    /// `@unchecked Sendable`: every stored property is a `let` but `built`, which is read and written only while
    /// ``buildLock`` is held. One lock for every head rather than one each: a head made per response (one per
    /// attempt on AsyncHTTPClient) makes no lock of its own, and only code that asks for an `HTTPURLResponse`, which
    /// the session itself never does, takes the lock.
    private final class Fields: @unchecked Sendable {
        let url: URL
        let statusCode: Int
        let httpVersion: String
        let fields: [(name: String, value: String)]
        private var built: HTTPURLResponse?

        /// Guards `built` of every field-made head. Its own state is unused (a zero-sized one would share its address
        /// with the mutex, which the thread sanitizer reports as a race).
        private static let buildLock = Locked(0)

        init(url: URL, statusCode: Int, httpVersion: String, fields: [(name: String, value: String)]) {
            self.url = url
            self.statusCode = statusCode
            self.httpVersion = httpVersion
            self.fields = fields
        }

        var isBuilt: Bool { Self.buildLock.withLock { _ in built != nil } }

        /// Built outside the lock (it checks every field, and the lock is every head's); of two threads that build
        /// it at once, the first to store it wins and both return that one.
        var httpURLResponse: HTTPURLResponse {
            if let built = Self.buildLock.withLock({ _ in built }) { return built }
            let combined = ResponseHead.combined(fields)
            // `HTTPURLResponse`'s initializer fails only for a status outside 100...999 in some Foundations; such a
            // status is kept as the head's own and the response gets the nearest valid one.
            let response =
                HTTPURLResponse(url: url, statusCode: statusCode, httpVersion: httpVersion, headerFields: combined)
                ?? HTTPURLResponse(
                    url: url, statusCode: min(max(statusCode, 100), 999), httpVersion: httpVersion,
                    headerFields: combined)!
            return Self.buildLock.withLock { _ in
                if let built { return built }
                built = response
                return response
            }
        }
    }
}

extension ResponseHead: CustomStringConvertible {
    /// The status and the redacted URL, for example `503 https://example.com/items?token=<redacted>`.
    public var description: String { "\(statusCode) \(Redaction.default.string(for: url))" }
}
