// What the metrics observer reports, through Prometheus as a service would, against a local server that fails twice,
// then answers, and a host that is down; printed as a scrape of the service's `/metrics` would read it. Offline, from a
// checkout of Rebound: `swift run --traits Metrics ReboundMetricsExample`.
#if Metrics
    import Foundation
    import Metrics
    import Prometheus
    import Rebound
    import ReboundMetrics
    import ReboundTesting

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    // A service bootstraps its backend once, at start-up; Prometheus reads the registry at each scrape.
    let registry = PrometheusCollectorRegistry()
    MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))

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
    // The gauges of every breaker, read now (a scrape handler would call this first).
    metrics.updateGauges()
    print("== what a scrape of /metrics reads (Rebound's lines)")
    let scrape = registry.emitToString().split(separator: "\n").filter { $0.contains("rebound_") }
    print(scrape.joined(separator: "\n"))
#endif
