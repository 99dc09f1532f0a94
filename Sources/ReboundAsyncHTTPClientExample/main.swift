// Rebound on AsyncHTTPClient against local servers: a 503 retried, and a redirect to another origin that the session
// follows itself, leaving the credential at home. Offline, from a checkout of Rebound: `swift run --traits
// AsyncHTTPClient ReboundAsyncHTTPClientExample`.
#if AsyncHTTPClient
    import Foundation
    import Rebound
    import ReboundAsyncHTTPClient
    import ReboundTesting

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    let home = try LoopbackServer()
    let elsewhere = try LoopbackServer()
    home.route("/items", [.status(503), .status(200, body: "[1,2,3]")])
    home.route("/moved", [.status(302, headers: ["Location": elsewhere.url("/items").absoluteString])])
    elsewhere.route("/items", [.status(200, body: "[4,5]")])

    let session = Session(
        transport: AsyncHTTPClientHTTPTransport(),
        adapters: [
            Adapter.modifying { request, _ in request.setValue("Bearer example", forHTTPHeaderField: "Authorization") }
        ],
        retriers: [RetryPolicy(backoff: .constant(.milliseconds(20)))])

    let items = try await session.send(home.url("/items"))
    print("items: \(String(decoding: items.data, as: UTF8.self)) after \(items.attempts.count) attempts")

    let moved = try await session.send(home.url("/moved"))
    let credential = elsewhere.requests("/items").first?.value(forHeader: "Authorization") ?? "none"
    print("moved: \(String(decoding: moved.data, as: UTF8.self)); Authorization at the other origin: \(credential)")
#endif
