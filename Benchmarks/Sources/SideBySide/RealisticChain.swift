import Foundation
import Rebound
import ReboundTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

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
