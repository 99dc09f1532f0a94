#if canImport(os)
    import os

    extension LoggingRetrier {
        /// A sink that writes each event's message to the unified logging system through `logger` (Apple platforms
        /// only), at the matching type.
        ///
        /// ``RetryLogEvent/Level/trace`` and ``RetryLogEvent/Level/debug`` are logged as `debug`,
        /// ``RetryLogEvent/Level/info`` as `info`, ``RetryLogEvent/Level/notice`` as `default`,
        /// ``RetryLogEvent/Level/warning`` and ``RetryLogEvent/Level/error`` as `error`,
        /// ``RetryLogEvent/Level/critical`` as `fault`.
        ///
        /// The message is already redacted (see ``Redaction``), so it is logged as public.
        ///
        /// ```swift
        /// let logger = os.Logger(subsystem: "com.example.app", category: "http")
        /// let retrier = LoggingRetrier(wrapping: RetryPolicy(), sink: LoggingRetrier.osLogger(logger))
        /// ```
        public static func osLogger(_ logger: os.Logger) -> Sink {
            let box = UnifiedLogger(logger: logger)
            return { event in
                box.logger.log(level: event.level.osLogType, "\(event.message, privacy: .public)")
            }
        }
    }

    /// An `os.Logger` carried into the sink's `@Sendable` closure.
    ///
    /// `@unchecked Sendable`: `os.Logger` is documented as safe to use from any thread, and the box never changes
    /// after it is made (some SDKs do not mark `os.Logger` `Sendable` themselves).
    private final class UnifiedLogger: @unchecked Sendable {
        let logger: os.Logger
        init(logger: os.Logger) { self.logger = logger }
    }

    extension RetryLogEvent.Level {
        /// The unified logging type an event of this level is logged at.
        fileprivate var osLogType: OSLogType {
            switch self {
            case .trace, .debug: .debug
            case .info: .info
            case .notice: .default
            case .warning, .error: .error
            case .critical: .fault
            }
        }
    }
#endif
