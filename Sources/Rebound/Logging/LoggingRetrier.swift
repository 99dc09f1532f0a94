import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Logs every failed attempt and what happens next, and how each request ends, around any retrier (or none).
///
/// For each failed attempt it emits one ``RetryLogEvent``: request id and label, attempt number, method, URL,
/// status or error, the decision (retry in 1.5 s, give up, or fail with an error) and the time spent so far. A
/// success after retries is logged too (at ``RetryLogEvent/Level/info``), a first-attempt success and a cancellation
/// at ``RetryLogEvent/Level/debug``, a request cancelled in its backoff too. The decision logged is the one the whole
/// chain took, because the events come from the session's outcome hook (``AttemptObserver``). **What wrapping adds**:
/// the wrapped retrier's own answer about the attempt, beside the decision (``RetryLogEvent/wrappedAnswer``; and
/// `; JSONBodyRetrier answered do not retry` in the message where the chain did otherwise), which tells which retrier
/// decided.
///
/// It never changes a decision: ``retry(_:dueTo:)`` returns what the wrapped retrier answers, and ``adapt(_:context:)``
/// is passed on to the wrapped part when it was given as an interceptor
/// (the overload ``init(wrapping:minimumLevel:redaction:includesHeaders:sink:)-(RequestInterceptor,_,_,_,_)``, chosen when the wrapped part is a
/// ``RequestInterceptor``). Wrapping never hides a role: the
/// wrapped part's other roles register through the context of the calls the logger forwards, as they would unwrapped.
///
/// **Where it hears from.** The logger registers itself as an observer through the context of each call it gets, so
/// it keeps logging inside your own decorators. Among `retriers:` it is asked first when an attempt fails, and logs
/// from that attempt on: every failure the retriers are asked about, every retry, and how the request ends. Given
/// where it also adapts (a session's `interceptor:`, an ``Interceptor``'s `interceptors:`), or also in `observers:`,
/// it hears every request from its first attempt: first-attempt successes, and failures no retrier is asked about (an
/// open breaker's refusal). The redirects an attempt followed are logged with its outcome
/// (``RetryLogEvent/redirects``), for every attempt it hears from the start of: the ones after the first when it is
/// only among `retriers:`. Secrets never reach the sink: see ``Redaction``.
///
/// The sink is a closure; ``standardError`` (the default) writes ``RetryLogEvent/message`` lines to standard error.
/// Events below ``minimumLevel`` are not built at all. The sink is called on the request's task, and may be called
/// from several requests at once.
///
/// ```swift
/// let session = Session(retriers: [LoggingRetrier(wrapping: RetryPolicy())])
/// // [1a2b3c4d] GET https://api.example.com/items: attempt 1 failed with status 503; retry in 500 ms (31 ms so far)
/// ```
public final class LoggingRetrier: RequestInterceptor, AttemptObserver {
    /// Receives every event at or above the minimum level.
    public typealias Sink = @Sendable (RetryLogEvent) -> Void

    /// Writes each event's message as one line to standard error.
    public static let standardError: Sink = lines(to: .standardError)

    /// A sink that writes each event's message as one line to `handle`, one write per line.
    public static func lines(to handle: FileHandle) -> Sink {
        { event in handle.write(Data((event.message + "\n").utf8)) }
    }

    /// The retrier whose decisions are passed through; `nil` for none (then every answer is `doNotRetry`).
    public let wrapped: (any RequestRetrier)?
    /// The least important level that is logged; ``RetryLogEvent/Level/info`` by default.
    public let minimumLevel: RetryLogEvent.Level
    /// What counts as a secret; ``Redaction/default`` by default.
    public let redaction: Redaction
    /// Whether ``RetryLogEvent/message`` lists the request's header fields (redacted); `false` by default.
    public let includesHeaders: Bool

    private let sink: Sink
    /// The wrapped part as an adapter, when it was given as an interceptor.
    private let wrappedAdapter: (any RequestAdapter)?
    /// The wrapped retrier's type name, as logs show it.
    private let wrappedName: String?
    /// What is kept per request until its attempt is logged or the request ends, behind one lock.
    private let kept = Locked(Kept())

    private struct Kept: Sendable {
        /// The wrapped retrier's answers about each request's failed attempts, by attempt number, until each is logged.
        var answers: [UUID: [Int: RetryResult]] = [:]
        /// The redirects each request's current attempt followed, as log lines.
        var hops: [UUID: (attempt: Int, lines: [String])] = [:]
    }

