import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A user's plain decorator: it forwards `adapt` and `retry` to what it wraps and knows nothing of any other role.
private struct Forwarding: RequestInterceptor {
    let adapter: (any RequestAdapter)?
    let retrier: (any RequestRetrier)?
    /// Whether it hands on a copy of the context with its own label, as a decorator that relabels requests would.
    let relabelling: Bool

    init(adapter: (any RequestAdapter)? = nil, retrier: (any RequestRetrier)? = nil, relabelling: Bool = false) {
        self.adapter = adapter
        self.retrier = retrier
        self.relabelling = relabelling
    }

    func adapt(_ request: consuming URLRequest, context: RequestContext) async throws -> URLRequest {
        guard let adapter else { return request }
        return try await adapter.adapt(request, context: relabelling ? context.with(label: "relabelled") : context)
    }

    func retry(_ request: RetryRequest, dueTo error: ReboundError) async -> RetryResult {
        await retrier?.retry(request, dueTo: error) ?? .doNotRetry
    }
}

/// The ways of composing that must keep every role of the part they hold.
enum Shape: String, CaseIterable, CustomTestStringConvertible {
    /// The part given to the session directly.
    case direct
    /// The part inside an `Interceptor` inside an `Interceptor`.
    case nested
    /// The part inside an `Interceptor` wrapped by a `LoggingRetrier`.
    case logged
    /// The part inside a user's decorator that forwards `adapt` and `retry`, relabelling the context.
    case relabelled
    /// The part inside a user's decorator that forwards `adapt` and `retry` only.
    case decorated
    /// The part inside a decorator inside a `LoggingRetrier` inside an `Interceptor`, and given directly too.
    case everywhere

    var testDescription: String { rawValue }

    /// A chain that holds `part` (an adapter that registers through the context) in this shape, after `retriers`.
    func chain(_ part: any RequestAdapter, retriers: [any RequestRetrier]) -> any RequestInterceptor {
        switch self {
        case .direct:
            return Interceptor(adapters: [part], retriers: retriers)
        case .nested:
            return Interceptor(retriers: retriers, interceptors: [Interceptor(adapters: [part])])
        case .logged:
            return LoggingRetrier(
                wrapping: Interceptor(adapters: [part], retriers: retriers), minimumLevel: .critical, sink: { _ in })
        case .decorated:
            return Interceptor(retriers: retriers, interceptors: [Forwarding(adapter: part)])
        case .relabelled:
            return Interceptor(retriers: retriers, interceptors: [Forwarding(adapter: part, relabelling: true)])
        case .everywhere:
            let logged = LoggingRetrier(
                wrapping: Interceptor(retriers: retriers, interceptors: [Forwarding(adapter: part)]),
                minimumLevel: .critical, sink: { _ in })
            return Interceptor(adapters: [part], interceptors: [Interceptor(interceptors: [logged])])
        }
    }
}

@Suite("Roles registered through the context", .timeLimit(.minutes(5)))
struct RegisteredRolesTests {
    let clock = ManualClock()

    @Test(arguments: Shape.allCases)
    func aBreakerTripsInEveryShapeAfterExactlyItsThreshold(shape: Shape) async throws {
        let transport = ScriptedTransport { _, _ in .status(503) }
        let breaker = CircuitBreaker(key: "api", clock: clock)
        let session = Session(transport: transport, interceptor: shape.chain(breaker, retriers: []), clock: clock)

        for _ in 0..<4 { _ = try? await session.send(request()) }
        #expect(breaker.state == .closed)
        for _ in 0..<6 { _ = try? await session.send(request()) }

        #expect(breaker.state == .open)
        #expect(transport.requestCount == 5)
        #expect(breaker.permitsInFlight == 0)
    }

    @Test(arguments: Shape.allCases)
    func aHalfOpenTrialTakenThroughAnyShapeClosesOrReopensTheBreaker(shape: Shape) async throws {
        let transport = ScriptedTransport(Array(repeating: .status(503), count: 6) + [.status(200)])
        let breaker = CircuitBreaker(clock: clock)
        let session = Session(transport: transport, interceptor: shape.chain(breaker, retriers: []), clock: clock)
        for _ in 0..<5 { _ = try? await session.send(request()) }
        #expect(breaker.state == .open)

        clock.advance(by: .seconds(30))
        _ = try? await session.send(request())
        #expect(breaker.state == .open)
        clock.advance(by: .seconds(30))
        _ = try await session.send(request())

        #expect(breaker.state == .closed)
        #expect(breaker.permitsInFlight == 0)
    }

    @Test(arguments: Shape.allCases)
    func aBudgetDeniesRetriesInEveryShapeAndChargesEachOnce(shape: Shape) async throws {
        let transport = ScriptedTransport { _, _ in .status(503) }
        let budget = RetryBudget(configuration: .init(initialTokens: 12, retryCost: 5))
        let session = Session(
            transport: transport, interceptor: shape.chain(budget, retriers: [retryAnything(limit: 10)]),
            clock: FastForwardClock())

        let error = try await #require(throws: ReboundError.self) { try await session.send(request()) }

        #expect(transport.requestCount == 3)
        #expect(error.underlyingError is RetryBudgetExhausted)
        #expect(budget.tokens(for: "api.example.com") == 2)
        #expect(budget.requestsWithGrants == 0)
    }

    @Test func aRetrierRegistersThroughTheRetryRequestAndHearsTheRestOfTheRequest() async throws {
        let observer = RecordingObserver()
        let registering = Retrier { request, _ in
            request.context.observe(observer)
            return request.retryCount < 1 ? .retry : .doNotRetry
        }
        let session = Session(
            transport: ScriptedTransport([.status(503), .status(200)]),
            interceptor: Forwarding(retrier: registering), clock: FastForwardClock())

        _ = try await session.send(request())

        #expect(observer.lines == ["#1 503 retry 0.0 seconds", "#2 200 succeeded"])
        #expect(observer.ends == ["succeeded after 2"])
    }

    @Test func aBreakerHandedAContextThatCannotRegisterLetsTheAttemptThroughWithoutHoldingAPermit() async throws {
        let breaker = CircuitBreaker(configuration: .init(tripCondition: .consecutiveFailures(1)), clock: clock)
        let session = Session(transport: ScriptedTransport([.status(503)]), adapters: [breaker], clock: clock)
        _ = try? await session.send(request())
        clock.advance(by: .seconds(30))

        for _ in 0..<3 { _ = try await breaker.adapt(request(), context: RequestContext()) }

        #expect(breaker.state == .halfOpen)
        #expect(breaker.permitsInFlight == 0)
        #expect(!RequestContext().canRegister)
    }

    @Test func anInterceptorPlaysTheRoleOfTheListItIsInAsInAlamofire() async throws {
        let log = Log()
        let both = Interceptor(
            adapters: [taggingAdapter("inner", log: log)], retriers: [loggingRetrier("inner", log: log, answer: .retry)]
        )
        let session = Session(
            transport: ScriptedTransport([.status(503), .status(503), .status(200), .status(503), .status(200)]),
            clock: FastForwardClock())

        _ = try? await session.send(request(), adapters: [both])
        _ = try? await session.send(request(), retriers: [both])
        _ = try await session.send(request(), interceptor: both)

        // Among the adapters it only adapts (the 503 is not retried); among the retriers it only retries; as an
        // interceptor it does both.
        #expect(
            log.all == ["adapt inner #1", "retry inner #0", "adapt inner #1", "retry inner #0", "adapt inner #2"])
    }
}
