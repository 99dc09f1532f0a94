// What the metrics observer reports, printed as each metric changes, against a local server that fails twice, then
// answers, and a host that is down. Offline, from a checkout of Rebound: `swift run --traits Metrics
// ReboundMetricsExample`.
#if Metrics
    import Foundation
    import Metrics
    import MetricsTestKit
    import Rebound
    import ReboundMetrics
    import ReboundTesting

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    // An app bootstraps its backend (swift-prometheus, swift-otel, …) once; this one prints every change instead.
    MetricsSystem.bootstrap(StreamMetricsFactory.standardOutput())

    let server = try LoopbackServer()
    server.route("/items", [.status(503), .status(503), .status(200, body: "[]")])
    server.route("/down", handler: { _, _ in .status(500) })

    let breakers = CircuitBreakerRegistry(
        configuration: .init(tripCondition: .consecutiveFailures(3), openDuration: .seconds(30)))
    let budget = RetryBudget(ratio: .default)
    let metrics = MetricsObserver(breakers: breakers, budget: budget)
    let session = Session(
        adapters: [breakers, budget], retriers: [RetryPolicy(retryLimit: 2, backoff: .constant(.milliseconds(20)))],
        observers: [metrics])

    print("== a request that succeeds after two retries")
    _ = try await session.send(URLRequest(url: server.url("/items")))
    print("== two requests to a host that is down: the breaker opens, then refuses")
    for _ in 0..<2 {
        _ = try? await session.send(URLRequest(url: server.url("/down?token=not-a-dimension")))
    }
#endif
