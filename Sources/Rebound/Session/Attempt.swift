import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The record of one attempt of a request: what was sent, what came back, how long it took.
public struct Attempt: Sendable {
    /// The attempt's number, starting at 1.
    public let number: Int
    /// The request sent to the transport, after adaptation (the last hop's, when the attempt followed redirects); `nil`
    /// if an adapter failed.
    public let request: URLRequest?
    /// The adapted request when the attempt followed redirects, and ``request`` is the last hop's; `nil` otherwise.
    let firstHop: URLRequest?
    /// The response received; `nil` if the adapters or the transport failed. Built from ``responseHead`` on first use
    /// when the transport answered without an `HTTPURLResponse`.
    public var response: HTTPURLResponse? { responseHead?.httpURLResponse }
    /// The status and header fields of the response received; `nil` if the adapters or the transport failed.
    public let responseHead: ResponseHead?
    /// Why the attempt failed; `nil` if it succeeded.
    public let failure: ReboundError.Reason?
    /// The time from the start of adaptation to the end of validation, measured on the session's clock.
    public let duration: Duration
    /// The time from handing the request to the transport to the end of validation (redirects included), measured on
    /// the session's clock: the attempt's ``duration`` without the adapters' time (a wait for a token, a place or a
    /// rate limit). `nil` if the request never reached the transport. What a breaker's
    /// ``CircuitBreaker/SlowCallRule`` reads.
    public let timeOnWire: Duration?
    /// The delay slept before the next attempt; `nil` if there was no next attempt, `.zero` for an immediate retry.
    public internal(set) var retryDelay: Duration?
    /// Which hedge of its round this attempt was: `0` for an attempt the request made on its own (its first, or a
    /// retry), `1`, `2`, … for the hedges started beside it (see ``Hedging``).
    public let hedge: Int
    /// Whether the attempt failed before any byte of its request reached the server, as the transport said
    /// (``HTTPTransport/failedBeforeSending(_:)``): a failure a retry policy may retry whatever the method
    /// (``RetryPolicy/unsentRetryLimit``). `false` for every other attempt.
    public let failedBeforeSending: Bool

    /// Creates an attempt record; the session creates these, and test code may too.
    ///
    /// `timeOnWire` is `nil` by default: the time is unknown.
    public init(
        number: Int, request: URLRequest?, response: HTTPURLResponse?, failure: ReboundError.Reason?,
        duration: Duration, retryDelay: Duration? = nil, hedge: Int = 0, timeOnWire: Duration? = nil
    ) {
        self.init(
            number: number, request: request, responseHead: response.map(ResponseHead.init), failure: failure,
            duration: duration, retryDelay: retryDelay, hedge: hedge, timeOnWire: timeOnWire)
    }

    init(
        number: Int, request: URLRequest?, firstHop: URLRequest? = nil, responseHead: ResponseHead?,
        failure: ReboundError.Reason?, duration: Duration, retryDelay: Duration? = nil, hedge: Int = 0,
        failedBeforeSending: Bool = false, timeOnWire: Duration? = nil
    ) {
        self.number = number
        self.request = request
        self.firstHop = firstHop
        self.responseHead = responseHead
        self.failure = failure
        self.duration = duration
        self.retryDelay = retryDelay
        self.hedge = hedge
        self.failedBeforeSending = failedBeforeSending
        self.timeOnWire = timeOnWire
    }

    /// The request the attempt was adapted to, before any redirect: the one every per-host part (a breaker, a
    /// limiter, a budget, a throttle) admitted it under, and counts it under.
    var admittedRequest: URLRequest? { firstHop ?? request }

    /// The response's status code, if there was a response.
    public var statusCode: Int? { responseHead?.statusCode }

    /// Whether this attempt succeeded: it got a response that passed validation.
    public var succeeded: Bool { failure == nil && responseHead != nil }

    /// Whether this attempt was cut short by cancellation: the caller's, or the session's when another hedge of its
    /// round won (see ``Hedging``); such an attempt has neither a failure nor a response.
    public var wasCancelled: Bool { failure == nil && responseHead == nil }
}

extension Attempt: CustomStringConvertible {
    /// One line for logs, for example `#2 GET https://example.com/items → 503 (unacceptable status code 503) in
    /// 12 ms, retried after 1 s`, or `#3 (hedge 1) GET …` for a hedge; the URL is redacted as ``Redaction/default``
    /// redacts it.
    public var description: String {
        let target = request.map { "\($0.method) \(Redaction.default.string(for: $0.url))" } ?? "(not sent)"
        var line = "#\(number)\(hedge > 0 ? " (hedge \(hedge))" : "") \(target) → "
        switch (failure, statusCode) {
        case (nil, let status?): line += "\(status)"
        case (let failure?, _): line += "\(failure)"
        case (nil, nil): line += "cancelled"
        }
        line += " in \(duration.logDescription)"
        if let retryDelay { line += ", retried after \(retryDelay.logDescription)" }
        return line
    }
}

extension Attempt {
    /// The record of attempt `number`, the `hedge`-th of its round, that came to `result`, started at `start` and ended
    /// `now`: an attempt the deadline cut short is recorded as timed out, a cancelled one with no failure.
    init(recording result: AttemptResult, number: Int, since start: Duration, now: Duration, hedge: Int = 0) {
        let failure: ReboundError.Reason? =
            switch result.kind {
            case .failure(let reason): reason
            case .deadlineReached: RequestMachine.deadlineCutShort
            // A cancelled attempt is recorded too, for the observers; the request ends with `CancellationError`.
            case .success, .cancelled: nil
            }
        self.init(
            number: number, request: result.sent, firstHop: result.firstHop, responseHead: result.response,
            failure: failure, duration: now - start, hedge: hedge, failedBeforeSending: result.failedBeforeSending,
            timeOnWire: result.sentAt.map { now - $0 })
    }
}
