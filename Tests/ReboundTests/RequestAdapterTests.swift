import Foundation
import ReboundTesting
import Testing

@testable import Rebound

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Adapter.modifying")
struct ModifyingAdapterTests {
    @Test func changesTheRequestInPlaceAndSeesTheContext() async throws {
        let adapter: any RequestAdapter = .modifying { request, context in
            request.setValue("\(context.attempt)", forHTTPHeaderField: "X-Attempt")
            request.httpMethod = "PUT"
        }

        let adapted = try await adapter.adapt(request(), context: RequestContext(attempt: 3))

        #expect(adapted.value(forHTTPHeaderField: "X-Attempt") == "3")
        #expect(adapted.httpMethod == "PUT")
    }

    @Test func aThrowingClosureFailsTheAttempt() async throws {
        let session = Session(
            transport: ScriptedTransport([.status(200)]),
            adapters: [Adapter.modifying { _, _ in throw TestError("no") }], clock: FastForwardClock())

        let error = await #expect(throws: ReboundError.self) { try await session.send(request()) }

        #expect(error?.underlyingError as? TestError == TestError("no"))
    }
}

@Suite("Adapter.modifying: closures that await and closures that do not")
struct ModifyingTests {
    @Test func aClosureThatAwaitsChangesTheRequestInPlace() async throws {
        let source = HeaderSource()
        let adapter = Adapter.modifying { request, _ in
            request.setValue(await source.value(), forHTTPHeaderField: "X-Awaited")
        }

        let adapted = try await adapter.adapt(request(), context: RequestContext())

        #expect(adapted.value(forHTTPHeaderField: "X-Awaited") == "awaited")
    }

    @Test func stepsThatAwaitAndStepsThatDoNotRunInTheirListedOrder() async throws {
        let source = HeaderSource()
        let interceptor = Interceptor(adapters: [
            .modifying { request, _ in request.setValue("a", forHTTPHeaderField: "X-Order") },
            .modifying { request, _ in
                let value = await source.value()
                request.setValue(
                    (request.value(forHTTPHeaderField: "X-Order") ?? "") + "b-" + value, forHTTPHeaderField: "X-Order")
            },
            .adapter { request, _ in
                var request = request
                request.setValue(
                    (request.value(forHTTPHeaderField: "X-Order") ?? "") + "c", forHTTPHeaderField: "X-Order")
                return request
            },
            .modifying { request, _ in
                request.setValue(
                    (request.value(forHTTPHeaderField: "X-Order") ?? "") + "d", forHTTPHeaderField: "X-Order")
            },
        ])

        let adapted = try await interceptor.adapt(request(), context: RequestContext())

        #expect(adapted.value(forHTTPHeaderField: "X-Order") == "ab-awaitedcd")
    }

    @Test func aClosureThatDoesNotAwaitIsCalledWithoutSuspending() {
        let now = Adapter.modifying { request, _ in request.setValue("1", forHTTPHeaderField: "X-Now") }
        let source = HeaderSource()
        let awaiting = Adapter.modifying { request, _ in
            request.setValue(await source.value(), forHTTPHeaderField: "X-Awaited")
        }
        let handler: Adapter.ModifyHandler = { request, _ in request.setValue("1", forHTTPHeaderField: "X-Later") }

        #expect(now.adaptInPlace != nil)
        #expect(awaiting.adaptInPlace == nil)
        #expect(Adapter.modifying(handler).adaptInPlace == nil)
        #expect(Adapter.bodyStream { InputStream(data: Data()) }.adaptInPlace != nil)
        #expect(Adapter { request, _ in request }.adaptInPlace == nil)
    }

