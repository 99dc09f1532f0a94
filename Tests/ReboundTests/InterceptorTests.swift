import Foundation
import Rebound
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Interceptor")
struct InterceptorTests {
    let retryRequest = RetryRequest(originalRequest: request())
    let failure = ReboundError(reason: .unacceptableStatusCode(503), originalRequest: request())

    @Test func runsAdaptersInOrderEachOnThePreviousOutput() async throws {
        let log = Log()
        let interceptor = Interceptor(adapters: [taggingAdapter("a", log: log), taggingAdapter("b", log: log)])

        let adapted = try await interceptor.adapt(request(), context: RequestContext())

        #expect(adapted.value(forHTTPHeaderField: "X-Adapters") == "a,b")
        #expect(log.all == ["adapt a #1", "adapt b #1"])
    }

    @Test func firstThrowingAdapterStopsTheChain() async throws {
        let log = Log()
        let interceptor = Interceptor(adapters: [
            taggingAdapter("a", log: log),
            .adapter { _, _ in throw TestError("b failed") },
            taggingAdapter("c", log: log),
        ])

        await #expect(throws: TestError("b failed")) {
            try await interceptor.adapt(request(), context: RequestContext())
        }
        #expect(log.all == ["adapt a #1"])
    }

    @Test func doNotRetryPassesToTheNextRetrier() async {
        let log = Log()
        let interceptor = Interceptor(retriers: [
            loggingRetrier("a", log: log, answer: .doNotRetry),
            loggingRetrier("b", log: log, answer: .retryWithDelay(.seconds(3))),
        ])

        let result = await interceptor.retry(retryRequest, dueTo: failure)

        #expect(result.delay == .seconds(3))
        #expect(log.all == ["retry a #0", "retry b #0"])
    }

    @Test(arguments: [RetryResult.retry, .retryWithDelay(.seconds(1)), .doNotRetryWithError(TestError("stop"))])
    func firstAnswerOtherThanDoNotRetryWinsAndLaterRetriersAreNotAsked(answer: RetryResult) async {
        let log = Log()
        let interceptor = Interceptor(retriers: [
            loggingRetrier("a", log: log, answer: answer),
            loggingRetrier("b", log: log, answer: .retry),
        ])

        let result = await interceptor.retry(retryRequest, dueTo: failure)

        #expect(result.retryRequired == answer.retryRequired)
        #expect(result.delay == answer.delay)
        #expect((result.error as? TestError) == (answer.error as? TestError))
        #expect(log.all == ["retry a #0"])
    }

    @Test func answersDoNotRetryWhenEveryRetrierPasses() async {
        let log = Log()
        let interceptor = Interceptor(retriers: [
            loggingRetrier("a", log: log, answer: .doNotRetry), loggingRetrier("b", log: log, answer: .doNotRetry),
        ])

        let result = await interceptor.retry(retryRequest, dueTo: failure)

        #expect(!result.retryRequired && result.error == nil)
        #expect(log.all == ["retry a #0", "retry b #0"])
    }

    @Test func emptyInterceptorPassesTheRequestThroughAndDoesNotRetry() async throws {
        let original = request(.post)
        let interceptor = Interceptor()

        let adapted = try await interceptor.adapt(original, context: RequestContext())
        let result = await interceptor.retry(retryRequest, dueTo: failure)

        #expect(adapted == original)
        #expect(!result.retryRequired)
    }

    @Test func nestedInterceptorsAdaptAfterAdaptersAndRetryAfterRetriers() async throws {
        let log = Log()
        let nested = Interceptor(
            adapters: [taggingAdapter("nested", log: log)],
            retriers: [loggingRetrier("nested", log: log, answer: .retry)])
        let interceptor = Interceptor(
            adapters: [taggingAdapter("own", log: log)],
            retriers: [loggingRetrier("own", log: log, answer: .doNotRetry)],
            interceptors: [nested])

        let adapted = try await interceptor.adapt(request(), context: RequestContext())
        let result = await interceptor.retry(retryRequest, dueTo: failure)

        #expect(adapted.value(forHTTPHeaderField: "X-Adapters") == "own,nested")
        #expect(result.retryRequired)
        #expect(log.all == ["adapt own #1", "adapt nested #1", "retry own #0", "retry nested #0"])
    }

    @Test func closureFactoriesReadWellInArrayLiterals() async throws {
        let adapters: [any RequestAdapter] = [.adapter { request, _ in request }]
        let retriers: [any RequestRetrier] = [.retrier { _, _ in .retry }, .retryPolicy]
        let interceptor = Interceptor(adapters: adapters, retriers: retriers)

        #expect(interceptor.adapters.count == 1)
        #expect(interceptor.retriers.count == 2)
        #expect(await interceptor.retry(retryRequest, dueTo: failure).delay == .zero)
    }

    @Test func adapterAndRetrierClosuresMakeAnInterceptor() async throws {
        let interceptor = Interceptor(
            adaptHandler: { request, context in
                var request = request
                request.setValue("\(context.attempt)", forHTTPHeaderField: "X-Attempt")
                return request
            },
            retryHandler: { _, _ in .retryWithDelay(.milliseconds(10)) })

        let adapted = try await interceptor.adapt(request(), context: RequestContext(attempt: 3))

        #expect(adapted.value(forHTTPHeaderField: "X-Attempt") == "3")
        #expect(await interceptor.retry(retryRequest, dueTo: failure).delay == .milliseconds(10))
    }

    /// Each built-in plays only the roles that are true of it, so that `Interceptor(adapters: [RetryPolicy()])` or
    /// `Session(retriers: [IdempotencyKeyAdapter()])` does not compile: an array of adapters takes only adapters.
    @Test(arguments: [
        ("Adapter", Adapter { request, _ in request } as any Sendable, true, false),
        ("IdempotencyKeyAdapter", IdempotencyKeyAdapter(), true, false),
        ("CircuitBreaker", CircuitBreaker(), true, false),
        ("CircuitBreakerRegistry", CircuitBreakerRegistry(), true, false),
        ("RetryBudget", RetryBudget(), true, false),
        ("Retrier", Retrier { _, _ in .doNotRetry }, false, true),
        ("RetryPolicy", RetryPolicy(), false, true),
        ("ConnectionLostRetryPolicy", ConnectionLostRetryPolicy(), false, true),
        ("JSONBodyRetrier", JSONBodyRetrier(values: ["RETRY"]), true, false),
        ("LoggingRetrier", LoggingRetrier(sink: { _ in }), true, true),
        ("Interceptor", Interceptor(), true, true),
        (
            "AuthenticationInterceptor",
            AuthenticationInterceptor(authenticator: TokenAuthenticator(), credential: Token(value: 1)), true, true
        ),
    ])
    func builtInsPlayOnlyTheRolesTrueOfThem(name: String, part: any Sendable, adapts: Bool, retries: Bool) {
        #expect((part is any RequestAdapter) == adapts, "\(name) as an adapter")
        #expect((part is any RequestRetrier) == retries, "\(name) as a retrier")
    }
}
