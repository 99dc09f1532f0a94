import Foundation
import Rebound
import ReboundTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The configuration of every plain `URLSession` the benchmarks compare Rebound with: `.default`, without a response
/// cache on Linux, as `URLSessionHTTPTransport()` makes its own session there (see its documentation), so that both
/// sides make the same system calls.
public func plainConfiguration() -> URLSessionConfiguration {
    let configuration = URLSessionConfiguration.default
    #if canImport(FoundationNetworking)
        configuration.urlCache = nil
    #endif
    return configuration
}

/// The five headers a realistic chain adds; plain URLSession sets the same ones, so only the framework differs.
public let realisticHeaders = [
    ("Accept", "application/json"), ("User-Agent", "Benchmarks/1.0"), ("X-Client-Version", "42"),
    ("X-Request-Source", "benchmark"), ("Accept-Language", "en"),
]

/// A request to `url` with the five realistic headers set directly, as plain URLSession users do.
public func requestWithRealisticHeaders(to url: URL) -> URLRequest {
    var request = URLRequest(url: url)
    for (name, value) in realisticHeaders { request.setValue(value, forHTTPHeaderField: name) }
    return request
}

/// The five adapters of a realistic chain, each setting one header in place (`.modifying`, the idiom the docs
/// recommend).
public let headerAdapters: [any RequestAdapter] = realisticHeaders.map { name, value in
    Adapter.modifying { request, _ in request.setValue(value, forHTTPHeaderField: name) }
}

/// A new realistic chain (section 2 of Docs/Performance.md), with a breaker registry of its own: five header
/// adapters, a `CircuitBreakerRegistry`, and `RetryPolicy` in a silent `LoggingRetrier`.
public func realisticChain() -> Interceptor {
    Interceptor(
        adapters: headerAdapters + [CircuitBreakerRegistry()],
        retriers: [LoggingRetrier(wrapping: RetryPolicy(), sink: { _ in })])
}

/// The realistic chain that section 2's table and the tools' contender `realistic` share: one instance per process.
public let sharedRealisticChain = realisticChain()

/// A retrier that passes every failure on.
public struct NoOpRetrier: RequestInterceptor {
    public init() {}
}

/// An observer that does nothing: what the observers' call itself costs.
public struct NoOpObserver: AttemptObserver {
    public init() {}

    public func attemptDidFinish(_ outcome: AttemptOutcome) async {}
}

/// The chain of a contender named on the command line of the digging tools (`profile`, `ab`, `micro`, `cold`, and
/// `ReboundInstructions`), or `nil` for a name that is not a chain (`session`, a bare session, among them).
public func contenderInterceptor(named contender: String) -> (any RequestInterceptor)? {
    switch contender {
    case "realistic": sharedRealisticChain
    case "adapters": Interceptor(adapters: headerAdapters)
    case "breaker": Interceptor(adapters: [CircuitBreakerRegistry()])
    // One breaker, without a registry: what the registry's key and table add to `breaker`.
    case "single": Interceptor(adapters: [CircuitBreaker()])
    // A breaker of its own per request: `single`'s work on state no other request shares.
    case "unshared":
        Interceptor(adapters: [
            Adapter { request, context in try await CircuitBreaker().adapt(request, context: context) }
        ])
    // An adapter that changes nothing: what an adapter's call costs, without a breaker's work.
    case "nothing": Interceptor(adapters: [Adapter.modifying { _, _ in }])
    case "logging": LoggingRetrier(wrapping: RetryPolicy(), sink: { _ in })
    case "policy": Interceptor(retriers: [RetryPolicy()])
    case "header":
        Interceptor(adapters: [
            Adapter.modifying { request, _ in request.setValue("4.2.0", forHTTPHeaderField: "X-Client-Version") }
        ])
    case "idempotency": Interceptor(adapters: [IdempotencyKeyAdapter()])
    // A chain that does nothing on a success (its one retrier is never asked): what having a chain costs.
    case "chain": Interceptor(retriers: [NoOpRetrier()])
    case "budget": Interceptor(adapters: [RetryBudget(ratio: .default)])
    case "tokens": Interceptor(adapters: [RetryBudget()])
    case "observer": Interceptor(observers: [NoOpObserver()])
    case "registry+policy": Interceptor(adapters: [CircuitBreakerRegistry()], retriers: [RetryPolicy()])
    case "adapters+policy": Interceptor(adapters: headerAdapters, retriers: [RetryPolicy()])
    // The realistic chain of the AsyncHTTPClient benchmark: a header adapter, an idempotency key, a breaker registry
    // and a ratio budget, with `RetryPolicy`.
    case "ahc-realistic":
        Interceptor(
            adapters: [
                Adapter.modifying { request, _ in request.setValue("4.2.0", forHTTPHeaderField: "X-Client-Version") },
                IdempotencyKeyAdapter(), CircuitBreakerRegistry(), RetryBudget(ratio: .default),
            ],
            retriers: [RetryPolicy()])
    default: nil
    }
}

/// The contenders sent a URL, as the README sends one: the chains whose adapters set the headers, and `url`, a bare
/// session.
public let contendersSentAURL: Set = ["adapters", "realistic", "ahc-realistic", "header", "url"]

/// A request to `url`, with the realistic headers unless the contender's adapters add them.
public func contenderRequest(to url: URL, for contender: String) -> URLRequest {
    ["adapters", "realistic", "copied"].contains(contender)
        ? URLRequest(url: url) : requestWithRealisticHeaders(to: url)
}

/// The loopback server's routes, for every benchmark executable that serves (``ChildServer``): `/ok` answers 200 with
/// a small JSON body; `/flaky-a` and `/flaky-b` answer 503 to every odd request and 200 to every even one, so that
/// each sequential logical request fails once, then succeeds.
public func installBenchmarkRoutes(on server: LoopbackServer) {
    let body = #"{"id": 1, "name": "kettle"}"#
    server.route("/ok", [.json(body)])
    for path in ["/flaky-a", "/flaky-b"] {
        server.route(path) { _, number in number % 2 == 1 ? .status(503) : .json(body) }
    }
}