    @Test func theBuiltInsThatNeverSuspendAndTheChainsMadeOfThemAdaptInPlace() {
        let inPlace: [any AdaptsInPlace] = [
            CircuitBreaker(), CircuitBreakerRegistry(), RetryBudget(), RetryBudget(ratio: .default),
            IdempotencyKeyAdapter(), JSONBodyRetrier(values: ["RATE_LIMITED"]), AdaptiveThrottle(),
            Interceptor(), Interceptor(observers: [RecordingObserver()]),
            Interceptor(adapters: [.modifying { _, _ in }, CircuitBreakerRegistry()]),
            Interceptor(adapters: [Interceptor(adapters: [CircuitBreaker()])]),
        ]
        for part in inPlace { #expect(part.adaptInPlace != nil, "\(type(of: part))") }

        let source = HeaderSource()
        let awaiting = Adapter.modifying { request, _ in
            request.setValue(await source.value(), forHTTPHeaderField: "X-Awaited")
        }
        // One part that may suspend, at any depth, or one a wrapper hides: the chain is called through `adapt`.
        #expect(Interceptor(adapters: [CircuitBreaker(), awaiting]).adaptInPlace == nil)
        #expect(Interceptor(adapters: [Interceptor(adapters: [awaiting])]).adaptInPlace == nil)
        #expect(Interceptor(adapters: [ForwardingAdapter(wrapped: CircuitBreaker())]).adaptInPlace == nil)
        #expect(Interceptor(interceptors: [NoOpInterceptor()]).adaptInPlace == nil)
    }

    @Test func aRequestsOwnChainAdaptsInPlaceAfterTheSessionsWhenBothDo() async throws {
        let source = HeaderSource()
        let awaiting = Adapter.modifying { request, _ in
            request.setValue(await source.value(), forHTTPHeaderField: "X-Awaited")
        }
        func appending(_ letter: String) -> Adapter {
            .modifying { request, _ in
                request.setValue(
                    (request.value(forHTTPHeaderField: "X-Order") ?? "") + letter, forHTTPHeaderField: "X-Order")
            }
        }
        func chain(session: [any RequestAdapter], request own: (any RequestInterceptor)?) -> ChainBox? {
            let session = Session(transport: ScriptedTransport([]), adapters: session)
            return RequestPlan(session: session, original: .request(request()), interceptor: own).chain
        }

        let both = try #require(chain(session: [appending("a")], request: Interceptor(adapters: [appending("b")])))
        let adaptInPlace = try #require(both.adaptInPlace)
        var inPlace = request()
        try adaptInPlace(&inPlace, RequestContext())
        let adapted = try await both.adapt(request(), context: RequestContext())
        #expect(inPlace.value(forHTTPHeaderField: "X-Order") == "ab")
        #expect(adapted.value(forHTTPHeaderField: "X-Order") == "ab")

        #expect(chain(session: [], request: Interceptor(adapters: [appending("b")]))?.adaptInPlace != nil)
        // Either half may suspend: the whole is called through `adapt`.
        #expect(chain(session: [awaiting], request: Interceptor(adapters: [appending("b")]))?.adaptInPlace == nil)
        #expect(chain(session: [appending("a")], request: Interceptor(adapters: [awaiting]))?.adaptInPlace == nil)
        #expect(chain(session: [appending("a")], request: NoOpInterceptor())?.adaptInPlace == nil)
    }

    @Test func aChainAdaptedInPlaceDoesWhatItsAdaptDoes() async throws {
        let chain = Interceptor(adapters: [
            .modifying { request, context in request.setValue("\(context.attempt)", forHTTPHeaderField: "X-Attempt") },
            Interceptor(adapters: [
                .modifying { request, _ in
                    request.setValue(
                        (request.value(forHTTPHeaderField: "X-Attempt") ?? "") + "b", forHTTPHeaderField: "X-Attempt")
                },
                IdempotencyKeyAdapter(),
            ]),
        ])
        let context = RequestContext(attempt: 2)
        var post = request()
        post.httpMethod = "POST"

        let adapted = try await chain.adapt(post, context: context)
        let adaptInPlace = try #require(chain.adaptInPlace)
        var inPlace = post
        try adaptInPlace(&inPlace, context)

        #expect(adapted.value(forHTTPHeaderField: "X-Attempt") == "2b")
        #expect(adapted.value(forHTTPHeaderField: "Idempotency-Key") == context.requestID.uuidString)
        #expect(inPlace.allHTTPHeaderFields == adapted.allHTTPHeaderFields)
        #expect(inPlace.httpMethod == "POST")
    }

    @Test(arguments: ["fails", "cancels"])
    func aChainAdaptedInPlaceThatThrowsAfterTheBreakerGivesItsPermitBack(ending: String) async throws {
        let breaker = CircuitBreaker()
        let transport = ScriptedTransport([.status(200)])
        let session = Session(
            transport: transport,
            adapters: [
                breaker,
                .modifying { _, _ in
                    if ending == "cancels" { throw CancellationError() }
                    throw TestError("after the breaker")
                },
            ], clock: FastForwardClock())
        #expect(session.chain?.adaptInPlace != nil)

        if ending == "cancels" {
            await #expect(throws: CancellationError.self) { _ = try await session.send(request()) }
        } else {
            let error = try await #require(throws: ReboundError.self) { _ = try await session.send(request()) }
            guard case .adaptationFailed = error.reason else {
                Issue.record("expected an adaptation failure, got \(error.reason)")
                return
            }
        }
        #expect(transport.requestCount == 0)
        #expect(breaker.permitsInFlight == 0)
        #expect(breaker.state == .closed)
    }

    @Test func aBreakerAdaptedInPlaceRefusesAsItsAdaptDoes() async throws {
        let breaker = CircuitBreaker()
        breaker.forceOpen()
        let adaptInPlace = try #require(Interceptor(adapters: [breaker]).adaptInPlace)
        var request = request()

        await #expect(throws: CircuitBreakerOpenError.self) {
            _ = try await breaker.adapt(request, context: RequestContext())
        }
        #expect(throws: CircuitBreakerOpenError.self) { try adaptInPlace(&request, RequestContext()) }
    }

