// The spans a request makes, printed as a tree, against a local server that fails once, then redirects, then answers.
// Offline, from a checkout of Rebound: `swift run --traits Tracing ReboundTracingExample`.
#if Tracing
    import Foundation
    import InMemoryTracing
    import Rebound
    import ReboundTesting
    import ReboundTracing
    import Tracing

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    // An app bootstraps its tracer (swift-otel, say) once; this one keeps the spans in memory, to print them.
    let tracer = InMemoryTracer()
    InstrumentationSystem.bootstrap(tracer)

    let server = try LoopbackServer()
    server.route("/items", [.status(503), .status(302, headers: ["Location": "/items/v2?sig=secret"])])
    server.route("/items/v2", [.status(200, body: "[]")])

    let session = Session(
        adapters: [TracingInterceptor()], retriers: [RetryPolicy(backoff: .constant(.milliseconds(20)))])

    let caller = tracer.startSpan("load items screen")
    try await InstrumentationContext.withValue(caller.context) {
        _ = try await session.send(URLRequest(url: server.url("/items")), label: "GET /items")
    }
    caller.end()

    // What the server saw: each attempt's span context, as the tracer injected it.
    for request in server.requests("/items") + server.requests("/items/v2") {
        print("server got \(request.path) with span \(request.value(forHeader: InMemoryTracer.spanIDKey) ?? "none")")
    }

    func text(_ attributes: SpanAttributes) -> String {
        var parts: [String] = []
        attributes.forEach { name, value in
            switch value {
            case .string(let string): parts.append("\(name)=\(string)")
            case .int64(let number): parts.append("\(name)=\(number)")
            default: parts.append("\(name)=\(value)")
            }
        }
        return parts.sorted().joined(separator: " ")
    }

    func printTree(parent: String?, depth: Int) {
        for span in tracer.finishedSpans where span.parentSpanID == parent {
            let indent = String(repeating: "  ", count: depth)
            print("\(indent)\(span.operationName) [\(span.spanID)] \(text(span.attributes))")
            for event in span.events {
                print("\(indent)  • \(event.name) \(text(event.attributes))")
            }
            printTree(parent: span.spanID, depth: depth + 1)
        }
    }
    printTree(parent: nil, depth: 0)
#endif