    /// Creates a logging retrier.
    ///
    /// - Parameters:
    ///   - wrapped: The retrier that decides; none by default.
    ///   - minimumLevel: The least important level logged; ``RetryLogEvent/Level/info`` by default, which logs every
    ///     failed attempt and every success after retries.
    ///   - redaction: What counts as a secret; ``Redaction/default`` by default.
    ///   - includesHeaders: Whether messages list the request's header fields, redacted; `false` by default.
    ///   - sink: Receives the events; ``standardError`` by default.
    public convenience init(
        wrapping wrapped: (any RequestRetrier)? = nil, minimumLevel: RetryLogEvent.Level = .info,
        redaction: Redaction = .default, includesHeaders: Bool = false,
        sink: @escaping Sink = LoggingRetrier.standardError
    ) {
        self.init(
            retrier: wrapped, adapter: nil, minimumLevel: minimumLevel, redaction: redaction,
            includesHeaders: includesHeaders, sink: sink)
    }

    /// Creates a logging retrier around an interceptor, which it adapts with as well as asks about retries: the
    /// overload Swift picks for a part known to be a ``RequestInterceptor``, so that wrapping an
    /// ``AuthenticationInterceptor`` keeps its credential.
    ///
    /// - Parameters:
    ///   - wrapped: The interceptor that adapts and decides, an ``AuthenticationInterceptor`` or an ``Interceptor``.
    ///   - minimumLevel: The least important level logged; ``RetryLogEvent/Level/info`` by default.
    ///   - redaction: What counts as a secret; ``Redaction/default`` by default.
    ///   - includesHeaders: Whether messages list the request's header fields, redacted; `false` by default.
    ///   - sink: Receives the events; ``standardError`` by default.
    public convenience init(
        wrapping wrapped: any RequestInterceptor, minimumLevel: RetryLogEvent.Level = .info,
        redaction: Redaction = .default, includesHeaders: Bool = false,
        sink: @escaping Sink = LoggingRetrier.standardError
    ) {
        self.init(
            retrier: wrapped, adapter: wrapped, minimumLevel: minimumLevel, redaction: redaction,
            includesHeaders: includesHeaders, sink: sink)
    }

    private init(
        retrier wrapped: (any RequestRetrier)?, adapter: (any RequestAdapter)?, minimumLevel: RetryLogEvent.Level,
        redaction: Redaction, includesHeaders: Bool, sink: @escaping Sink
    ) {
        self.wrapped = wrapped
        self.minimumLevel = minimumLevel
        self.redaction = redaction
        self.includesHeaders = includesHeaders
        self.sink = sink
        self.wrappedAdapter = adapter
        self.wrappedName = wrapped.map { String(describing: type(of: $0)) }
    }

    /// Registers the logger as an observer through the context, then passes the request to the wrapped interceptor,
    /// if it was given one; otherwise returns it unchanged.
    public func adapt(_ request: consuming URLRequest, context: RequestContext) async throws -> URLRequest {
        context.observe(self)
        guard let wrappedAdapter else { return request }
        return try await wrappedAdapter.adapt(consume request, context: context)
    }

    /// Registers the logger as an observer through the request's context, then returns the wrapped retrier's answer
    /// unchanged, or ``RetryResult/doNotRetry`` without one.
    public func retry(_ request: RetryRequest, dueTo error: ReboundError) async -> RetryResult {
        request.context.observe(self)
        let answer = await wrapped?.retry(request, dueTo: error) ?? .doNotRetry
        if wrappedName != nil { keep(answer, for: request) }
        return answer
    }

    /// Keeps the wrapped retrier's answer until the attempt is logged.
    private func keep(_ answer: RetryResult, for request: RetryRequest) {
        // Kept only where the request's end will be told (a session's request), which forgets it.
        guard request.context.canRegister else { return }
        // By attempt: a hedged round asks about several of its failures at once.
        let attempt = request.attempts.last?.number ?? request.attempts.count
        kept.withLock { $0.answers[request.requestID, default: [:]][attempt] = answer }
    }

    /// Logs the outcome, with the redirects the attempt followed.
    public func attemptDidFinish(_ outcome: AttemptOutcome) async {
        log(outcome)
    }

    /// Keeps the hop, to be logged with its attempt's outcome.
    public func attemptWasRedirected(_ hop: RedirectHop) async {
        let line =
            "\(hop.request.method) \(redaction.string(for: hop.request.url)) → \(hop.responseHead.statusCode) → "
            + "\(hop.next.method) \(redaction.string(for: hop.next.url))"
        kept.withLock { kept in
            if let hops = kept.hops[hop.requestID], hops.attempt == hop.attempt {
                kept.hops[hop.requestID]?.lines.append(line)
            } else {
                kept.hops[hop.requestID] = (hop.attempt, [line])
            }
        }
    }

    /// The redirects `outcome`'s attempt followed, forgotten once read.
    private func redirects(of outcome: AttemptOutcome) -> [String] {
        kept.withLock { kept in
            guard !kept.hops.isEmpty, let hops = kept.hops.removeValue(forKey: outcome.requestID),
                hops.attempt == outcome.attempt.number
            else { return [] }
            return hops.lines
        }
    }