    @Test func aWrapperAroundAnAdapterThatDoesNotAwaitRunsItInItsPlace() async throws {
        let interceptor = Interceptor(adapters: [
            .modifying { request, _ in request.setValue("a", forHTTPHeaderField: "X-Order") },
            ForwardingAdapter(
                wrapped: Adapter.modifying { request, _ in
                    request.setValue(
                        (request.value(forHTTPHeaderField: "X-Order") ?? "") + "b", forHTTPHeaderField: "X-Order")
                }),
            .modifying { request, _ in
                request.setValue(
                    (request.value(forHTTPHeaderField: "X-Order") ?? "") + "c", forHTTPHeaderField: "X-Order")
            },
        ])

        let adapted = try await interceptor.adapt(request(), context: RequestContext())

        #expect(adapted.value(forHTTPHeaderField: "X-Order") == "abc")
    }

    @Test func aThrowingStepStopsTheChain() async throws {
        let reached = Locked(0)
        let interceptor = Interceptor(adapters: [
            .modifying { _, _ in throw TestError("first") },
            .modifying { _, _ in reached.withLock { $0 += 1 } },
        ])

        await #expect(throws: TestError("first")) {
            _ = try await interceptor.adapt(request(), context: RequestContext())
        }
        #expect(reached.withLock { $0 } == 0)
    }
    @Test func aChainOfRetriersOnlyIsNotAdaptedAndItsRetriersAreAskedOneByOne() async throws {
        let policy = RetryPolicy()
        let retriersOnly = ChainBox(Interceptor(retriers: [policy, NoOpInterceptor()]))
        #expect(!retriersOnly.adapts)
        #expect(retriersOnly.retriers.count == 2)
        #expect(retriersOnly.retriers.first is RetryPolicy)
        // Observers or gates to register on the way: the interceptor is asked as one retrier, and adapts.
        let withGate = ChainBox(Interceptor(retriers: [policy], gates: [CountingGate(allowed: 1)]))
        #expect(withGate.adapts)
        #expect(withGate.retriers.count == 1 && withGate.retriers.first is Interceptor)
        #expect(ChainBox(Interceptor(adapters: [CircuitBreaker()], retriers: [policy])).adapts)
        // The session's retriers, then the request's own, read out of both.
        let session = Session(transport: ScriptedTransport([]), retriers: [policy])
        let both = try #require(
            RequestPlan(
                session: session, original: .request(request()), interceptor: Interceptor(retriers: [NoOpInterceptor()])
            ).chain)
        #expect(!both.adapts)
        #expect(both.retriers.count == 2 && both.retriers.last is NoOpInterceptor)
    }

    @Test func aRequestKeepsRegistrationsOnlyWhenAPartOfItsChainMayRegister() throws {
        func registers(_ session: Session, retriers: [any RequestRetrier] = []) -> Bool {
            RequestPlan(session: session, original: .request(request()), retriers: retriers).registered != nil
        }
        let transport = ScriptedTransport([])
        // Retry policies never register: a request through them keeps nothing.
        #expect(!registers(Session(transport: transport)))
        #expect(!registers(Session(transport: transport, retriers: [RetryPolicy(), ConnectionLostRetryPolicy()])))
        let policyOnly = Session(transport: transport, retriers: [RetryPolicy()])
        #expect(!registers(policyOnly, retriers: [RetryPolicy()]))
        // A retrier of the user's own may register through its retry request, an adapter through its context: with
        // one in the session's chain or the request's, the request keeps registrations.
        #expect(registers(Session(transport: transport, retriers: [RetryPolicy(), NoOpInterceptor()])))
        #expect(registers(Session(transport: transport, adapters: [Adapter.modifying { _, _ in }])))
        #expect(registers(policyOnly, retriers: [NoOpInterceptor()]))
        // So may a gate handed the retry request, a validator that reads its context, or a redirect handler of the
        // user's own: the request keeps registrations, and a validator's context can register and tell the time left.
        #expect(registers(Session(transport: transport, retriers: [RetryPolicy()], gates: [CircuitBreaker()])))
        #expect(registers(Session(transport: transport, validator: Validator { _, _, _ in })))
        #expect(registers(Session(transport: transport, validator: Validator.successfulStatusCodes.and { _, _, _ in })))
        #expect(registers(Session(transport: transport, redirectHandler: EveryRedirect())))
        #expect(
            RequestPlan(
                session: policyOnly, original: .request(request()), validator: Validator { _, _, _ in }
            ).registered != nil)
        // The status rules and a closure of the response and its body read no context.
        #expect(!registers(Session(transport: transport, validator: Validator { _, _ in })))
        #expect(!registers(Session(transport: transport, validator: .acceptableStatusCodes(200..<400))))
        #expect(!registers(Session(transport: transport, redirectHandler: Redirector.doNotFollow)))
    }

    @Test func aValidatorThatReadsItsContextIsToldTheTimeLeftBeforeTheDeadline() async throws {
        let timeLeft = Locked<Duration?>(nil)
        let session = Session(
            transport: ScriptedTransport([.status(200)]), retriers: [RetryPolicy()],
            validator: Validator { _, _, context in timeLeft.withLock { $0 = context.timeLeft } },
            deadline: .seconds(5),
            clock: ManualClock())
        _ = try await session.send(request())
        #expect(timeLeft.withLock { $0 } == .seconds(5))
    }
}

/// A redirect handler of the user's own, which follows every redirect.
private struct EveryRedirect: RedirectHandler {
    func redirect(
        _ sent: URLRequest, to next: URLRequest, for head: ResponseHead, context: RequestContext
    ) async -> URLRequest? { next }
}

/// A retrier placed in `interceptors:`, whose `adapt` is the protocol's default: called through `adapt`.
private struct NoOpInterceptor: RequestInterceptor {}

/// Something an adapter awaits.
private actor HeaderSource {
    func value() -> String { "awaited" }
}
