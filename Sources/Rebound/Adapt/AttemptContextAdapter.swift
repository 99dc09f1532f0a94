import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Tells the server which attempt it is serving and how long the caller will wait: writes the attempt's number, the
/// most attempts the chain allows (where the session knows it) and the time left before the request's deadline into
/// headers of each attempt.
///
/// A server that sees a retry can shed retries first when it is overloaded; one that knows the caller's deadline can
/// skip work that nobody will read. Pick the convention your servers read, or name headers of your own:
///
/// | convention | headers of a second attempt |
/// |---|---|
/// | ``envoy`` | `x-envoy-attempt-count: 2`, `x-envoy-expected-rq-timeout-ms: 1500` |
/// | ``aws`` | `amz-sdk-invocation-id: <the request's ID>`, `amz-sdk-request: attempt=2; max=3` |
/// | ``plain`` | `X-Attempt: 2`, `X-Max-Attempts: 3`, `X-Time-Left-Ms: 1500` |
///
/// A value with nothing to say writes nothing (a header the caller set stays): no time left without a deadline, no
/// maximum where a retrier of the chain does not say its limit (see ``RequestContext/maximumAttempts``). Every attempt
/// starts from the caller's request, so each header is written once per attempt, in place of one the caller set.
///
/// **Where it goes.** After the adapters that may wait (a ``ConcurrencyLimiter``, a ``RateLimitPacer``), so that the
/// time left is read as the attempt leaves, and after the retriers that join through the context (a
/// ``JSONBodyRetrier`` given as an adapter), so that their limits count; and before a request signer (AWS Signature
/// Version 4, say), so that these headers are signed with the rest, where a signer that ran first would have signed a
/// request that then changed.
///
/// ```swift
/// let session = Session(adapters: [AttemptContextAdapter.envoy], retriers: [RetryPolicy()], deadline: .seconds(10))
/// ```
///
/// The adapter holds no state: one value is safe to share between sessions.
public struct AttemptContextAdapter: RequestAdapter {
    /// One header the adapter writes: its name and what it says.
    public struct Header: Sendable {
        /// The header's name, a token as RFC 9110 defines it.
        public let name: String
        /// What the header says of the attempt.
        public let value: Value

        /// A header named `name` that says `value`.
        public init(_ name: String, _ value: Value) {
            self.name = name
            self.value = value
        }
    }

    /// What a header says of an attempt, written as text from its context; `nil` writes no header.
    ///
    /// A value that holds a control character (a line break, say) is not written either: no string read from the
    /// context can add a header of its own.
    public struct Value: Sendable {
        let text: @Sendable (RequestContext) -> String?

        /// A value written by `text` from the attempt's context; `nil` writes no header.
        public init(_ text: @escaping @Sendable (RequestContext) -> String?) {
            self.text = text
        }

        /// The attempt's number, from 1: `2`.
        public static let attempt = Value { String($0.attempt) }
        /// The most attempts the request can make (``RequestContext/maximumAttempts``): `3`; no header where that is
        /// not known.
        public static let maximumAttempts = Value { $0.maximumAttempts.map { String($0) } }
        /// The attempt's number and the most attempts, as the AWS SDKs write them: `attempt=2; max=3`, or `attempt=2`
        /// where the most is not known.
        public static let attemptAndMaximum = Value { context in
            context.maximumAttempts.map { "attempt=\(context.attempt); max=\($0)" } ?? "attempt=\(context.attempt)"
        }
        /// The time left before the request's deadline in whole milliseconds, rounded down, read as the header is
        /// written: `1500`; `0` once it passed, and no header without a deadline.
        public static let timeLeftInMilliseconds = Value { context in
            context.timeLeft.map { left in
                let (seconds, attoseconds) = left.components
                return String(seconds * 1_000 + attoseconds / 1_000_000_000_000_000)
            }
        }
        /// The request's ``RequestContext/requestID``, the same on every attempt of the request, in lower case.
        public static let requestID = Value { $0.requestID.uuidString.lowercased() }
    }

