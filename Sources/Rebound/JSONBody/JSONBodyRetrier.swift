import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Retries when a response's JSON body says the request should be retried, on a 200 as well as on an error status.
///
/// It matches when the JSON holds one of ``values`` at ``path`` (`error_code`, or `error.code` for a nested member),
/// or when its predicate says so. A matching response is retried after ``delay(forRetryCount:previousDelay:)`` (5 s by default)
/// while the request's retry count is below ``retryLimit`` (3 by default); after that the request ends with
/// ``SignalPersisted``, an error that says the body kept signalling.
///
/// **Where it goes: among the adapters.** It must see successful responses as well as failed ones, and the session
/// finds no role by looking at a part's type, so it joins each request from ``adapt(_:context:)`` (which returns the
/// request unchanged) in two roles: it validates every response, and it is asked about every failed attempt before the
/// chain's retriers. Any wrapper that forwards `adapt` keeps both; it is not a ``RequestRetrier``, so it cannot be put
/// where its validation would be lost (a `retriers:` list, a retrier-only decorator).
///
/// **On a successful status** (2xx) the session would return the response: a matching body fails the attempt with
/// ``Signal`` and the retriers are asked as usual. Turn this off with `inspectsSuccessfulResponses: false`. **On an
/// error status** it reads the failed attempt's body when asked; a non-matching body answers
/// ``RetryResult/doNotRetry``, so the chain's retriers decide.
///
/// A body that is empty, not JSON, truncated, not UTF-8, nested deeper than ``maximumDepth`` or larger than
/// ``maximumBodySize`` is simply no match: never a crash or a hang. Before parsing a successful response it checks
/// that the body mentions the path's last key, so responses that cannot match cost a byte search, not a parse.
///
/// ```swift
/// let retrier = JSONBodyRetrier(path: "error_code", values: ["RATE_LIMITED", "TEMPORARY_ERROR"])
/// let session = Session(adapters: [retrier], retriers: [RetryPolicy()])
/// ```
///
/// Immutable and safe to share between sessions and tasks.
public final class JSONBodyRetrier: RequestAdapter {
    /// The error of an attempt whose successful response's body matched; the retriers see it as a validation failure.
    public struct Signal: Error, Sendable, CustomStringConvertible {
        /// The path that matched, dot-separated; `nil` when a predicate matched.
        public let path: String?
        /// The value found at the path, or the whole body when a predicate matched.
        public let value: JSONValue

        /// For example `the response body signalled error_code = "RATE_LIMITED"`.
        public var description: String {
            path.map { "the response body signalled \($0) = \(value)" } ?? "the response body signalled an error"
        }
    }

    /// The error a request ends with when its body still matched after the last retry.
    public struct SignalPersisted: Error, Sendable, CustomStringConvertible {
        /// What the last response's body signalled.
        public let signal: Signal
        /// How many retries were made.
        public let retries: Int

        /// For example `the response body kept signalling error_code = "RATE_LIMITED" after 3 retries`.
        public var description: String {
            let what = signal.path.map { "\($0) = \(signal.value)" } ?? "an error"
            return "the response body kept signalling \(what) after \(retries) \(retries == 1 ? "retry" : "retries")"
        }
    }

    /// The default ``retryLimit``: `3`.
    public static let defaultRetryLimit = 3
    /// The default delay before each retry: 5 seconds.
    public static let defaultDelay = Duration.seconds(5)
    /// The default ``maximumBodySize``: 1 MiB.
    public static let defaultMaximumBodySize = 1 << 20
    /// The default ``maximumDepth``: 64 levels of arrays and objects.
    public static let defaultMaximumDepth = 64
    /// The largest ``maximumDepth`` a retrier accepts: 512 levels, deep enough for any real error body and shallow
    /// enough that parsing, comparing and freeing a value that deep never overflows a thread's stack (the parser
    /// recurses once per level).
    public static let maximumDepthLimit = 512

