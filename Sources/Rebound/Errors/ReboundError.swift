import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The one error a ``Session`` throws when a request fails for good (cancellation excepted).
///
/// It says why the request failed (``reason``) and keeps what a caller needs to react: the request as the caller
/// gave it, the last request sent, the last attempt's response and body if there was one, and the record of
/// every attempt. A cancelled request throws `CancellationError` instead, never this type.
///
/// ```swift
/// do {
///     let response = try await session.send(request)
/// } catch let error as ReboundError {
///     if case .unacceptableStatusCode(503) = error.reason { showMaintenancePage() }
///     print(error.attemptCount, error.urlError?.code as Any)
/// }
/// ```
public struct ReboundError: Error, Sendable {
    /// Why a request or one of its attempts failed.
    ///
    /// A minor release may add a case: switch over it with `@unknown default` (<doc:APIStabilityGuide>).
    public enum Reason: Sendable {
        /// An adapter threw `error`; the request was not sent in that attempt.
        case adaptationFailed(error: any Error)
        /// An open circuit breaker refused the attempt before it reached the network; no retrier is asked about it.
        indirect case circuitOpen(CircuitBreakerOpenError)
        /// The transport threw `error`, usually a `URLError` whose code is kept as is.
        case transportFailed(error: any Error)
        /// The response's status code was not acceptable to the validator in effect.
        case unacceptableStatusCode(Int)
        /// A custom validator threw `error` after reading the response and its body.
        case validationFailed(error: any Error)
        /// A retrier answered ``RetryResult/doNotRetryWithError(_:)`` with `error`; `original` is why the attempt failed.
        indirect case retryAborted(error: any Error, original: Reason)
        /// The body of a successful response could not be decoded into the requested type.
        case decodingFailed(error: any Error)
        /// The request's deadline (its total time limit) came before it could succeed: during an attempt, or before a
        /// backoff delay that would have ended after it. `last` is why the last attempt failed (an attempt cut short
        /// counts as `URLError(.timedOut)`).
        indirect case deadlineExceeded(deadline: Duration, last: Reason)
    }

    /// Why the request failed.
    public var reason: Reason { storage.value.reason }
    /// The request as the caller passed it to the session, before any adapter ran.
    public var originalRequest: URLRequest { storage.value.original.request }
    /// The last request sent to the transport, after adaptation; `nil` if no attempt got that far.
    public var lastRequest: URLRequest? { storage.value.lastRequest }
    /// The response of the last attempt; `nil` if the last attempt got no response. Built from ``responseHead`` on
    /// first use when the transport answered without an `HTTPURLResponse`.
    public var response: HTTPURLResponse? { storage.value.response?.httpURLResponse }
    /// The status and header fields of the last attempt's response; `nil` if the last attempt got no response.
    public var responseHead: ResponseHead? { storage.value.response }
    /// The body of the last attempt's response; `nil` if the last attempt got no response.
    public var data: Data? { storage.value.data }
    /// Every attempt made, in order; never empty.
    public var attempts: [Attempt] { storage.value.attempts }
    /// The rule that ended the request after its last attempt: no retrier retried the failure, a limit, a repeated
    /// failure, the deadline, a gate's refusal; `nil` for an error the session made outside its retries (a body that
    /// could not be decoded) or an error made without one.
    public var stopReason: StopReason? { storage.value.stopReason }

    /// The fields, in one box: an error is passed along while the retriers decide as one reference.
    private struct Fields: Sendable {
        let reason: Reason
        let original: OriginalRequest
        let lastRequest: URLRequest?
        let response: ResponseHead?
        let data: Data?
        let attempts: [Attempt]
        let stopReason: StopReason?
    }

    private let storage: Box<Fields>

    /// Creates an error; the session creates these, and test code may too. `stopReason` is `nil` by default.
    public init(
        reason: Reason, originalRequest: URLRequest, lastRequest: URLRequest? = nil,
        response: HTTPURLResponse? = nil, data: Data? = nil, attempts: [Attempt] = [], stopReason: StopReason? = nil
    ) {
        self.init(
            reason: reason, original: .request(originalRequest), lastRequest: lastRequest,
            responseHead: response.map(ResponseHead.init), data: data, attempts: attempts, stopReason: stopReason)
    }

    init(
        reason: Reason, original: OriginalRequest, lastRequest: URLRequest?, responseHead response: ResponseHead?,
        data: Data?, attempts: [Attempt], stopReason: StopReason? = nil
    ) {
        storage = Box(
            Fields(
                reason: reason, original: original, lastRequest: lastRequest, response: response, data: data,
                attempts: attempts, stopReason: stopReason))
    }

