#if Tracing
    import Foundation
    import InMemoryTracing
    import Rebound
    import ReboundTesting
    import ReboundTracing
    import Testing
    import Tracing

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    func request(_ string: String = "https://api.example.com/items?token=t0ken", method: String = "GET") -> URLRequest {
        var request = URLRequest(url: URL(string: string)!)
        request.httpMethod = method
        return request
    }

    extension FinishedInMemorySpan {
        func attribute(_ name: String) -> SpanAttribute? { attributes.get(name) }
    }

    @Suite("swift-distributed-tracing: spans, events and propagation", .timeLimit(.minutes(5)))
    struct TracingInterceptorTests {
        let tracer = InMemoryTracer()

        @Test func oneSpanPerRequestAndOneChildSpanPerAttemptWithHTTPClientAttributes() async throws {
            let transport = ScriptedTransport([.status(503), .urlError(.timedOut), .status(200)])
            let session = Session(
                transport: transport, adapters: [TracingInterceptor(tracer: tracer)],
                retriers: [RetryPolicy(backoff: .constant(.milliseconds(250)))], clock: FastForwardClock())

            _ = try await session.send(request(), label: "items")

            let spans = tracer.finishedSpans
            #expect(spans.count == 4)
            let requestSpan = try #require(spans.first { $0.kind == .internal })
            let attempts = spans.filter { $0.kind == .client }
            #expect(requestSpan.operationName == "items")
            #expect(attempts.map(\.operationName) == ["GET", "GET", "GET"])
            // Every attempt is a child of the request's span, in one trace.
            #expect(attempts.allSatisfy { $0.parentSpanID == requestSpan.spanID && $0.traceID == requestSpan.traceID })

            let first = attempts[0]
            #expect(first.attribute("http.request.method") == .string("GET"))
            #expect(first.attribute("server.address") == .string("api.example.com"))
            #expect(first.attribute("server.port") == .int64(443))
            #expect(first.attribute("url.full") == .string("https://api.example.com/items?token=<redacted>"))
            #expect(first.attribute("http.response.status_code") == .int64(503))
            #expect(first.attribute("error.type") == .string("503"))
            #expect(first.status?.code == .error)
            #expect(first.attribute("http.request.resend_count") == nil)
            #expect(attempts[1].attribute("http.request.resend_count") == .int64(1))
            #expect(attempts[1].attribute("error.type") == .string("timedOut"))
            #expect(attempts[2].attribute("http.request.resend_count") == .int64(2))
            #expect(attempts[2].attribute("http.response.status_code") == .int64(200))
            #expect(attempts[2].status == nil)

            // The backoffs are events of the request's span; it succeeded.
            #expect(requestSpan.events.map(\.name) == ["rebound.retry", "rebound.retry"])
            #expect(requestSpan.events.first?.attributes.get("rebound.retry.delay_ms") == .int64(250))
            #expect(requestSpan.events.first?.attributes.get("rebound.retry.next_attempt") == .int64(2))
            #expect(requestSpan.attribute("rebound.attempts") == .int64(3))
            #expect(requestSpan.status == nil)
            #expect(tracer.activeSpans.isEmpty)
        }

        @Test func eachAttemptCarriesItsOwnSpanContextToTheServer() async throws {
            let transport = ScriptedTransport([.status(503), .status(200)])
            let session = Session(
                transport: transport, adapters: [TracingInterceptor(tracer: tracer)],
                retriers: [RetryPolicy(backoff: .zero)], clock: FastForwardClock())

            _ = try await session.send(request())

            let attempts = tracer.finishedSpans.filter { $0.kind == .client }
            let sent = transport.requests.map { $0.value(forHTTPHeaderField: InMemoryTracer.spanIDKey) }
            #expect(sent == attempts.map(\.spanID))
            #expect(Set(transport.requests.map { $0.value(forHTTPHeaderField: InMemoryTracer.traceIDKey) }).count == 1)
        }

        @Test func theRequestSpanIsAChildOfTheCallersContext() async throws {
            let session = Session(
                transport: ScriptedTransport([.status(200)]), adapters: [TracingInterceptor(tracer: tracer)],
                clock: FastForwardClock())

            let parent = tracer.startSpan("caller")
            try await InstrumentationContext.withValue(parent.context) {
                _ = try await session.send(request())
            }
            parent.end()

            let requestSpan = try #require(tracer.finishedSpans.first { $0.kind == .internal })
            let caller = try #require(tracer.finishedSpans.first { $0.operationName == "caller" })
            #expect(requestSpan.parentSpanID == caller.spanID)
            #expect(requestSpan.traceID == caller.traceID)
        }

        @Test func aBreakerRefusalAndABudgetDenialAreEventsOfTheFailedRequest() async throws {
            let breaker = CircuitBreaker(
                configuration: .init(tripCondition: .consecutiveFailures(1), openDuration: .seconds(30)),
                clock: ManualClock())
            let budget = RetryBudget(configuration: .init(initialTokens: 0, maximumTokens: 5, retryCost: 5))
            let transport = ScriptedTransport { _, _ in .status(503) }
            let session = Session(
                transport: transport, adapters: [TracingInterceptor(tracer: tracer), budget],
                retriers: [RetryPolicy(backoff: .zero)], clock: FastForwardClock())
            let guarded = Session(
                transport: transport, adapters: [TracingInterceptor(tracer: tracer), breaker], clock: FastForwardClock()
            )

            await #expect(throws: ReboundError.self) { try await session.send(request()) }
            await #expect(throws: ReboundError.self) { try await guarded.send(request()) }
            await #expect(throws: ReboundError.self) { try await guarded.send(request()) }

            let requests = tracer.finishedSpans.filter { $0.kind == .internal }
            #expect(requests.count == 3)
            #expect(requests.allSatisfy { $0.status?.code == .error })
            #expect(requests[0].events.map(\.name) == ["rebound.budget.denied"])
            #expect(requests[0].attribute("error.type") == .string("retryBudgetExhausted"))
            #expect(requests[1].events.isEmpty)
            #expect(requests[2].events.map(\.name) == ["rebound.breaker.refused"])
            #expect(requests[2].attribute("error.type") == .string("circuitOpen"))
            // The refused attempt was never sent: its span ends with the breaker's refusal.
            let refused = try #require(tracer.finishedSpans.last { $0.kind == .client })
            #expect(refused.attribute("error.type") == .string("circuitOpen"))
            #expect(transport.requestCount == 2)
        }

        @Test func aRedirectIsAnEventOfItsAttemptWithTheLocationRedacted() async throws {
            let transport = ScriptedTransport([
                .response(status: 302, headers: ["Location": "https://b.example.com/moved?sig=x-sig"]), .status(200),
            ])
            let session = Session(
                transport: transport, adapters: [TracingInterceptor(tracer: tracer)], clock: FastForwardClock())

            _ = try await session.send(request("https://a.example.com/start"))

            let attempt = try #require(tracer.finishedSpans.first { $0.kind == .client })
            #expect(attempt.events.map(\.name) == ["rebound.redirect"])
            #expect(attempt.events.first?.attributes.get("http.response.status_code") == .int64(302))
            #expect(
                attempt.events.first?.attributes.get("rebound.redirect.location")
                    == .string("https://b.example.com/moved?sig=<redacted>"))
            // Both hops carried the attempt's span context.
            #expect(transport.requests.count == 2)
            #expect(
                transport.requests.allSatisfy {
                    $0.value(forHTTPHeaderField: InMemoryTracer.spanIDKey) == attempt.spanID
                })
        }

        @Test func hedgesInFlightAtOnceEachHaveASpanEndedWithTheirOutcome() async throws {
            let clock = ManualClock()
            // The first attempt wins at 150 ms, while the hedge started at 100 ms is still in flight.
            let transport = ScriptedTransport(clock: clock) { _, number in
                number == 1 ? .status(200).delayed(by: .milliseconds(150)) : .status(200).delayed(by: .seconds(1))
            }
            let session = Session(
                transport: transport, adapters: [TracingInterceptor(tracer: tracer)],
                hedging: Hedging(delay: .milliseconds(100)), clock: clock)

            let task = Task { try await session.send(request()) }
            try await clock.waitForSleepers(2)
            clock.advance(by: .milliseconds(100))
            try await clock.waitForSleepers(2)  // the first attempt's answer and the hedge's
            clock.advance(by: .milliseconds(50))
            _ = try await task.value

            #expect(tracer.activeSpans.isEmpty)
            let requestSpan = try #require(tracer.finishedSpans.first { $0.kind == .internal })
            let attempts = tracer.finishedSpans.filter { $0.kind == .client }
            #expect(attempts.count == 2)
            #expect(attempts.allSatisfy { $0.parentSpanID == requestSpan.spanID })
            // The loser (the hedge) ends first; the first attempt's span, still open when the hedge started, gets its
            // status.
            #expect(attempts.map { $0.attribute("rebound.hedge") } == [.int64(1), nil])
            #expect(attempts.first?.attribute("http.response.status_code") == nil)
            #expect(attempts.last?.attribute("http.response.status_code") == .int64(200))
            #expect(requestSpan.attribute("rebound.attempts") == .int64(2))
        }

        @Test func aCancelledRequestEndsItsSpans() async throws {
            let clock = ManualClock()
            let session = Session(
                transport: ScriptedTransport([.status(503)]), adapters: [TracingInterceptor(tracer: tracer)],
                retriers: [RetryPolicy(backoff: .constant(.seconds(10)))], clock: clock)

            let task = Task { try await session.send(request()) }
            try await clock.waitForSleepers(1)
            task.cancel()
            _ = try? await task.value

            #expect(tracer.activeSpans.isEmpty)
            let requestSpan = try #require(tracer.finishedSpans.first { $0.kind == .internal })
            #expect(requestSpan.attribute("error.type") == .string("cancelled"))
        }

        @Test func aContextThatCannotRegisterStartsNoSpanThatWouldNeverEnd() async throws {
            let interceptor = TracingInterceptor(tracer: tracer)
            let caller = tracer.startSpan("caller")

            let adapted = try await InstrumentationContext.withValue(caller.context) {
                try await interceptor.adapt(request(), context: RequestContext())
            }
            caller.end()

            #expect(tracer.activeSpans.isEmpty)
            #expect(tracer.finishedSpans.map(\.operationName) == ["caller"])
            // The caller's context still travels with the request.
            #expect(
                adapted.value(forHTTPHeaderField: InMemoryTracer.spanIDKey)
                    == caller.context.inMemorySpanContext?.spanID)
        }

        @Test func noSecretReachesASpan() async throws {
            var sent = request("https://user:pa55word@api.example.com/items?token=t0ken")
            sent.setValue("Bearer s3cr3t", forHTTPHeaderField: "Authorization")
            let session = Session(
                transport: ScriptedTransport([.status(503), .status(200)]),
                adapters: [TracingInterceptor(tracer: tracer)],
                retriers: [RetryPolicy(backoff: .zero)], clock: FastForwardClock())

            _ = try await session.send(sent)

            var text: [String] = []
            for span in tracer.finishedSpans {
                text.append(span.operationName)
                span.attributes.forEach { name, value in text.append("\(name)=\(value)") }
                for event in span.events {
                    event.attributes.forEach { name, value in text.append("\(event.name) \(name)=\(value)") }
                }
            }
            #expect(text.contains { $0.contains("url.full") })
            for secret in ["pa55word", "t0ken", "s3cr3t"] {
                #expect(!text.contains { $0.contains(secret) }, "\(secret) reached a span")
            }
        }
    }
#endif