    /// The path of the value that is matched, as components; empty when a predicate matches instead.
    public var path: [String] { match.path }
    /// The values that match at ``path``; empty when a predicate matches instead.
    public var values: Set<JSONValue> { match.values }
    /// How many times a request is retried at most, counting every retry of the request; `3` by default.
    public let retryLimit: Int
    /// Bodies larger than this many bytes are no match; 1 MiB by default.
    public var maximumBodySize: Int { match.maximumBodySize }
    /// Bodies nested deeper than this are no match; `64` by default.
    public var maximumDepth: Int { match.maximumDepth }
    /// Whether successful (validator-accepted) responses are inspected too; `true` by default.
    public let inspectsSuccessfulResponses: Bool
    /// The delay before each retry: a constant `delay` (5 s by default), or the strategy given.
    public let backoff: BackoffStrategy
    /// What a body must hold to match; also the validator this retrier registers for each request whose successful
    /// responses it reads.
    private let match: JSONBodyMatch

    /// Creates a retrier that matches `values` at `path`, from settings written in code; an invalid one traps.
    ///
    /// An invalid setting is a programming error; the trap's message names it, for example
    /// `JSONBodyRetrier.retryLimit must be 0 or more, got -1`. For settings that arrive at run time, use
    /// ``validated(path:values:retryLimit:delay:backoff:maximumBodySize:maximumDepth:inspectsSuccessfulResponses:)-(_,_,_,_,BackoffStrategy?,_,_,_)``,
    /// which throws instead.
    ///
    /// - Parameters:
    ///   - path: Where the value is, keys separated by single dots (`error.code`; `errors.0.code` for an array's
    ///     first element); `error_code` by default.
    ///   - values: The strings, numbers or Booleans that mean "retry", at least one, for example
    ///     `["RATE_LIMITED", 429]`.
    ///   - retryLimit: How many times a request is retried at most, `0` or more; `3` by default.
    ///   - delay: The delay before each retry, `0` or more; 5 seconds by default.
    ///   - backoff: A strategy for the delays instead of the constant `delay`, for example with jitter;
    ///     `nil` (the default) for the constant `delay`; `.none`, like `.zero`, is no delay.
    ///   - maximumBodySize: Larger bodies are no match; more than `0`; 1 MiB by default.
    ///   - maximumDepth: Deeper bodies are no match; between `1` and ``maximumDepthLimit`` (512); `64` by default.
    ///   - inspectsSuccessfulResponses: Whether a 2xx whose body matches is failed and retried; `true` by default.
    public convenience init(
        path: String = "error_code", values: Set<JSONValue>, retryLimit: Int = defaultRetryLimit,
        delay: Duration = defaultDelay, backoff: BackoffStrategy? = nil,
        maximumBodySize: Int = defaultMaximumBodySize,
        maximumDepth: Int = defaultMaximumDepth, inspectsSuccessfulResponses: Bool = true
    ) {
        ConfigurationError.trapIfInvalid { () throws(ConfigurationError) in
            try Self.check(
                path: path, values: values, retryLimit: retryLimit, delay: delay, maximumBodySize: maximumBodySize,
                maximumDepth: maximumDepth)
        }
        self.init(
            checkedPath: Self.components(of: path), values: values, predicate: nil, retryLimit: retryLimit,
            delay: delay, backoff: backoff, maximumBodySize: maximumBodySize, maximumDepth: maximumDepth,
            inspectsSuccessfulResponses: inspectsSuccessfulResponses)
    }

