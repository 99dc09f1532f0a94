#if Logging
    import Foundation
    import Logging
    import Rebound

    extension LoggingRetrier {
        /// A sink that logs each event to `logger` at the event's level, with its fields as structured metadata.
        ///
        /// The message is ``RetryLogEvent/message``, one readable line; the metadata carries the same fields, already
        /// redacted (see ``RetryLogEvent/metadata``). The logger's own metadata and metadata provider still apply, and
        /// the logger filters by its own level as usual; prefer
        /// ``LoggingRetrier/init(wrapping:logger:redaction:includesHeaders:)-(RequestRetrier?,_,_,_)``, which also
        /// builds no event below that level.
        public static func logger(_ logger: Logger) -> Sink {
            { event in
                logger.log(
                    level: event.level.loggerLevel, "\(event.message)", metadata: event.metadata, source: "Rebound")
            }
        }

        /// Creates a logging retrier that logs to a swift-log `Logger`; events below the logger's level are never
        /// built.
        ///
        /// - Parameters:
        ///   - wrapped: The retrier that decides; none by default.
        ///   - logger: The logger the events go to, each at its level (see ``RetryLogEvent/Level``) with its fields as
        ///     metadata. Its `logLevel`, read once here, is the retrier's ``LoggingRetrier/minimumLevel``.
        ///   - redaction: What counts as a secret; ``Redaction/default`` by default.
        /// - includesHeaders: Whether the message and the metadata carry the request's header fields, redacted; `false`
        ///     by default.
        public convenience init(
            wrapping wrapped: (any RequestRetrier)? = nil, logger: Logger, redaction: Redaction = .default,
            includesHeaders: Bool = false
        ) {
            self.init(
                wrapping: wrapped, minimumLevel: RetryLogEvent.Level(logger.logLevel), redaction: redaction,
                includesHeaders: includesHeaders, sink: Self.logger(logger))
        }

        /// Creates a logging retrier around an interceptor, which it adapts with as well as asks about retries, logging
        /// to a swift-log `Logger`: the overload Swift picks for a part known to be a ``RequestInterceptor``, so that
        /// wrapping an ``AuthenticationInterceptor`` keeps its credential.
        ///
        /// - Parameters:
        ///   - wrapped: The interceptor that adapts and decides.
        ///   - logger: The logger the events go to; its `logLevel`, read once here, is the retrier's
        ///     ``LoggingRetrier/minimumLevel``.
        ///   - redaction: What counts as a secret; ``Redaction/default`` by default.
        /// - includesHeaders: Whether the message and the metadata carry the request's header fields, redacted; `false`
        ///     by default.
        public convenience init(
            wrapping wrapped: any RequestInterceptor, logger: Logger, redaction: Redaction = .default,
            includesHeaders: Bool = false
        ) {
            self.init(
                wrapping: wrapped, minimumLevel: RetryLogEvent.Level(logger.logLevel), redaction: redaction,
                includesHeaders: includesHeaders, sink: Self.logger(logger))
        }
    }

    extension RequestRetrier where Self == LoggingRetrier {
        /// A ``LoggingRetrier`` around `retrier` that logs to `logger`; see
        /// `LoggingRetrier.init(wrapping:logger:redaction:includesHeaders:)`.
        public static func logging(
            _ retrier: (any RequestRetrier)? = nil, logger: Logger, redaction: Redaction = .default,
            includesHeaders: Bool = false
        ) -> LoggingRetrier {
            LoggingRetrier(wrapping: retrier, logger: logger, redaction: redaction, includesHeaders: includesHeaders)
        }

        /// A ``LoggingRetrier`` around `interceptor`, which it adapts with as well as asks about retries, that logs to
        /// `logger`; see `LoggingRetrier.init(wrapping:logger:redaction:includesHeaders:)`.
        public static func logging(
            _ interceptor: any RequestInterceptor, logger: Logger, redaction: Redaction = .default,
            includesHeaders: Bool = false
        ) -> LoggingRetrier {
            LoggingRetrier(
                wrapping: interceptor, logger: logger, redaction: redaction, includesHeaders: includesHeaders)
        }
    }

    extension RetryLogEvent.Level {
        /// The level of the same name in swift-log (Rebound's levels are named after swift-log's).
        public var loggerLevel: Logger.Level {
            switch self {
            case .trace: .trace
            case .debug: .debug
            case .info: .info
            case .notice: .notice
            case .warning: .warning
            case .error: .error
            case .critical: .critical
            }
        }

        /// The level of the same name as swift-log's `level`.
        public init(_ level: Logger.Level) {
            switch level {
            case .trace: self = .trace
            case .debug: self = .debug
            case .info: self = .info
            case .notice: self = .notice
            case .warning: self = .warning
            case .error: self = .error
            case .critical: self = .critical
            }
        }
    }

    extension RetryLogEvent {
        /// The event's fields as swift-log metadata, every value already redacted.
        ///
        /// Keys: `rebound.request_id` (the full identifier), `rebound.label` (when the request has one),
        /// `rebound.attempt`, `rebound.hedge` (for a hedge: which of its round, from 1), `http.request.method`,
        /// `url.full` (query values and user-info redacted), `http.response.status_code` (when the attempt got a
        /// response), `rebound.failure` (why the attempt failed), `rebound.decision` (`succeeded`, `retry`, `failed` or
        /// `cancelled`), `rebound.retry_delay` (seconds, for a retry), `rebound.end_reason`, `rebound.wrapped_answer`,
        /// `rebound.breaker.state` (the state of a breaker that ended the request), `rebound.redirects` (one line per
        /// hop the attempt followed), `rebound.attempt_duration` and `rebound.elapsed` (seconds),
        /// `rebound.shadow_refusals` (one line per refusal a part in shadow mode would have made, as
        /// ``ShadowRefusal/description`` writes it), `rebound.endpoint_group` and `rebound.endpoint` (the group that
        /// sent the attempt and the endpoint's base URL, when a group routed it), and, when the retrier includes headers,
        /// `http.request.header.<name>` (lower-cased name, redacted value). A key whose value is absent is left out.
        public var metadata: Logger.Metadata {
            var metadata: Logger.Metadata = [
                "rebound.request_id": .string(requestID.uuidString.lowercased()),
                "rebound.attempt": .stringConvertible(attempt),
                "http.request.method": .string(method),
                "url.full": .string(url),
                "rebound.decision": .string(decision.name),
                "rebound.attempt_duration": .stringConvertible(attemptDuration.seconds),
                "rebound.elapsed": .stringConvertible(elapsed.seconds),
            ]
            if let label { metadata["rebound.label"] = .string(label) }
            if hedge > 0 { metadata["rebound.hedge"] = .stringConvertible(hedge) }
            if let statusCode { metadata["http.response.status_code"] = .stringConvertible(statusCode) }
            if let failure { metadata["rebound.failure"] = .string(failure) }
            if case .retry(let delay) = decision { metadata["rebound.retry_delay"] = .stringConvertible(delay.seconds) }
            if let endReason { metadata["rebound.end_reason"] = .string(endReason) }
            if let wrappedAnswer { metadata["rebound.wrapped_answer"] = .string(wrappedAnswer) }
            if let breakerState { metadata["rebound.breaker.state"] = .string(breakerState.rawValue) }
            if !redirects.isEmpty { metadata["rebound.redirects"] = .array(redirects.map { .string($0) }) }
            if !shadowRefusals.isEmpty {
                metadata["rebound.shadow_refusals"] = .array(shadowRefusals.map { .string($0.description) })
            }
            if let endpointGroup { metadata["rebound.endpoint_group"] = .string(endpointGroup) }
            if let endpoint { metadata["rebound.endpoint"] = .string(endpoint.description) }
            for header in requestHeaders {
                metadata["http.request.header.\(header.name.lowercased())"] = .string(header.value)
            }
            return metadata
        }
    }

    extension Duration {
        /// The duration in seconds, as a floating-point number.
        fileprivate var seconds: Double {
            let (seconds, attoseconds) = components
            return Double(seconds) + Double(attoseconds) / 1e18
        }
    }
#endif
