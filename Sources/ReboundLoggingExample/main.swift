// The logging retrier's events and a breaker's transitions as swift-log entries, against a local server that fails
// twice, then answers. Offline, from a checkout of Rebound: `swift run --traits Logging ReboundLoggingExample`.
#if Logging
    import Foundation
    import Logging
    import Rebound
    import ReboundLogging
    import ReboundTesting

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    LoggingSystem.bootstrap { label in
        var handler = StreamLogHandler.standardOutput(label: label)
        handler.logLevel = .debug
        return handler
    }
    var logger = Logger(label: "example.http")
    logger.logLevel = .debug

    let server = try LoopbackServer()
    server.route("/items", [.status(503), .status(503, headers: ["Retry-After": "0"]), .status(200, body: "[]")])
    server.route("/down", handler: { _, _ in .status(500) })

    let registry = CircuitBreakerRegistry(
        configuration: .init(tripCondition: .consecutiveFailures(3), openDuration: .seconds(30)))
    // Subscribe before the task starts, so that no transition is missed.
    let transitions = registry.transitions()
    let transitionLogging = Task { await transitions.log(to: logger) }

    // Wrapping the whole chain, the logger hears every request from its first attempt, a breaker's refusals included.
    let session = Session(
        interceptor: LoggingRetrier(
            wrapping: Interceptor(
                adapters: [registry], retriers: [RetryPolicy(retryLimit: 2, backoff: .constant(.milliseconds(50)))]),
            logger: logger))

    var items = URLRequest(url: server.url("/items"))
    items.setValue("Bearer not-for-logs", forHTTPHeaderField: "Authorization")
    let response = try await session.send(items, label: "items")
    print("items: status \(response.statusCode) after \(response.attempts.count) attempts")

    for _ in 0..<2 {
        do {
            _ = try await session.send(URLRequest(url: server.url("/down?token=not-for-logs")), label: "down")
        } catch {
            print("down: \(error)")
        }
    }
    transitionLogging.cancel()
    await transitionLogging.value
#endif