    /// Logs a request cancelled after a failed attempt was to be retried (in its backoff sleep, say), and a request
    /// that ended after a part in shadow mode would have refused its retry during its backoff: every other end was
    /// logged with its last attempt.
    public func requestDidFinish(_ outcome: RequestOutcome) async {
        // Forgets what was kept for the request, then logs a cancellation that came after a retry was decided.
        kept.withLock { kept in
            // Nothing is kept for most requests: no key is hashed then.
            if !kept.answers.isEmpty { kept.answers[outcome.requestID] = nil }
            if !kept.hops.isEmpty { kept.hops[outcome.requestID] = nil }
        }
        guard let last = outcome.attempts.last, last.retryDelay != nil else { return }
        let untold = Array(outcome.shadowRefusals.suffix(outcome.untoldShadowRefusals))
        guard outcome.isCancelled || !untold.isEmpty else { return }
        log(
            AttemptOutcome(
                requestID: outcome.requestID, label: outcome.label, original: outcome.original,
                attempt: last, elapsed: outcome.elapsed, decision: outcome.decision, error: outcome.error,
                shadowRefusals: untold, endpoint: outcome.lastEndpoint))
    }

    /// Builds and sinks the event for an outcome at or above the minimum level.
    private func log(_ outcome: AttemptOutcome) {
        // Below the minimum level (a first attempt's success, by default) nothing is read: what was kept for the
        // attempt is forgotten when the request ends.
        guard Self.level(of: outcome) >= minimumLevel else { return }
        if let event = event(for: outcome, redirects: redirects(of: outcome)) { sink(event) }
    }

    /// The level an outcome is logged at: by its decision, and at least ``RetryLogEvent/Level/notice`` when a part in
    /// shadow mode would have refused something.
    private static func level(of outcome: AttemptOutcome) -> RetryLogEvent.Level {
        let level: RetryLogEvent.Level =
            switch outcome.decision {
            case .succeeded: outcome.attempt.number == 1 ? .debug : .info
            case .retry: .notice
            case .failed: .error
            case .cancelled: .debug
            }
        return outcome.shadowRefusals.isEmpty ? level : Swift.max(level, .notice)
    }

