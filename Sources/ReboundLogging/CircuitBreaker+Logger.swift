#if Logging
    import Logging
    import Rebound

    extension Logger {
        /// Logs a circuit breaker's change of state: opening and forced opening at `warning`, half-opening and forced
        /// closing at `notice`, closing at `info`.
        ///
        /// The message reads like `circuit breaker for api.example.com: closed → open`; the metadata carries
        /// `rebound.breaker.key` (when the breaker has one), `rebound.breaker.from` and `rebound.breaker.state`.
        public func log(_ transition: CircuitBreaker.Transition) {
            var metadata: Metadata = [
                "rebound.breaker.from": .string(transition.from.rawValue),
                "rebound.breaker.state": .string(transition.to.rawValue),
            ]
            if let key = transition.key { metadata["rebound.breaker.key"] = .string(key) }
            let name = transition.key.map { "circuit breaker for \($0)" } ?? "circuit breaker"
            log(
                level: transition.level, "\(name): \(transition.from.rawValue) → \(transition.to.rawValue)",
                metadata: metadata, source: "Rebound")
        }
    }

    extension CircuitBreaker.Transition {
        /// The level ``Logging/Logger/log(_:)`` logs this transition at.
        public var level: Logger.Level {
            switch to {
            case .open, .forcedOpen: .warning
            case .halfOpen, .forcedClosed: .notice
            case .closed: .info
            }
        }
    }

    extension AsyncStream where Element == CircuitBreaker.Transition {
        /// Logs every transition of the stream to `logger` until the stream ends or the calling task is cancelled.
        ///
        /// Subscribe before you start the task that logs, so that no transition is missed in between:
        ///
        /// ```swift
        /// let transitions = registry.transitions()
        /// Task { await transitions.log(to: logger) }
        /// ```
        public func log(to logger: Logger) async {
            for await transition in self {
                logger.log(transition)
            }
        }
    }
#endif