    /// Creates a retrier that matches when `predicate` returns `true` for the decoded body, from settings written in
    /// code; an invalid one traps.
    ///
    /// An invalid setting is a programming error; the trap's message names it. For settings that
    /// arrive at run time, use
    /// ``validated(retryLimit:delay:backoff:maximumBodySize:maximumDepth:inspectsSuccessfulResponses:where:)-(_,_,BackoffStrategy?,_,_,_,_)``,
    /// which throws instead.
    ///
    /// - Parameters:
    ///   - retryLimit: How many times a request is retried at most, `0` or more; `3` by default.
    ///   - delay: The delay before each retry, `0` or more; 5 seconds by default.
    ///   - backoff: A strategy for the delays instead of the constant `delay`, for example with jitter;
    ///     `nil` (the default) for the constant `delay`; `.none`, like `.zero`, is no delay.
    ///   - maximumBodySize: Larger bodies are no match; more than `0`; 1 MiB by default.
    ///   - maximumDepth: Deeper bodies are no match; between `1` and ``maximumDepthLimit`` (512); `64` by default.
    ///   - inspectsSuccessfulResponses: Whether a 2xx whose body matches is failed and retried; `true` by default.
    ///   - predicate: Says whether the decoded body means "retry"; it must be quick and must not block.
    public convenience init(
        retryLimit: Int = defaultRetryLimit, delay: Duration = defaultDelay, backoff: BackoffStrategy? = nil,
        maximumBodySize: Int = defaultMaximumBodySize, maximumDepth: Int = defaultMaximumDepth,
        inspectsSuccessfulResponses: Bool = true, where predicate: @escaping @Sendable (JSONValue) -> Bool
    ) {
        ConfigurationError.trapIfInvalid { () throws(ConfigurationError) in
            try Self.check(
                path: nil, values: nil, retryLimit: retryLimit, delay: delay, maximumBodySize: maximumBodySize,
                maximumDepth: maximumDepth)
        }
        self.init(
            checkedPath: [], values: [], predicate: predicate, retryLimit: retryLimit, delay: delay, backoff: backoff,
            maximumBodySize: maximumBodySize, maximumDepth: maximumDepth,
            inspectsSuccessfulResponses: inspectsSuccessfulResponses)
    }

    /// Creates a retrier that matches `values` at `path`, from settings that arrive at run time, throwing when one is
    /// invalid.
    ///
    /// The parameters, their defaults and what is valid are those of
    /// ``init(path:values:retryLimit:delay:backoff:maximumBodySize:maximumDepth:inspectsSuccessfulResponses:)-(_,_,_,_,BackoffStrategy?,_,_,_)``.
    ///
    /// - Throws: ``ConfigurationError`` naming the first invalid setting.
    @_disfavoredOverload  // `.none` goes to the overload that takes a backoff as it is: see its +GivenBackoff file
    public static func validated(
        path: String = "error_code", values: Set<JSONValue>, retryLimit: Int = defaultRetryLimit,
        delay: Duration = defaultDelay, backoff: BackoffStrategy? = nil,
        maximumBodySize: Int = defaultMaximumBodySize,
        maximumDepth: Int = defaultMaximumDepth, inspectsSuccessfulResponses: Bool = true
    ) throws(ConfigurationError) -> JSONBodyRetrier {
        try check(
            path: path, values: values, retryLimit: retryLimit, delay: delay, maximumBodySize: maximumBodySize,
            maximumDepth: maximumDepth)
        return JSONBodyRetrier(
            checkedPath: components(of: path), values: values, predicate: nil, retryLimit: retryLimit, delay: delay,
            backoff: backoff, maximumBodySize: maximumBodySize, maximumDepth: maximumDepth,
            inspectsSuccessfulResponses: inspectsSuccessfulResponses)
    }

    /// Creates a retrier that matches when `predicate` returns `true` for the decoded body, from settings that
    /// arrive at run time, throwing when one is invalid.
    ///
    /// The parameters, their defaults and what is valid are those of
    /// ``init(retryLimit:delay:backoff:maximumBodySize:maximumDepth:inspectsSuccessfulResponses:where:)-(_,_,BackoffStrategy?,_,_,_,_)``.
    ///
    /// - Throws: ``ConfigurationError`` naming the first invalid setting.
    @_disfavoredOverload  // `.none` goes to the overload that takes a backoff as it is: see its +GivenBackoff file
    public static func validated(
        retryLimit: Int = defaultRetryLimit, delay: Duration = defaultDelay, backoff: BackoffStrategy? = nil,
        maximumBodySize: Int = defaultMaximumBodySize, maximumDepth: Int = defaultMaximumDepth,
        inspectsSuccessfulResponses: Bool = true, where predicate: @escaping @Sendable (JSONValue) -> Bool
    ) throws(ConfigurationError) -> JSONBodyRetrier {
        try check(
            path: nil, values: nil, retryLimit: retryLimit, delay: delay, maximumBodySize: maximumBodySize,
            maximumDepth: maximumDepth)
        return JSONBodyRetrier(
            checkedPath: [], values: [], predicate: predicate, retryLimit: retryLimit, delay: delay, backoff: backoff,
            maximumBodySize: maximumBodySize, maximumDepth: maximumDepth,
            inspectsSuccessfulResponses: inspectsSuccessfulResponses)
    }

