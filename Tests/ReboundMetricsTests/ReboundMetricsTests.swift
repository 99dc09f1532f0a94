#if Metrics
    import Foundation
    import Metrics
    import MetricsTestKit
    import Rebound
    import ReboundMetrics
    import ReboundTesting
    import Testing

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    func request(_ string: String = "https://api.example.com/items", method: String = "GET") -> URLRequest {
        var request = URLRequest(url: URL(string: string)!)
        request.httpMethod = method
        return request
    }

    @Suite("swift-metrics: what the observer counts", .timeLimit(.minutes(5)))
    struct MetricsObserverTests {
        let metrics = TestMetrics()

        func total(_ label: String, _ dimensions: [(String, String)]) throws -> Int64 {
            try metrics.expectCounter(label, dimensions).totalValue
        }

        @Test func attemptsRetriesByReasonRequestsAndDurationsAreCounted() async throws {
            let clock = FastForwardClock()
            let transport = ScriptedTransport(
                [
                    .status(503).delayed(by: .milliseconds(20)), .urlError(.timedOut).delayed(by: .milliseconds(30)),
                    .status(200).delayed(by: .milliseconds(5)),
                ], clock: clock)
            let session = Session(
                transport: transport, retriers: [RetryPolicy(backoff: .constant(.seconds(1)))],
                observers: [MetricsObserver(factory: metrics)], clock: clock)

            _ = try await session.send(request())

            let host = ("host", "api.example.com")
            let method = ("method", "GET")
            #expect(try total("rebound_attempts_total", [host, method, ("outcome", "retry")]) == 2)
            #expect(try total("rebound_attempts_total", [host, method, ("outcome", "succeeded")]) == 1)
            #expect(try total("rebound_retries_total", [host, method, ("reason", "503")]) == 1)
            #expect(try total("rebound_retries_total", [host, method, ("reason", "timedOut")]) == 1)
            #expect(try total("rebound_requests_total", [host, method, ("outcome", "succeeded")]) == 1)
            let durations = try metrics.expectTimer("rebound_attempt_duration_seconds", [host, method]).values
            #expect(durations == [20_000_000, 30_000_000, 5_000_000])
            // Nothing was denied or refused: those counters were never made.
            #expect(metrics.counters(label: "rebound_budget_denials_total").isEmpty)
            #expect(metrics.counters(label: "rebound_breaker_refusals_total").isEmpty)
        }

        @Test func eachRequestRecordsItsRetriesTransparentRetriesAndRetryDelay() async throws {
            let clock = FastForwardClock()
            // A refused connection (never sent), then a 503, then a 200: one transparent retry, one retry, 1.5 s slept.
            let transport = ScriptedTransport(
                [.urlError(.cannotConnectToHost), .status(503), .status(200), .status(200)], clock: clock)
            let session = Session(
                transport: transport, retriers: [RetryPolicy(unsentRetryLimit: 1)],
                observers: [MetricsObserver(factory: metrics)], clock: clock)

            _ = try await session.send(request())
            _ = try await session.send(request())

            // The second request made no retry: as in gRPC's A96, it reports no zero.
            let dimensions = [("host", "api.example.com"), ("method", "GET")]
            #expect(try metrics.expectRecorder("rebound_request_retries", dimensions).values == [1])
            #expect(try metrics.expectRecorder("rebound_request_transparent_retries", dimensions).values == [1])
            #expect(
                try metrics.expectTimer("rebound_request_retry_delay_seconds", dimensions).values == [1_500_000_000])
            #expect(metrics.recorders(label: "rebound_request_hedges").isEmpty)
        }

        @Test func hedgesAreCountedByWhatFollowedThem() async throws {
            let transport = ScriptedTransport(clock: FastForwardClock()) { _, number in
                switch number {
                case 1: .hang
                case 2: .status(503)
                default: .status(200)
                }
            }
            let session = Session(
                transport: transport, retriers: [RetryPolicy()], observers: [MetricsObserver(factory: metrics)],
                hedging: Hedging(delay: .milliseconds(100)), clock: FastForwardClock())

            _ = try await session.send(request())

            let host = ("host", "api.example.com")
            let method = ("method", "GET")
            // The first attempt hangs; its first hedge fails with a 503 and the second answers: the first is cancelled.
            #expect(try metrics.expectRecorder("rebound_request_hedges", [host, method]).values == [2])
            #expect(metrics.recorders(label: "rebound_request_retries").isEmpty)
            #expect(try total("rebound_hedges_total", [host, method, ("outcome", "retry")]) == 1)
            #expect(try total("rebound_hedges_total", [host, method, ("outcome", "succeeded")]) == 1)
            #expect(try total("rebound_attempts_total", [host, method, ("outcome", "cancelled")]) == 1)
            #expect(try total("rebound_attempts_total", [host, method, ("outcome", "retry")]) == 1)
        }

        @Test func aBudgetDenialIsCountedAndTheTokensAreAGauge() async throws {
            let budget = RetryBudget(configuration: .init(initialTokens: 5, maximumTokens: 5, retryCost: 5))
            let session = Session(
                transport: ScriptedTransport { _, _ in .status(503) }, adapters: [budget],
                retriers: [RetryPolicy(retryLimit: 5, backoff: .zero)],
                observers: [MetricsObserver(budget: budget, factory: metrics)], clock: FastForwardClock())

            await #expect(throws: ReboundError.self) { try await session.send(request()) }

            let host = ("host", "api.example.com")
            #expect(try total("rebound_budget_denials_total", [host]) == 1)
            #expect(try total("rebound_requests_total", [host, ("method", "GET"), ("outcome", "failed")]) == 1)
            #expect(try total("rebound_stops_total", [host, ("method", "GET"), ("reason", "retryBudget")]) == 1)
            // One retry spent the five tokens; the second was denied.
            #expect(try metrics.expectGauge("rebound_budget_tokens", [host]).lastValue == 0)
            #expect(budget.tokens(for: "api.example.com") == 0)
        }

        @Test func aBreakerRefusalIsCountedAndTheStateIsAGauge() async throws {
            let breakers = CircuitBreakerRegistry(
                configuration: .init(tripCondition: .consecutiveFailures(1), openDuration: .seconds(30)),
                clock: ManualClock())
            let transport = ScriptedTransport { _, _ in .status(500) }
            let session = Session(
                transport: transport, adapters: [breakers],
                observers: [MetricsObserver(breakers: breakers, factory: metrics)], clock: FastForwardClock())

            await #expect(throws: ReboundError.self) { try await session.send(request()) }
            await #expect(throws: ReboundError.self) { try await session.send(request()) }

            let host = ("host", "api.example.com")
            #expect(transport.requestCount == 1)
            #expect(try total("rebound_breaker_refusals_total", [host]) == 1)
            #expect(try metrics.expectGauge("rebound_breaker_state", [host, ("state", "open")]).lastValue == 1)
            #expect(try metrics.expectGauge("rebound_breaker_state", [host, ("state", "closed")]).lastValue == 0)

            // Reading the gauges changes nothing; updateGauges() reports a reset at once.
            breakers.resetAll()
            MetricsObserver(breakers: breakers, factory: metrics).updateGauges()
            #expect(try metrics.expectGauge("rebound_breaker_state", [host, ("state", "closed")]).lastValue == 1)
            #expect(try metrics.expectGauge("rebound_breaker_state", [host, ("state", "open")]).lastValue == 0)
            #expect(breakers.breakers["api.example.com"]?.state == .closed)
        }

        @Test func eachRefusalAShadowBreakerWouldHaveMadeIsCounted() async throws {
            let breakers = CircuitBreakerRegistry(
                configuration: .init(tripCondition: .consecutiveFailures(1), openDuration: .seconds(30)),
                clock: ManualClock(), enforcement: .shadow)
            let transport = ScriptedTransport { _, _ in .status(500) }
            let session = Session(
                transport: transport, adapters: [breakers],
                observers: [MetricsObserver(breakers: breakers, factory: metrics)], clock: FastForwardClock())

            for _ in 0..<3 { await #expect(throws: ReboundError.self) { try await session.send(request()) } }

            let host = ("host", "api.example.com")
            // Every request reached the host; the two after the opening would have been refused.
            #expect(transport.requestCount == 3)
            #expect(
                try total(
                    "rebound_shadow_refusals_total",
                    [host, ("part", "CircuitBreaker"), ("reason", "circuitOpen"), ("stage", "attempt")]) == 2)
            #expect(throws: (any Error).self) { try total("rebound_breaker_refusals_total", [host]) }
        }

        @Test func anEndpointGroupsAttemptsAndEjectionsAreCountedByGroupAndEndpoint() async throws {
            let clock = ManualClock()
            let observer = MetricsObserver(factory: metrics)
            let group = EndpointGroup(
                name: "payments",
                endpoints: [
                    .init(URL(string: "https://eu.api.example.com/v2")!),
                    .init(URL(string: "https://us.api.example.com/v2")!),
                ],
                outlierDetection: .init(consecutiveFailures: 1), clock: clock, onEjection: { observer.record($0) })
            let transport = ScriptedTransport(clock: clock) { request, _ in
                request.url?.host == "eu.api.example.com" ? .status(503) : .status(200)
            }
            let session = Session(
                transport: transport, adapters: [group], retriers: [RetryPolicy(backoff: .zero)],
                observers: [observer], clock: clock)
            for id in 1...2 {
                _ = try await session.send(URL(string: "https://eu.api.example.com/v2/users/\(id)?token=t0ken")!)
            }

            let payments = ("group", "payments")
            let eu = ("endpoint", "https://eu.api.example.com/v2")
            let us = ("endpoint", "https://us.api.example.com/v2")
            // The first request tried eu, which was ejected; the second went to us at once.
            #expect(try total("rebound_endpoint_attempts_total", [payments, eu, ("outcome", "retry")]) == 1)
            #expect(try total("rebound_endpoint_attempts_total", [payments, us, ("outcome", "succeeded")]) == 2)
            #expect(
                try total("rebound_endpoint_ejections_total", [payments, eu, ("rule", "consecutiveFailures")]) == 1)
            let values = metrics.counters.filter { $0.label.hasPrefix("rebound_endpoint_") }.flatMap(\.dimensions)
                .map(\.1)
            #expect(!values.contains { $0.contains("users") || $0.contains("t0ken") })
        }

        @Test func dimensionsAreBoundedNeverAPathAQueryOrAnIdentifier() async throws {
            let session = Session(
                transport: ScriptedTransport([.status(503), .status(201)]), retriers: [RetryPolicy(backoff: .zero)],
                observers: [MetricsObserver(factory: metrics)], clock: FastForwardClock())
            var sent = request("https://api.example.com:8443/users/12345/orders?token=t0ken", method: "PUT")
            sent.setValue(UUID().uuidString, forHTTPHeaderField: "Idempotency-Key")

            _ = try await session.send(sent)

            let dimensions =
                metrics.counters.flatMap(\.dimensions) + metrics.timers.flatMap(\.dimensions)
            #expect(!dimensions.isEmpty)
            #expect(Set(dimensions.map(\.0)).isSubset(of: ["host", "method", "outcome", "reason"]))
            for (name, value) in dimensions {
                #expect(
                    !value.contains("12345") && !value.contains("t0ken") && !value.contains("/"), "\(name)=\(value)")
            }
            #expect(Set(dimensions.filter { $0.0 == "host" }.map(\.1)) == ["api.example.com:8443"])
            #expect(Set(dimensions.filter { $0.0 == "method" }.map(\.1)) == ["PUT"])
        }
    }
#endif
