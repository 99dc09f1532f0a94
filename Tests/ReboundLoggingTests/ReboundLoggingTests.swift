#if Logging
    import Foundation
    import InMemoryLogging
    import Logging
    import Rebound
    import ReboundLogging
    import ReboundTesting
    import Testing

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    /// A logger whose entries a test reads back.
    struct CapturedLog {
        let handler = InMemoryLogHandler()
        let logger: Logger

        init(level: Logger.Level = .info) {
            let handler = self.handler
            var logger = Logger(label: "rebound.tests", factory: { _ in handler })
            logger.logLevel = level
            self.logger = logger
        }

        var entries: [InMemoryLogHandler.Entry] { handler.entries }

        /// Every string an entry carries: its message and its metadata values, flattened.
        var allText: [String] {
            entries.flatMap { entry in [entry.message.description] + entry.metadata.values.flatMap(Self.strings) }
        }

        private static func strings(_ value: Logger.Metadata.Value) -> [String] {
            switch value {
            case .string(let string): [string]
            case .stringConvertible(let value): [value.description]
            case .array(let values): values.flatMap(strings)
            case .dictionary(let values): values.values.flatMap(strings)
            }
        }
    }

    func request(_ string: String = "https://api.example.com/items") -> URLRequest {
        URLRequest(url: URL(string: string)!)
    }

    @Suite("swift-log: the logging retrier's events as log entries", .timeLimit(.minutes(5)))
    struct LoggerSinkTests {
        @Test func eachRetryAndTheSuccessAfterThemAreLoggedWithStructuredMetadata() async throws {
            let log = CapturedLog()
            let transport = ScriptedTransport([.status(503), .status(503), .status(200)])
            let session = Session(
                transport: transport,
                retriers: [.logging(RetryPolicy(backoff: .constant(.milliseconds(250))), logger: log.logger)],
                clock: FastForwardClock())

            _ = try await session.send(request(), label: "items")

            let entries = log.entries
            #expect(entries.map(\.level) == [.notice, .notice, .info])
            let first = try #require(entries.first)
            #expect(first.metadata["rebound.attempt"] == .stringConvertible(1))
            #expect(first.metadata["rebound.decision"] == .string("retry"))
            #expect(first.metadata["rebound.retry_delay"]?.description == "0.25")
            #expect(first.metadata["http.response.status_code"]?.description == "503")
            #expect(first.metadata["http.request.method"] == .string("GET"))
            #expect(first.metadata["url.full"] == .string("https://api.example.com/items"))
            #expect(first.metadata["rebound.label"] == .string("items"))
            #expect(first.metadata["rebound.failure"] == .string("status 503"))
            #expect(first.message.description.contains("attempt 1 failed with status 503; retry in 250 ms"))
            // One request: one identifier on every entry, the full UUID.
            let ids = Set(entries.compactMap { $0.metadata["rebound.request_id"]?.description })
            #expect(ids.count == 1)
            #expect(ids.first?.count == 36)
            let last = try #require(entries.last)
            #expect(last.metadata["rebound.decision"] == .string("succeeded"))
            #expect(last.metadata["rebound.attempt"] == .stringConvertible(3))
            #expect(last.metadata["rebound.retry_delay"] == nil)
        }

        @Test func anAttemptAGroupSentIsNamedWithItsGroupAndEndpoint() async throws {
            let log = CapturedLog()
            let clock = ManualClock()
            let (eu, us) = (
                URL(string: "https://eu.api.example.com/v2")!, URL(string: "https://us.api.example.com/v2")!
            )
            let group = EndpointGroup(name: "payments", endpoints: [.init(eu), .init(us)], clock: clock)
            let transport = ScriptedTransport(clock: clock) { request, _ in
                request.url?.host == "eu.api.example.com" ? .status(503) : .status(200)
            }
            let session = Session(
                transport: transport, adapters: [group],
                retriers: [.logging(RetryPolicy(backoff: .zero), logger: log.logger)], clock: clock)

            _ = try await session.send(URL(string: "https://eu.api.example.com/v2/charges")!)

            let entries = log.entries
            #expect(entries.map { $0.metadata["rebound.endpoint_group"]?.description } == ["payments", "payments"])
            #expect(
                entries.map { $0.metadata["rebound.endpoint"]?.description } == [
                    "https://eu.api.example.com/v2", "https://us.api.example.com/v2",
                ])
        }

        @Test func aHedgeIsNamedInItsEntry() async throws {
            let log = CapturedLog()
            let transport = ScriptedTransport(clock: FastForwardClock()) { _, number in
                switch number {
                case 1: .hang
                case 2: .status(503)
                default: .status(200)
                }
            }
            let session = Session(
                transport: transport, retriers: [.logging(RetryPolicy(), logger: log.logger)],
                hedging: Hedging(delay: .milliseconds(100)), clock: FastForwardClock())

            _ = try await session.send(request())

            let entries = log.entries
            #expect(entries.map { $0.metadata["rebound.hedge"]?.description } == ["1", "2"])
            #expect(entries.first?.message.description.contains("attempt 2 (hedge 1) failed with status 503") == true)
        }

        @Test func theLoggersLevelIsTheRetriersMinimumLevel() async throws {
            let log = CapturedLog(level: .error)
            let retrier = LoggingRetrier(wrapping: RetryPolicy(retryLimit: 1, backoff: .zero), logger: log.logger)
            #expect(retrier.minimumLevel == .error)
            let session = Session(
                transport: ScriptedTransport([.status(503), .status(503)]), retriers: [retrier],
                clock: FastForwardClock())

            await #expect(throws: ReboundError.self) { try await session.send(request()) }

            // The retry (notice) is below the logger's level; the failure that ends the request is logged.
            #expect(log.entries.map(\.level) == [.error])
            #expect(log.entries.first?.metadata["rebound.decision"] == .string("failed"))
        }

        @Test func noSecretReachesTheLogger() async throws {
            let log = CapturedLog(level: .trace)
            var sent = request("https://user:pa55word@api.example.com/items?token=t0ken&page=2")
            sent.setValue("Bearer s3cr3t-bearer", forHTTPHeaderField: "Authorization")
            sent.setValue("session=c00kie", forHTTPHeaderField: "Cookie")
            sent.setValue("k3y-value", forHTTPHeaderField: "X-API-Key")
            sent.setValue("fine", forHTTPHeaderField: "Accept-Language")
            let session = Session(
                transport: ScriptedTransport([.status(503), .status(200)]),
                interceptor: LoggingRetrier(
                    wrapping: RetryPolicy(backoff: .zero), logger: log.logger, includesHeaders: true),
                clock: FastForwardClock())

            _ = try await session.send(sent)

            #expect(log.entries.count == 2)
            for secret in ["pa55word", "t0ken", "s3cr3t-bearer", "c00kie", "k3y-value"] {
                #expect(!log.allText.contains { $0.contains(secret) }, "\(secret) reached the logger")
            }
            let first = try #require(log.entries.first)
            // The headers are there, redacted; what is no secret is kept.
            #expect(first.metadata["http.request.header.authorization"] == .string("<redacted>"))
            #expect(first.metadata["http.request.header.accept-language"] == .string("fine"))
            #expect(first.metadata["url.full"]?.description.contains("page=<redacted>") == true)
        }

        @Test func aRequestEndedByAnOpenBreakerNamesTheBreakersState() async throws {
            let log = CapturedLog()
            let breaker = CircuitBreaker(
                configuration: .init(tripCondition: .consecutiveFailures(1), openDuration: .seconds(30)),
                clock: ManualClock())
            let transport = ScriptedTransport { _, _ in .status(500) }
            let session = Session(
                transport: transport, interceptor: .logging(Interceptor(adapters: [breaker]), logger: log.logger),
                clock: FastForwardClock())

            await #expect(throws: ReboundError.self) { try await session.send(request()) }
            await #expect(throws: ReboundError.self) { try await session.send(request()) }

            #expect(transport.requestCount == 1)
            #expect(log.entries.map(\.level) == [.error, .error])
            #expect(log.entries.first?.metadata["rebound.breaker.state"] == nil)
            #expect(log.entries.last?.metadata["rebound.breaker.state"] == .string("open"))
        }

        @Test func aRefusalAShadowBreakerWouldHaveMadeIsLoggedWithTheAttempt() async throws {
            let log = CapturedLog()
            let breaker = CircuitBreaker(
                key: "api.example.com",
                configuration: .init(tripCondition: .consecutiveFailures(1), openDuration: .seconds(30)),
                clock: ManualClock(), enforcement: .shadow)
            let transport = ScriptedTransport { _, number in .status(number == 1 ? 500 : 200) }
            let session = Session(
                transport: transport, interceptor: .logging(Interceptor(adapters: [breaker]), logger: log.logger),
                clock: FastForwardClock())

            await #expect(throws: ReboundError.self) { try await session.send(request()) }
            // The breaker is open: enforced, it would refuse this request; in shadow, it goes through and succeeds.
            _ = try await session.send(request())

            #expect(transport.requestCount == 2)
            // A first attempt's success is logged at debug; one a shadow part would have refused at notice at least.
            let entry = try #require(log.entries.last)
            #expect(entry.level == .notice)
            #expect(
                entry.message.description.hasSuffix(
                    "; in shadow mode, CircuitBreaker for api.example.com would refuse attempt 1 (circuitOpen)"))
            #expect(
                entry.metadata["rebound.shadow_refusals"]
                    == .array([.string("CircuitBreaker for api.example.com would refuse attempt 1 (circuitOpen)")]))
        }

        @Test func theRedirectsAnAttemptFollowedAreInItsEntry() async throws {
            let log = CapturedLog()
            let transport = ScriptedTransport([
                .response(status: 302, headers: ["Location": "https://b.example.com/moved?sig=x-sig"]), .status(503),
                .status(200),
            ])
            let session = Session(
                transport: transport,
                interceptor: .logging(Interceptor(retriers: [RetryPolicy(backoff: .zero)]), logger: log.logger),
                clock: FastForwardClock())

            _ = try await session.send(request("https://a.example.com/start"))

            let redirects = try #require(log.entries.first?.metadata["rebound.redirects"])
            guard case .array(let hops) = redirects else {
                Issue.record("rebound.redirects is \(redirects), not an array")
                return
            }
            #expect(hops.count == 1)
            #expect(hops.first?.description.contains("https://b.example.com/moved?sig=<redacted>") == true)
            #expect(!log.allText.contains { $0.contains("x-sig") })
        }
    }

    @Suite("swift-log: circuit breaker transitions", .timeLimit(.minutes(5)))
    struct TransitionLoggingTests {
        @Test func eachTransitionIsLoggedAtItsLevelWithTheBreakersKey() async throws {
            let log = CapturedLog(level: .trace)
            let transitions: AsyncStream<CircuitBreaker.Transition>
            do {
                let registry = CircuitBreakerRegistry(
                    configuration: .init(tripCondition: .consecutiveFailures(1), openDuration: .seconds(30)),
                    clock: ManualClock())
                let breaker = registry.breaker(for: "api.example.com")
                transitions = registry.transitions()
                breaker.forceOpen()
                breaker.reset()
                breaker.forceClosed()
            }
            // The registry is released: the stream ends after the transitions it holds.
            await transitions.log(to: log.logger)

            #expect(
                log.entries.map(\.message.description) == [
                    "circuit breaker for api.example.com: closed → forced open",
                    "circuit breaker for api.example.com: forced open → closed",
                    "circuit breaker for api.example.com: closed → forced closed",
                ])
            #expect(log.entries.map(\.level) == [.warning, .info, .notice])
            #expect(log.entries.first?.metadata["rebound.breaker.key"] == .string("api.example.com"))
            #expect(log.entries.first?.metadata["rebound.breaker.from"] == .string("closed"))
            #expect(log.entries.first?.metadata["rebound.breaker.state"] == .string("forced open"))
        }

        @Test func aTrippedBreakerLogsItsOpeningAsAWarning() async throws {
            let log = CapturedLog()
            let transitions: AsyncStream<CircuitBreaker.Transition>
            do {
                let breaker = CircuitBreaker(
                    configuration: .init(tripCondition: .consecutiveFailures(2), openDuration: .seconds(30)),
                    clock: ManualClock())
                transitions = breaker.transitions()
                let session = Session(
                    transport: ScriptedTransport { _, _ in .status(500) }, adapters: [breaker],
                    clock: FastForwardClock())
                for _ in 0..<2 { await #expect(throws: ReboundError.self) { try await session.send(request()) } }
                #expect(breaker.state == .open)
            }
            await transitions.log(to: log.logger)

            #expect(log.entries.map(\.level) == [.warning])
            #expect(log.entries.first?.message.description == "circuit breaker: closed → open")
        }

        @Test func loggingStopsWhenItsTaskIsCancelled() async throws {
            let log = CapturedLog()
            let breaker = CircuitBreaker(configuration: .init(), clock: ManualClock())
            // The breaker lives on: only cancellation ends the logging.
            let logging = Task { await breaker.transitions().log(to: log.logger) }
            logging.cancel()
            await logging.value
            #expect(log.entries.isEmpty)
            withExtendedLifetime(breaker) {}
        }
    }

    @Suite("swift-log: endpoint ejections", .timeLimit(.minutes(5)))
    struct EjectionLoggingTests {
        @Test func anEjectedEndpointIsLoggedAsAWarningNamingTheGroupAndTheEndpoint() async throws {
            let log = CapturedLog()
            let logger = log.logger
            let clock = ManualClock()
            let group = EndpointGroup(
                name: "payments",
                endpoints: [
                    .init(URL(string: "https://eu.api.example.com/v2")!),
                    .init(URL(string: "https://us.api.example.com/v2")!),
                ],
                outlierDetection: .init(consecutiveFailures: 1), clock: clock, onEjection: { logger.log($0) })
            let transport = ScriptedTransport(clock: clock) { request, _ in
                request.url?.host == "eu.api.example.com" ? .status(503) : .status(200)
            }
            let session = Session(
                transport: transport, adapters: [group], retriers: [RetryPolicy(backoff: .zero)], clock: clock)
            _ = try await session.send(URL(string: "https://eu.api.example.com/v2/charges?customer=7")!)

            #expect(log.entries.map(\.level) == [.warning])
            #expect(
                log.entries.first?.message.description
                    == "endpoint https://eu.api.example.com/v2 of payments ejected for 30 s (consecutiveFailures, ejection 1)"
            )
            let metadata = try #require(log.entries.first?.metadata)
            #expect(metadata["rebound.ejection.group"] == .string("payments"))
            #expect(metadata["rebound.ejection.endpoint"] == .string("https://eu.api.example.com/v2"))
            #expect(metadata["rebound.ejection.rule"] == .string("consecutiveFailures"))
            #expect(metadata["rebound.ejection.seconds"]?.description == "30.0")
            #expect(metadata["rebound.ejection.count"]?.description == "1")
            // The request's query never reaches the log.
            #expect(!log.allText.contains { $0.contains("customer") })
        }
    }
#endif