    /// Throws a ``ConfigurationError`` for the first invalid setting; `path` and `values` are `nil` when a predicate
    /// matches instead.
    private static func check(
        path: String?, values: Set<JSONValue>?, retryLimit: Int, delay: Duration, maximumBodySize: Int,
        maximumDepth: Int
    ) throws(ConfigurationError) {
        if let path, path.isEmpty || components(of: path).contains(where: \.isEmpty) {
            throw ConfigurationError(
                field: "JSONBodyRetrier.path", problem: "must be keys separated by single dots, got \"\(path)\"")
        }
        if let values, values.isEmpty {
            throw ConfigurationError(field: "JSONBodyRetrier.values", problem: "must hold at least one value to match")
        }
        guard retryLimit >= 0 else {
            throw ConfigurationError(
                field: "JSONBodyRetrier.retryLimit", problem: "must be 0 or more, got \(retryLimit)")
        }
        guard delay >= .zero else {
            throw ConfigurationError(field: "JSONBodyRetrier.delay", problem: "must be 0 or more, got \(delay)")
        }
        guard maximumBodySize > 0 else {
            throw ConfigurationError(
                field: "JSONBodyRetrier.maximumBodySize", problem: "must be more than 0 bytes, got \(maximumBodySize)")
        }
        guard (1...maximumDepthLimit).contains(maximumDepth) else {
            throw ConfigurationError(
                field: "JSONBodyRetrier.maximumDepth",
                problem: "must be between 1 and \(maximumDepthLimit), got \(maximumDepth)")
        }
    }

    /// The keys of a dot-separated path.
    private static func components(of path: String) -> [String] {
        path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    }

    private init(
        checkedPath path: [String], values: Set<JSONValue>, predicate: (@Sendable (JSONValue) -> Bool)?,
        retryLimit: Int, delay: Duration, backoff: BackoffStrategy?, maximumBodySize: Int, maximumDepth: Int,
        inspectsSuccessfulResponses: Bool
    ) {
        self.match = JSONBodyMatch(
            path: path, values: values, predicate: predicate, maximumBodySize: maximumBodySize,
            maximumDepth: maximumDepth)
        self.retryLimit = retryLimit
        self.backoff = backoff ?? .constant(delay)
        self.inspectsSuccessfulResponses = inspectsSuccessfulResponses
    }

    /// The delay before retry number `retryCount + 1`.
    public func delay(forRetryCount retryCount: Int, previousDelay: Duration? = nil) -> Duration {
        backoff.delay(forRetryCount: retryCount, previousDelay: previousDelay)
    }

    /// What `data` signals, or `nil` when it is no match (including every body that is not valid JSON).
    public func signal(in data: Data) -> Signal? {
        match.signal(in: data)
    }

    /// Registers the retrier with the request as a validator and a retrier, and returns `request` unchanged.
    public func adapt(_ request: consuming URLRequest, context: RequestContext) async throws -> URLRequest {
        register(through: context)
        return request
    }

    /// Registers the retrier with the request through its context: as a retrier, and as a validator when it inspects
    /// successful responses.
    fileprivate func register(through context: RequestContext) {
        if inspectsSuccessfulResponses { context.validateResponses(with: match) }
        context.decideRetries(with: self)
    }

    /// Fails a successful response whose body matches, with ``Signal``; reads the body alone.
    public func validate(_ head: ResponseHead, data: Data, context: RequestContext) throws {
        guard inspectsSuccessfulResponses else { return }
        try match.validate(head, data: data, context: context)
    }

    /// Retries a failed attempt whose body matches, until the limit; then ends the request with ``SignalPersisted``:
    /// what the session asks the retrier once it registered, before the chain's retriers.
    public func retry(_ request: RetryRequest, dueTo error: ReboundError) async -> RetryResult {
        let found: Signal?
        if case .validationFailed(let signal as Signal) = error.reason {
            found = signal
        } else {
            found = request.data.flatMap(signal(in:))
        }
        guard let found else { return .doNotRetry }
        // A signal at a redirect's hop after a POST: a retry would send the POST, which the first hop took, again.
        guard !request.retryWouldRepeatARedirectedRequest else { return .doNotRetry }
        guard request.retryCount < retryLimit else {
            return .doNotRetryWithError(SignalPersisted(signal: found, retries: request.retryCount))
        }
        let previous = request.attempts.dropLast().last?.retryDelay
        return .retryWithDelay(delay(forRetryCount: request.retryCount, previousDelay: previous))
    }
}

