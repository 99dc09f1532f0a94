#if Metrics
    import CoreMetrics
    import Foundation
    import Rebound

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    /// Counts what Rebound does through swift-metrics: attempts, hedges, retries by reason, requests, stops by rule,
    /// budget denials and breaker refusals (and those parts in shadow mode would have made), each attempt's duration,
    /// and the state of the breakers and budgets it is given.
    ///
    /// Give it to a session as an observer; it changes nothing about a request. Every metric's dimensions are bounded:
    /// `host` (the breaker's and the budget's key, `host:port` for a URL with a port), `method`, a closed set of names
    /// (`outcome`, `reason`, `state`, `rule`), and for an ``EndpointGroup`` its `group` name (name groups from a fixed
    /// set) and its `endpoint`s' base URLs, a set the group was given; never a request's path, a query or an identifier.
    ///
    /// | metric | kind | dimensions | what |
    /// |---|---|---|---|
    /// | `rebound_attempts_total` | counter | host, method, outcome | every attempt, by what followed it: `succeeded`, `retry`, `failed`, `cancelled` |
    /// | `rebound_hedges_total` | counter | host, method, outcome | every hedge (an attempt started beside another, see ``Hedging``), by what followed it: a `cancelled` hedge lost to another attempt |
    /// | `rebound_retries_total` | counter | host, method, reason | every retry, by the failure that caused it (`ReboundError.Reason.errorType`: `503`, `timedOut`, …) |
    /// | `rebound_requests_total` | counter | host, method, outcome | every request, by how it ended: `succeeded`, `failed`, `cancelled` |
    /// | `rebound_stops_total` | counter | host, method, reason | every failed request, by the rule that ended it (`StopReason.name`: `notRetried`, `retryLimit`, `repeatedFailure`, `deadline`, …) |
    /// | `rebound_budget_denials_total` | counter | host | requests that ended because a ``RetryBudget`` denied their retry |
    /// | `rebound_breaker_refusals_total` | counter | host | requests that ended because a circuit breaker refused an attempt or a retry |
    /// | `rebound_shadow_refusals_total` | counter | host, part, reason, stage | every refusal a part in shadow mode (``Enforcement/shadow``) would have made: `part` its type (`CircuitBreaker`, …), `reason` its rule (`StopReason.name`), `stage` what it would have refused (`attempt`, `retry`, `hedge`) |
    /// | `rebound_attempt_duration_seconds` | timer | host, method | each attempt's duration (nanoseconds, as swift-metrics timers record) |
    /// | `rebound_request_retries` | recorder (histogram) | host, method | per request that retried, its retries, hedges and retries after a failure before sending left out (gRPC's `grpc.client.call.retries`) |
    /// | `rebound_request_transparent_retries` | recorder (histogram) | host, method | per request that made any, its retries after an attempt that failed before it was sent (``RetryPolicy/unsentRetryLimit``; gRPC's `grpc.client.call.transparent_retries`) |
    /// | `rebound_request_hedges` | recorder (histogram) | host, method | per request that hedged, its hedges (gRPC's `grpc.client.call.hedges`) |
    /// | `rebound_request_retry_delay_seconds` | timer | host, method | per request that retried, the backoffs slept before its retries, added up (gRPC's `grpc.client.call.retry_delay`) |
    /// | `rebound_endpoint_attempts_total` | counter | group, endpoint, outcome | every attempt an ``EndpointGroup`` sent, by its group's name, the endpoint's base URL and what followed it |
    /// | `rebound_endpoint_ejections_total` | counter | group, endpoint, rule | every endpoint taken out of rotation, as ``record(_:)`` hears it from the group's `onEjection:` (`rule`: `consecutiveFailures`, `failureRate`, `trialFailed`) |
    /// | `rebound_breaker_state` | gauge | host, state | 1 for the state the host's breaker is in, 0 for the other four |
    /// | `rebound_budget_tokens` | gauge | host | the tokens left in the host's budget |
    ///
    /// The gauges read ``CircuitBreaker/state`` and ``RetryBudget/tokens(for:)-(String)``, which change nothing: after
    /// every attempt for the attempt's host, and for every breaker of the registry when you call ``updateGauges()``
    /// (before a scrape, say). The label prefix is `rebound` by default.
    ///
    /// Thread-safe: one observer may serve many sessions at once.
    ///
    /// ```swift
    /// let breakers = CircuitBreakerRegistry()
    /// let budget = RetryBudget(ratio: .default)
    /// let session = Session(
    ///     adapters: [breakers, budget], retriers: [RetryPolicy()],
    ///     observers: [MetricsObserver(breakers: breakers, budget: budget)])
    /// ```
    public final class MetricsObserver: AttemptObserver {
        /// The registry whose breakers' states are reported; `nil` for none.
        public let breakers: CircuitBreakerRegistry?
        /// The budget whose tokens are reported per host; `nil` for none.
        public let budget: RetryBudget?
        /// The first word of every metric's label; `rebound` by default.
        public let prefix: String

        private let factory: any MetricsFactory
        private let metrics = MetricCache()

        /// Creates an observer that reports to `factory`.
        ///
        /// - Parameters:
        ///   - breakers: The registry whose breakers' states are reported as gauges; none by default.
        ///   - budget: The budget whose tokens are reported as gauges; none by default.
        ///   - prefix: The first word of every label; `rebound` by default.
        /// - factory: Where the metrics go; `MetricsSystem.factory` (the one bootstrapped for the process) by default.
        public init(
            breakers: CircuitBreakerRegistry? = nil, budget: RetryBudget? = nil, prefix: String = "rebound",
            factory: any MetricsFactory = MetricsSystem.factory
        ) {
            self.breakers = breakers
            self.budget = budget
            self.prefix = prefix
            self.factory = factory
        }

        /// Counts the attempt (and the hedge, for one), records its duration, counts a retry by its reason, and updates
        /// the host's gauges.
        public func attemptDidFinish(_ outcome: AttemptOutcome) async {
            let host = Self.host(of: outcome.request)
            let method = outcome.request.httpMethod ?? "GET"
            counter("attempts_total", [("host", host), ("method", method), ("outcome", outcome.decision.name)])
                .increment()
            if outcome.attempt.hedge > 0 {
                counter("hedges_total", [("host", host), ("method", method), ("outcome", outcome.decision.name)])
                    .increment()
            }
            timer("attempt_duration_seconds", [("host", host), ("method", method)])
                .recordNanoseconds(Self.nanoseconds(outcome.attempt.duration))
            if case .retry = outcome.decision {
                let reason = outcome.failure?.errorType ?? "unknown"
                counter("retries_total", [("host", host), ("method", method), ("reason", reason)]).increment()
            }
            if let group = outcome.endpointGroup, let endpoint = outcome.endpoint {
                counter(
                    "endpoint_attempts_total",
                    [("group", group), ("endpoint", endpoint.description), ("outcome", outcome.decision.name)]
                )
                .increment()
            }
            updateGauges(host: host, request: outcome.request)
        }

        /// Counts an endpoint taken out of rotation: give it to the group's `onEjection:`, which may call it from any
        /// task.
        ///
        /// ```swift
        /// let metrics = MetricsObserver()
        /// let group = EndpointGroup(
        ///     name: "payments",
        ///     endpoints: [
        ///         .init(URL(string: "https://eu.payments.example.com/v2")!),
        ///         .init(URL(string: "https://us.payments.example.com/v2")!),
        ///     ],
        ///     onEjection: { metrics.record($0) })
        /// let session = Session(adapters: [group], retriers: [RetryPolicy()], observers: [metrics])
        /// ```
        public func record(_ ejection: EndpointGroup.Ejection) {
            counter(
                "endpoint_ejections_total",
                [
                    ("group", ejection.group), ("endpoint", ejection.endpoint.description),
                    ("rule", ejection.rule.rawValue),
                ]
            )
            .increment()
        }

        /// Counts the request by how it ended, a budget denial or a breaker refusal when one ended it, and each refusal a
        /// part in shadow mode would have made of it; records its retries, its retries after failures before sending
        /// and the time it slept between attempts.
        public func requestDidFinish(_ outcome: RequestOutcome) async {
            let request = outcome.attempts.last?.request ?? outcome.originalRequest
            let host = Self.host(of: request)
            let method = outcome.originalRequest.httpMethod ?? "GET"
            counter("requests_total", [("host", host), ("method", method), ("outcome", outcome.decision.name)])
                .increment()
            for refusal in outcome.shadowRefusals {
                let stage = refusal.stage.rawValue
                counter(
                    "shadow_refusals_total",
                    [("host", host), ("part", refusal.part), ("reason", refusal.reason.name), ("stage", stage)]
                )
                .increment()
            }
            // As gRPC's A96 reports them: a request without retries (or hedges) reports no zero.
            let figures = Self.retryFigures(of: outcome.attempts)
            let dimensions = [("host", host), ("method", method)]
            if figures.retries > 0 { recorder("request_retries", dimensions).record(figures.retries) }
            if figures.transparent > 0 {
                recorder("request_transparent_retries", dimensions).record(figures.transparent)
            }
            if figures.hedges > 0 { recorder("request_hedges", dimensions).record(figures.hedges) }
            if figures.retries + figures.transparent > 0 {
                timer("request_retry_delay_seconds", dimensions).recordNanoseconds(Self.nanoseconds(figures.delay))
            }
            if let error = outcome.error {
                if let stop = error.stopReason {
                    counter("stops_total", [("host", host), ("method", method), ("reason", stop.name)]).increment()
                }
                if error.retrierError is RetryBudgetExhausted {
                    counter("budget_denials_total", [("host", host)]).increment()
                }
                if error.circuitBreakerOpenError != nil {
                    counter("breaker_refusals_total", [("host", host)]).increment()
                }
            }
            updateGauges(host: host, request: request)
        }

        /// Sets the breaker-state gauges of every breaker in ``breakers``, and the budget gauge of each of their hosts.
        public func updateGauges() {
            guard let breakers else { return }
            for host in breakers.breakers.keys { updateGauges(host: host, request: nil) }
        }

        /// Sets the host's gauges; its budget is found by `request` (the budget's own key function) when there is one.
        private func updateGauges(host: String, request: URLRequest?) {
            if let breaker = breakers?.breakers[host] {
                let current = breaker.state
                for state in Self.states {
                    gauge("breaker_state", [("host", host), ("state", state.rawValue)]).record(current == state ? 1 : 0)
                }
            }
            if let budget, let tokens = request.map({ budget.tokens(for: $0) }) ?? budget.tokens(for: host) {
                gauge("budget_tokens", [("host", host)]).record(tokens)
            }
        }

        private static let states: [CircuitBreaker.State] = [.closed, .open, .halfOpen, .forcedOpen, .forcedClosed]

        /// A request's retries, as gRPC's A96 counts them: the attempts after its first that are not hedges, told apart
        /// by whether the attempt started before failed before it was sent (a transparent retry); its hedges; and the
        /// backoffs slept before its retries, added up. The records are in the order attempts ended (a hedged round's
        /// losers before its last), so they are read by number; only the last record can hold a wait that ended the
        /// request instead of a retry (a breaker that opened meanwhile), and that wait is not counted.
        static func retryFigures(of attempts: [Attempt]) -> (
            retries: Int, transparent: Int, hedges: Int, delay: Duration
        ) {
            var (retries, transparent, hedges) = (0, 0, 0)
            let byNumber = attempts.sorted { $0.number < $1.number }
            for (before, attempt) in zip(byNumber, byNumber.dropFirst()) {
                if attempt.hedge > 0 {
                    hedges += 1
                } else if before.failedBeforeSending {
                    transparent += 1
                } else {
                    retries += 1
                }
            }
            let delay = attempts.dropLast().reduce(Duration.zero) { $0 + ($1.retryDelay ?? .zero) }
            return (retries, transparent, hedges, delay)
        }

        private static func host(of request: URLRequest) -> String {
            CircuitBreakerRegistry.hostKey(for: request) ?? "none"
        }

        private static func nanoseconds(_ duration: Duration) -> Int64 {
            let (seconds, attoseconds) = duration.components
            return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        }

        private func counter(_ name: String, _ dimensions: [(String, String)]) -> Counter {
            let label = "\(prefix)_\(name)"
            return metrics.metric(label, dimensions) { Counter(label: label, dimensions: dimensions, factory: factory) }
        }

        private func timer(_ name: String, _ dimensions: [(String, String)]) -> CoreMetrics.Timer {
            let label = "\(prefix)_\(name)"
            return metrics.metric(label, dimensions) {
                CoreMetrics.Timer(label: label, dimensions: dimensions, factory: factory)
            }
        }

        private func recorder(_ name: String, _ dimensions: [(String, String)]) -> Recorder {
            let label = "\(prefix)_\(name)"
            return metrics.metric(label, dimensions) {
                Recorder(label: label, dimensions: dimensions, aggregate: true, factory: factory)
            }
        }

        private func gauge(_ name: String, _ dimensions: [(String, String)]) -> Gauge {
            let label = "\(prefix)_\(name)"
            return metrics.metric(label, dimensions) { Gauge(label: label, dimensions: dimensions, factory: factory) }
        }
    }

    /// The metrics made so far, by label and dimensions: each is made once (making one asks the factory, which may lock
    /// and allocate) and reused for every event after.
    ///
    /// `@unchecked Sendable`: its dictionary is read and written only while `lock` is held, and the metrics it hands
    /// out are swift-metrics' own `Sendable` types.
    private final class MetricCache: @unchecked Sendable {
        private struct Key: Hashable {
            let kind: ObjectIdentifier
            let label: String
            let dimensions: [String]
        }

        private let lock = NSLock()
        private var made: [Key: any Sendable] = [:]

        /// The metric of type `M` with `label` and `dimensions`, made by `make` the first time it is asked for.
        func metric<M: Sendable>(_ label: String, _ dimensions: [(String, String)], make: () -> M) -> M {
            let key = Key(
                kind: ObjectIdentifier(M.self), label: label, dimensions: dimensions.flatMap { [$0.0, $0.1] })
            return lock.withLock {
                if let metric = made[key] as? M { return metric }
                let metric = make()
                made[key] = metric
                return metric
            }
        }
    }
#endif