    /// Envoy's headers: `x-envoy-attempt-count` (the attempt's number) and `x-envoy-expected-rq-timeout-ms` (the time
    /// left before the deadline).
    public static let envoy = AttemptContextAdapter(
        checkedHeaders: [
            Header("x-envoy-attempt-count", .attempt),
            Header("x-envoy-expected-rq-timeout-ms", .timeLeftInMilliseconds),
        ])
    /// The AWS SDKs' headers: `amz-sdk-invocation-id` (the request's ID, the same on every attempt) and
    /// `amz-sdk-request` (`attempt=2; max=3`).
    public static let aws = AttemptContextAdapter(
        checkedHeaders: [Header("amz-sdk-invocation-id", .requestID), Header("amz-sdk-request", .attemptAndMaximum)])
    /// Plain headers: `X-Attempt`, `X-Max-Attempts` and `X-Time-Left-Ms`.
    public static let plain = AttemptContextAdapter(
        checkedHeaders: [
            Header("X-Attempt", .attempt), Header("X-Max-Attempts", .maximumAttempts),
            Header("X-Time-Left-Ms", .timeLeftInMilliseconds),
        ])

    /// The headers written on each attempt, in order.
    public let headers: [Header]

    /// An adapter that writes `headers` on each attempt; a name that is not a token, or one given twice (in any
    /// case), is a programming error, and the trap's message names it:
    /// `AttemptContextAdapter.headers must name each header with a token, got "X Attempt"`. For headers named at run
    /// time, use ``validated(headers:)``, which throws instead.
    public init(headers: [Header]) {
        ConfigurationError.trapIfInvalid { () throws(ConfigurationError) in try Self.check(headers) }
        self.init(checkedHeaders: headers)
    }

    /// An adapter that writes `headers` on each attempt, made from names that arrive at run time.
    ///
    /// - Throws: ``ConfigurationError`` if a name is not a token (RFC 9110), or is given twice in any case.
    public static func validated(headers: [Header]) throws(ConfigurationError) -> AttemptContextAdapter {
        try check(headers)
        return AttemptContextAdapter(checkedHeaders: headers)
    }

    private init(checkedHeaders: [Header]) {
        self.headers = checkedHeaders
    }

    /// Throws a ``ConfigurationError`` naming the first header name that is not a token or that comes twice.
    private static func check(_ headers: [Header]) throws(ConfigurationError) {
        var seen: Set<String> = []
        for header in headers {
            guard !header.name.isEmpty, header.name.utf8.allSatisfy(isTokenByte) else {
                throw ConfigurationError(
                    field: "AttemptContextAdapter.headers",
                    problem: "must name each header with a token, got \"\(header.name)\"")
            }
            guard seen.insert(header.name.lowercased()).inserted else {
                throw ConfigurationError(
                    field: "AttemptContextAdapter.headers", problem: "names \"\(header.name)\" more than once")
            }
        }
    }

    /// Whether `byte` may be in a token: a letter, a digit, or one of ``!#$%&'*+-.^_`|~``.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default: "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// Writes each of ``headers`` that has something to say, replacing a value of the same name.
    public func adapt(_ request: consuming URLRequest, context: RequestContext) async throws -> URLRequest {
        write(to: &request, context: context)
        return request
    }

    /// Writes the headers in place, as ``adapt(_:context:)`` does.
    private func write(to request: inout URLRequest, context: RequestContext) {
        for header in headers {
            guard let text = header.value.text(context),
                text.utf8.allSatisfy({ $0 == UInt8(ascii: "\t") || ($0 >= 0x20 && $0 != 0x7F) })
            else { continue }
            request.setValue(text, forHTTPHeaderField: header.name)
        }
    }
}

extension AttemptContextAdapter: AdaptsInPlace {
    /// Writes the headers as ``adapt(_:context:)`` does.
    var adaptInPlace: Adapter.ModifyNowHandler? {
        { [self] request, context in write(to: &request, context: context) }
    }
}