extension JSONBodyRetrier: AdaptsInPlace {
    /// Registers as ``adapt(_:context:)`` does, leaving the request unchanged.
    var adaptInPlace: Adapter.ModifyNowHandler? {
        { [self] _, context in register(through: context) }
    }
}

extension JSONBodyRetrier: RegisteredRetrier {}

/// What a body must hold to match a ``JSONBodyRetrier``, and the retrier in its validator's role: registered through
/// the context like any validator. The retrier itself is not a ``ResponseValidator``, so that it cannot be given as a
/// session's validator, where its retries would be lost.
private final class JSONBodyMatch: ResponseValidator {
    let path: [String]
    let values: Set<JSONValue>
    let predicate: (@Sendable (JSONValue) -> Bool)?
    let maximumBodySize: Int
    let maximumDepth: Int
    /// The quoted last key of the path as UTF-8, which any matching body must contain unless it escapes it.
    private let needle: Data?
    private static let unicodeEscape = Data("\\u".utf8)

    init(
        path: [String], values: Set<JSONValue>, predicate: (@Sendable (JSONValue) -> Bool)?, maximumBodySize: Int,
        maximumDepth: Int
    ) {
        self.path = path
        self.values = values
        self.predicate = predicate
        self.maximumBodySize = maximumBodySize
        self.maximumDepth = maximumDepth
        // The last key that is not an array index and needs no escaping appears verbatim in any matching body.
        let key = path.last { Int($0) == nil && !$0.contains("\"") && !$0.contains("\\") }
        self.needle = key.map { Data("\"\($0)\"".utf8) }
    }

    /// What `data` signals, or `nil` when it is no match (including every body that is not valid JSON).
    func signal(in data: Data) -> JSONBodyRetrier.Signal? {
        guard !data.isEmpty, data.count <= maximumBodySize else { return nil }
        // A body that names the key neither verbatim nor with a \u escape cannot hold it.
        if let needle, data.range(of: needle) == nil, data.range(of: Self.unicodeEscape) == nil { return nil }
        guard let body = JSONBodyParser.parse(data, maximumDepth: maximumDepth) else { return nil }
        if let predicate {
            return predicate(body) ? JSONBodyRetrier.Signal(path: nil, value: body) : nil
        }
        guard let value = body.value(at: path), values.contains(value) else { return nil }
        return JSONBodyRetrier.Signal(path: path.joined(separator: "."), value: value)
    }

    /// Fails a successful response whose body matches, with the retrier's ``JSONBodyRetrier/Signal``.
    func validate(_ head: ResponseHead, data: Data, context: RequestContext) throws {
        if let signal = signal(in: data) { throw signal }
    }
}

extension RequestAdapter where Self == JSONBodyRetrier {
    /// A ``JSONBodyRetrier`` matching `values` at `path`, which traps on an invalid setting; see
    /// ``JSONBodyRetrier/init(path:values:retryLimit:delay:backoff:maximumBodySize:maximumDepth:inspectsSuccessfulResponses:)-(_,_,_,_,BackoffStrategy?,_,_,_)``
    /// for what is valid and the defaults (`error_code`, 3 retries, 5 s), and
    /// ``JSONBodyRetrier/validated(path:values:retryLimit:delay:backoff:maximumBodySize:maximumDepth:inspectsSuccessfulResponses:)-(_,_,_,_,BackoffStrategy?,_,_,_)``
    /// for settings that arrive at run time.
    public static func jsonBody(
        path: String = "error_code", values: Set<JSONValue>, retryLimit: Int = JSONBodyRetrier.defaultRetryLimit,
        delay: Duration = JSONBodyRetrier.defaultDelay
    ) -> JSONBodyRetrier {
        JSONBodyRetrier(path: path, values: values, retryLimit: retryLimit, delay: delay)
    }
}
