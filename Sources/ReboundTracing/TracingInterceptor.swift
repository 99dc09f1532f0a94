#if Tracing
    import Foundation
    import Rebound
    import Tracing

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    /// Traces every request through swift-distributed-tracing: one span per request, one child span per attempt, the
    /// trace context injected into every attempt's headers, and the decisions between attempts as span events.
    ///
    /// Place it first among a session's adapters (or in its `interceptor:`), so that each attempt's span covers the
    /// other adapters and the send:
    ///
    /// ```swift
    /// let session = Session(adapters: [TracingInterceptor(), CircuitBreakerRegistry()], retriers: [RetryPolicy()])
    /// ```
    ///
    /// **Spans.** The request's span (kind `internal`, named after the request's label, or its method) is a child of
    /// the caller's current context (`InstrumentationContext.current`), and lasts from the first attempt to the
    /// request's end. Each attempt's span (kind `client`, named after the method; a request's hedges in flight at once
    /// each have one, with `rebound.hedge`) follows OpenTelemetry's HTTP client conventions: `http.request.method`,
    /// `server.address`, `server.port`, `url.full` (query values and user-info redacted, as ``Redaction`` says),
    /// `http.response.status_code`, `http.request.resend_count` (from the second attempt on), and, for a failed
    /// attempt, `error.type` (`ReboundError.Reason.errorType`: the status code, or a closed set of names such as
    /// `timedOut` or `circuitOpen`) with an error status.
    ///
    /// **Events** on the request's span: `rebound.retry` (with `rebound.retry.delay_ms` and the next attempt's number),
    /// `rebound.breaker.refused`, `rebound.budget.denied` and `rebound.deadline.exceeded` when one of them ends the
    /// request; on the attempt's span, `rebound.redirect` for each hop it followed (status and redacted location).
    ///
    /// **Propagation.** The attempt's span context is injected into the attempt's request through the tracer, which is
    /// an instrument: with swift-otel's W3C propagator that is a `traceparent` header (and `tracestate`), so the
    /// server's spans are children of the attempt that reached them. A redirect hop carries the header of the attempt
    /// it belongs to.
    ///
    /// Thread-safe: one interceptor may serve many sessions and requests at once. It registers itself as an observer
    /// through the context, so a wrapper that forwards `adapt` keeps every span.
    public final class TracingInterceptor: RequestAdapter, AttemptObserver {
        /// The tracer spans are started with; `nil` for the one bootstrapped for the process
        /// (`InstrumentationSystem.tracer`), read at each request.
        public let tracer: (any Tracer)?
        /// What counts as a secret in a URL; ``Redaction/default`` by default.
        public let redaction: Redaction

        private let spans = SpanTable()

        /// Creates a tracing interceptor.
        ///
        /// - Parameters:
        ///   - tracer: The tracer spans are started with; the process's (`InstrumentationSystem.tracer`) by default.
        /// - redaction: What counts as a secret in `url.full` and in redirect events; ``Redaction/default`` by default.
        public init(tracer: (any Tracer)? = nil, redaction: Redaction = .default) {
            self.tracer = tracer
            self.redaction = redaction
        }

        /// Starts the attempt's span (and the request's, on its first attempt) and injects its context into the
        /// request.
        ///
        /// Handed a context that cannot register observers (one made with `RequestContext`'s public initializer, in a
        /// test), it would never hear the request end, so it starts no span and injects the caller's context as it is.
        public func adapt(_ request: consuming URLRequest, context: RequestContext) async throws -> URLRequest {
            var request = request
            let tracer = tracer ?? InstrumentationSystem.tracer
            guard context.canRegister else {
                tracer.inject(InstrumentationContext.current ?? .topLevel, into: &request, using: HeaderInjector())
                return request
            }
            context.observe(self)
            let span = startAttempt(of: request, context: context, tracer: tracer)
            tracer.inject(span.context, into: &request, using: HeaderInjector())
            return request
        }

        /// Ends the attempt's span with its status or error, and adds a retry event to the request's span.
        public func attemptDidFinish(_ outcome: AttemptOutcome) async {
            let (request, attempt) = spans.finishAttempt(of: outcome.requestID, number: outcome.attempt.number)
            if let attempt {
                if let status = outcome.statusCode { attempt.attributes["http.response.status_code"] = status }
                if outcome.attempt.hedge > 0 { attempt.attributes["rebound.hedge"] = outcome.attempt.hedge }
                if let failure = outcome.failure {
                    attempt.attributes["error.type"] = failure.errorType
                    attempt.setStatus(SpanStatus(code: .error))
                }
                attempt.end()
            }
            if let request, case .retry(let delay) = outcome.decision {
                request.addEvent(
                    SpanEvent(
                        name: "rebound.retry",
                        attributes: [
                            "rebound.retry.delay_ms": .int64(Int64(delay.milliseconds)),
                            "rebound.retry.next_attempt": .int64(Int64(outcome.attempt.number + 1)),
                        ]))
            }
        }

        /// Adds a redirect event to the attempt's span.
        public func attemptWasRedirected(_ hop: RedirectHop) async {
            guard let attempt = spans.attempt(hop.attempt, of: hop.requestID) else { return }
            attempt.addEvent(
                SpanEvent(
                    name: "rebound.redirect",
                    attributes: [
                        "http.response.status_code": .int64(Int64(hop.response.statusCode)),
                        "rebound.redirect.location": .string(redaction.string(for: hop.next.url)),
                    ]))
        }

        /// Ends the request's span: an error status and `error.type` when it failed, and an event for a breaker, a
        /// budget or a deadline that ended it.
        public func requestDidFinish(_ outcome: RequestOutcome) async {
            guard let span = spans.finishRequest(outcome.requestID) else { return }
            if let status = outcome.response?.statusCode { span.attributes["http.response.status_code"] = status }
            span.attributes["rebound.attempts"] = outcome.attempts.count
            if let error = outcome.error {
                if error.circuitBreakerOpenError != nil { span.addEvent("rebound.breaker.refused") }
                if error.retrierError is RetryBudgetExhausted { span.addEvent("rebound.budget.denied") }
                if case .deadlineExceeded = error.reason { span.addEvent("rebound.deadline.exceeded") }
                span.attributes["error.type"] = error.errorType
                span.setStatus(SpanStatus(code: .error))
            } else if outcome.isCancelled {
                span.attributes["error.type"] = "cancelled"
            }
            span.end()
        }

        /// Starts the attempt's span under the request's, starting the request's on its first attempt.
        private func startAttempt(of request: URLRequest, context: RequestContext, tracer: any Tracer) -> any Span {
            let method = request.httpMethod ?? "GET"
            let parent = spans.requestSpan(of: context.requestID) {
                let span = tracer.startSpan(
                    context.label ?? method, context: InstrumentationContext.current ?? .topLevel, ofKind: .internal)
                span.attributes["http.request.method"] = method
                if let label = context.label { span.attributes["rebound.label"] = label }
                return span
            }
            let span = tracer.startSpan(method, context: parent.context, ofKind: .client)
            span.attributes["http.request.method"] = method
            span.attributes["url.full"] = redaction.string(for: request.url)
            if let host = request.url?.host { span.attributes["server.address"] = host }
            if let port = request.url?.port ?? Self.defaultPort(of: request.url) {
                span.attributes["server.port"] = port
            }
            if context.retryCount > 0 { span.attributes["http.request.resend_count"] = context.retryCount }
            // The same attempt adapted twice (the interceptor placed twice) keeps the newer span. Earlier attempts may
            // still be in flight (hedges): their spans end with their outcomes, or with the request.
            spans.setAttempt(span, number: context.attempt, of: context.requestID)?.end()
            return span
        }

        private static func defaultPort(of url: URL?) -> Int? {
            switch url?.scheme?.lowercased() {
            case "https": 443
            case "http": 80
            default: nil
            }
        }
    }

    /// Writes a propagated value as a request header.
    private struct HeaderInjector: Injector {
        func inject(_ value: String, forKey key: String, into request: inout URLRequest) {
            request.setValue(value, forHTTPHeaderField: key)
        }
    }

    /// The spans of the requests under way, by request.
    ///
    /// `@unchecked Sendable`: the dictionary is read and written only while `lock` is held; spans are `Sendable`.
    private final class SpanTable: @unchecked Sendable {
        private struct Entry {
            let request: any Span
            /// The spans of the attempts in flight, by number: more than one while a request is hedged.
            var attempts: [Int: any Span] = [:]
        }

        private let lock = NSLock()
        private var entries: [UUID: Entry] = [:]

        /// The request's span, started by `start` if the request has none yet.
        func requestSpan(of id: UUID, start: () -> any Span) -> any Span {
            lock.withLock {
                if let entry = entries[id] { return entry.request }
                let span = start()
                entries[id] = Entry(request: span)
                return span
            }
        }

        /// Keeps `span` as attempt `number` of the request; returns the span it replaces, if that attempt had one open.
        func setAttempt(_ span: any Span, number: Int, of id: UUID) -> (any Span)? {
            lock.withLock {
                guard entries[id] != nil else { return nil }
                return entries[id]?.attempts.updateValue(span, forKey: number)
            }
        }

        /// Attempt `number`'s span of the request, if it is open.
        func attempt(_ number: Int, of id: UUID) -> (any Span)? {
            lock.withLock { entries[id]?.attempts[number] }
        }

        /// The request's span, and its attempt `number`'s span, taken out.
        func finishAttempt(of id: UUID, number: Int) -> (request: (any Span)?, attempt: (any Span)?) {
            lock.withLock {
                guard let entry = entries[id] else { return (nil, nil) }
                return (entry.request, entries[id]?.attempts.removeValue(forKey: number))
            }
        }

        /// The request's span, taken out with its entry; attempt spans still open are ended.
        func finishRequest(_ id: UUID) -> (any Span)? {
            let entry = lock.withLock { entries.removeValue(forKey: id) }
            if let entry { for span in entry.attempts.values { span.end() } }
            return entry?.request
        }
    }

    extension Duration {
        /// The duration in whole milliseconds.
        fileprivate var milliseconds: Int64 {
            let (seconds, attoseconds) = components
            return seconds * 1_000 + attoseconds / 1_000_000_000_000_000
        }
    }
#endif