    /// This error, as the one a request ends with because of `rule`.
    func stopped(by rule: StopReason) -> ReboundError {
        let fields = storage.value
        return ReboundError(
            reason: fields.reason, original: fields.original, lastRequest: fields.lastRequest,
            responseHead: fields.response, data: fields.data, attempts: fields.attempts, stopReason: rule)
    }

    /// How many attempts were made, hedges included.
    public var attemptCount: Int { attempts.count }

    /// Whether `other` is this very error (a copy of it), not merely an equal one.
    func isSame(as other: ReboundError) -> Bool {
        storage === other.storage
    }

    /// The status code of the last attempt's response, if it had one.
    public var statusCode: Int? { responseHead?.statusCode }

    /// The error underneath ``reason``: for ``Reason/retryAborted(error:original:)``, the retrier's error;
    /// `nil` for an unacceptable status code.
    public var underlyingError: (any Error)? { reason.underlyingError }

    /// The `URLError` behind a transport or adaptation failure, if there is one (also inside a retry abort).
    public var urlError: URLError? { reason.urlError }

    /// A short name for why the request failed, from a closed set: see ``Reason/errorType``.
    public var errorType: String { reason.errorType }

    /// The error a retrier or a gate ended the request with (``RetryResult/doNotRetryWithError(_:)``, a
    /// ``RetryBudgetExhausted`` denial), also behind a deadline; `nil` when the request ended with its attempt's own
    /// failure.
    ///
    /// ```swift
    /// if let persisted = error.retrierError as? JSONBodyRetrier.SignalPersisted { showBusyBanner(persisted.signal) }
    /// ```
    public var retrierError: (any Error)? { reason.retrierError }

    /// The breaker's error when a circuit breaker ended the request: it refused the last attempt, refused a retry, or
    /// opened while the request waited to retry; `nil` otherwise.
    public var circuitBreakerOpenError: CircuitBreakerOpenError? {
        if case .circuitOpen(let error) = reason.original { return error }
        return retrierError as? CircuitBreakerOpenError
    }
}

extension ReboundError.Reason {
    /// The error carried by this reason; `nil` for ``unacceptableStatusCode(_:)``.
    public var underlyingError: (any Error)? {
        switch self {
        case .adaptationFailed(let error), .transportFailed(let error), .validationFailed(let error),
            .decodingFailed(let error), .retryAborted(let error, _):
            error
        case .circuitOpen(let error):
            error
        case .deadlineExceeded(_, let last):
            last.underlyingError
        case .unacceptableStatusCode:
            nil
        }
    }

    /// The error a retrier or a gate stopped the request with, looking through a deadline; `nil` for any other reason.
    public var retrierError: (any Error)? {
        switch self {
        case .retryAborted(let error, _): error
        case .deadlineExceeded(_, let last): last.retrierError
        default: nil
        }
    }

    /// The `URLError` behind a transport or adaptation failure, looking through a retry abort to its original reason.
    public var urlError: URLError? {
        switch self {
        case .adaptationFailed(let error), .transportFailed(let error):
            error as? URLError
        case .retryAborted(_, let original), .deadlineExceeded(_, let original):
            original.urlError
        case .unacceptableStatusCode, .validationFailed, .decodingFailed, .circuitOpen:
            nil
        }
    }

    /// A short name for the reason, from a closed set, for metrics dimensions and trace attributes (OpenTelemetry's
    /// `error.type`): never a URL, a message or an identifier.
    ///
    /// The status code for ``unacceptableStatusCode(_:)`` (`"503"`); the `URLError` code's name for a transport
    /// failure (`timedOut`, `networkConnectionLost`, `cannotConnectToHost`, `cannotFindHost`, … as Swift spells it;
    /// `URLError` for a code without a listed name), or `transport` for another error; `adaptation`, `validation`,
    /// `decoding`; `circuitOpen` for a breaker's refusal, also of a retry; `retryBudgetExhausted`; `throttled` for an
    /// ``AdaptiveThrottle``'s rejection, of an attempt or of a retry; `concurrencyLimit` for a
    /// ``ConcurrencyLimiter``'s refusal; `retryAborted` for
    /// any other error a retrier or a gate stopped the request with; `deadlineExceeded`.
    public var errorType: String {
        switch self {
        case .unacceptableStatusCode(let code): "\(code)"
        case .transportFailed(let error): (error as? URLError).map { $0.code.name ?? "URLError" } ?? "transport"
        case .adaptationFailed(is AdaptiveThrottleRejection): "throttled"
        case .adaptationFailed(is ConcurrencyLimitExceeded): "concurrencyLimit"
        case .adaptationFailed: "adaptation"
        case .validationFailed: "validation"
        case .decodingFailed: "decoding"
        case .circuitOpen: "circuitOpen"
        case .retryAborted(is CircuitBreakerOpenError, _): "circuitOpen"
        case .retryAborted(is RetryBudgetExhausted, _): "retryBudgetExhausted"
        case .retryAborted(is AdaptiveThrottleRejection, _): "throttled"
        case .retryAborted: "retryAborted"
        case .deadlineExceeded: "deadlineExceeded"
        }
    }