    /// The event for an outcome whose attempt followed `redirects` (log lines), or `nil` when its level is below
    /// ``minimumLevel``.
    func event(for outcome: AttemptOutcome, redirects: [String] = []) -> RetryLogEvent? {
        let number = outcome.attempt.number
        let decision = outcome.decision
        let wrappedAnswer = wrappedName == nil ? nil : answer(about: outcome)
        // The message names the wrapped retrier's answer only where the chain did something else with it.
        let answerDiffers: Bool =
            switch (wrappedAnswer, decision) {
            case (nil, _): false
            case (let answer?, .retry(let delay)): answer.delay != delay
            case (let answer?, .failed): answer.retryRequired
            case (_?, _): true
            }
        let level = Self.level(of: outcome)
        guard level >= minimumLevel else { return nil }
        // Why a failed request ended, when not with its attempt's own failure.
        let stopReason = outcome.error?.stopReason
        let endReason: String? =
            switch outcome.error?.reason {
            case .retryAborted(let stop, _)?: Redaction.describe(stop)
            case .deadlineExceeded(let deadline, _)? where stopReason == .retryAfterPastDeadline:
                "a Retry-After wait past the deadline of \(deadline.logDescription)"
            case .deadlineExceeded(let deadline, _)?: "deadline of \(deadline.logDescription) exceeded"
            default: nil
            }

        let request = outcome.request
        let method = request.method.rawValue
        let url = redaction.string(for: request.url)
        // Sorted by the lower-cased name, each lower-cased once rather than at every comparison.
        let headers = (request.allHTTPHeaderFields ?? [:]).map { (order: $0.key.lowercased(), field: $0) }
            .sorted { $0.order < $1.order }
            .map { (name: $0.field.key, value: redaction.value(ofHeader: $0.field.key, $0.field.value)) }
        let failure = outcome.failure.map { reason -> String in
            if case .unacceptableStatusCode = reason { return "status \(outcome.statusCode ?? 0)" }
            return outcome.statusCode.map { "status \($0), \(reason)" } ?? "\(reason)"
        }

        let id = outcome.requestID.uuidString.prefix(8).lowercased()
        // "GET https://eu.api.example.com/v2/charges via payments": the group that sent it there, if one did.
        let via = outcome.endpointGroup.map { " via \($0)" } ?? ""
        var message = "[\(id)\(outcome.label.map { " \($0)" } ?? "")] \(method) \(url)\(via): "
        let spent = outcome.elapsed.logDescription
        let hedge = outcome.attempt.hedge
        // "attempt 3 (hedge 1)" for a hedge.
        let attempt = hedge > 0 ? "attempt \(number) (hedge \(hedge))" : "attempt \(number)"
        switch decision {
        case .succeeded:
            let status = outcome.statusCode.map { " with status \($0)" } ?? ""
            message +=
                number == 1 ? "succeeded\(status) (\(spent))" : "succeeded\(status) after \(number) attempts (\(spent))"
        case .retry(let delay):
            message +=
                "\(attempt) failed with \(failure ?? "an error"); retry in \(delay.logDescription) (\(spent) so far)"
        case .failed:
            if let endReason {
                message +=
                    "\(attempt) failed with \(failure ?? "an error"); failing with \(endReason) (\(spent))"
            } else {
                let rule = stopReason.flatMap { $0.isRetriersOwn ? ": \($0)" : nil } ?? ""
                message +=
                    "\(attempt) failed with \(failure ?? "an error"); giving up after \(number) attempt\(number == 1 ? "" : "s")\(rule) (\(spent))"
            }
        case .cancelled where outcome.attempt.retryDelay != nil:
            message += "cancelled while waiting to retry after attempt \(number) (\(spent))"
        case .cancelled:
            message += "cancelled during \(attempt) (\(spent))"
        }
        if answerDiffers, let wrappedName, let wrappedAnswer { message += "; \(wrappedName) answered \(wrappedAnswer)" }
        if !redirects.isEmpty { message += "; redirected: " + redirects.joined(separator: ", ") }
        if !outcome.shadowRefusals.isEmpty {
            message += "; in shadow mode, " + outcome.shadowRefusals.map(\.description).joined(separator: ", ")
        }
        if includesHeaders, !headers.isEmpty {
            message += " headers: " + headers.map { "\($0.name): \($0.value)" }.joined(separator: ", ")
        }

        return RetryLogEvent(
            level: level, requestID: outcome.requestID, label: outcome.label, attempt: number, hedge: hedge,
            method: method,
            url: url,
            requestHeaders: headers, statusCode: outcome.statusCode, failure: failure, decision: decision,
            endReason: endReason, stopReason: stopReason, wrappedAnswer: wrappedAnswer?.description,
            breakerState: outcome.error?.circuitBreakerOpenError?.state, redirects: redirects,
            shadowRefusals: outcome.shadowRefusals, endpointGroup: outcome.endpointGroup, endpoint: outcome.endpoint,
            attemptDuration: outcome.attempt.duration, elapsed: outcome.elapsed, message: message)
    }
}

extension RequestRetrier where Self == LoggingRetrier {
    /// A ``LoggingRetrier`` around `retrier`; see `LoggingRetrier.init(wrapping:minimumLevel:redaction:includesHeaders:sink:)`.
    public static func logging(
        _ retrier: (any RequestRetrier)? = nil, minimumLevel: RetryLogEvent.Level = .info,
        redaction: Redaction = .default, includesHeaders: Bool = false,
        sink: @escaping LoggingRetrier.Sink = LoggingRetrier.standardError
    ) -> LoggingRetrier {
        LoggingRetrier(
            wrapping: retrier, minimumLevel: minimumLevel, redaction: redaction, includesHeaders: includesHeaders,
            sink: sink)
    }
}

extension RequestRetrier where Self == LoggingRetrier {
    /// A ``LoggingRetrier`` around `interceptor`, which it adapts with as well as asks about retries: the overload
    /// Swift picks for a part known to be a ``RequestInterceptor``, so that `.logging(auth)` keeps the credential; see
    /// `LoggingRetrier.init(wrapping:minimumLevel:redaction:includesHeaders:sink:)`.
    public static func logging(
        _ interceptor: any RequestInterceptor, minimumLevel: RetryLogEvent.Level = .info,
        redaction: Redaction = .default, includesHeaders: Bool = false,
        sink: @escaping LoggingRetrier.Sink = LoggingRetrier.standardError
    ) -> LoggingRetrier {
        LoggingRetrier(
            wrapping: interceptor, minimumLevel: minimumLevel, redaction: redaction, includesHeaders: includesHeaders,
            sink: sink)
    }
}

extension LoggingRetrier {
    /// The wrapped retrier's answer about `outcome`'s attempt, if it was asked; forgotten once read.
    private func answer(about outcome: AttemptOutcome) -> RetryResult? {
        kept.withLock { kept in
            guard let answer = kept.answers[outcome.requestID]?.removeValue(forKey: outcome.attempt.number) else {
                return nil
            }
            if kept.answers[outcome.requestID]?.isEmpty == true { kept.answers[outcome.requestID] = nil }
            return answer
        }
    }
}