    /// The reason an attempt failed, looking through a retry abort or a deadline.
    public var original: ReboundError.Reason {
        switch self {
        case .retryAborted(_, let original), .deadlineExceeded(_, let original): original.original
        default: self
        }
    }
}

extension ReboundError.Reason: CustomStringConvertible {
    /// A short description of the reason, for logs.
    public var description: String {
        switch self {
        case .adaptationFailed(let error): "adapter failed: \(Redaction.describe(error))"
        case .circuitOpen(let error): "\(error)"
        case .transportFailed(let error as URLError): "transport failed: \(error.code.logDescription)"
        case .transportFailed(let error): "transport failed: \(Redaction.describe(error))"
        case .unacceptableStatusCode(let code): "unacceptable status code \(code)"
        case .validationFailed(let error): "validation failed: \(Redaction.describe(error))"
        case .retryAborted(let error, let original): "retry aborted: \(Redaction.describe(error)) (after \(original))"
        case .decodingFailed(let error): "decoding failed: \(Redaction.describe(error))"
        case .deadlineExceeded(let deadline, let last):
            "deadline of \(deadline.logDescription) exceeded (after \(last))"
        }
    }
}

extension ReboundError: CustomStringConvertible {
    /// One line that says which attempt failed, what failed and why the request ended, for example
    /// `GET https://api.example.com/items: attempt 3 failed with status 503; not retried: retry limit reached (3 attempts)`.
    /// An attempt sent to another host than the request's (an endpoint group's other endpoint, a fallback) names where
    /// it went: `attempt 3 (sent to us.api.example.com) failed with status 503`.
    ///
    /// The URL is redacted as ``Redaction/default`` redacts it; of another host, only its name and port are given.
    public var description: String {
        let method = lastRequest?.method ?? storage.value.original.method
        let url = Redaction.default.string(for: storage.value.original.url)
        let count = attemptCount == 1 ? "1 attempt" : "\(attemptCount) attempts"
        let failed = reason.original
        let what: String =
            switch failed {
            case .unacceptableStatusCode(let code):
                // A server that asked to be left alone for a while says why no retry followed, or why it came late.
                if let asked = responseHead.flatMap({ RetryAfter.asked(by: $0, reading: []) }) {
                    "failed with status \(code) asking to wait \(asked.logDescription)"
                } else {
                    "failed with status \(code)"
                }
            case .decodingFailed(let error):
                "succeeded, but its body could not be decoded: \(Redaction.describe(error))"
            default: "failed with \(failed)"
            }
        let why: String =
            switch reason {
            case .retryAborted(let stop, _): "stopped by \(Redaction.describe(stop))"
            case .deadlineExceeded(let deadline, _) where stopReason == .retryAfterPastDeadline:
                "not retried: the wait asked ends after the deadline of \(deadline.logDescription)"
            case .deadlineExceeded(let deadline, _): "deadline of \(deadline.logDescription) exceeded"
            case .circuitOpen: "not sent, so not retried"
            default: stopReason.flatMap { $0.isRetriersOwn ? "not retried: \($0)" : nil } ?? "not retried"
            }
        var attempt = attempts.last.map { "attempt \($0.number)" } ?? "no attempt"
        // Where the last attempt was sent, as adapted, when that is another host than the request's: its host key (the
        // name, and the port if the URL names one).
        if let sent = attempts.last?.admittedRequest, !Redirection.isSameOrigin(sent.url, storage.value.original.url),
            let host = CircuitBreakerRegistry.hostKey(for: sent)
        {
            attempt += " (sent to \(host))"
        }
        return "\(method) \(url): \(attempt) \(what); \(why) (\(count))"
    }
}

extension ReboundError: LocalizedError {
    /// The same text as ``description``.
    public var errorDescription: String? { description }
}
