import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A server that allows 3 requests per `window` and says so in the IETF `RateLimit` fields, answering 429 past them.
private final class QuotaServer: Sendable {
    let server: LoopbackServer
    private let window = Locked((start: ContinuousClock.now, used: 0, throttled: 0))

    init(window length: Duration = .seconds(1)) throws {
        server = try LoopbackServer()
        server.route("/items") { [window] _, _ in
            window.withLock { window -> LoopbackServer.Reply in
                let now = ContinuousClock.now
                if now - window.start >= length { window = (now, 0, window.throttled) }
                // Whole seconds, rounded up, so that a client never comes back before the window turns.
                let left = length - (now - window.start)
                let seconds = Int(
                    (Double(left.components.attoseconds) / 1e18 + Double(left.components.seconds)).rounded(.up))
                let policy = "\"default\";q=3;w=\(length.components.seconds)"
                guard window.used < 3 else {
                    window.throttled += 1
                    return .status(
                        429, headers: ["RateLimit-Policy": policy, "RateLimit": "\"default\";r=0;t=\(seconds)"])
                }
                window.used += 1
                return .status(
                    200,
                    headers: [
                        "RateLimit-Policy": policy, "RateLimit": "\"default\";r=\(3 - window.used);t=\(seconds)",
                    ],
                    body: "ok")
            }
        }
    }

    var throttled: Int { window.withLock { $0.throttled } }
}

@Suite("RateLimitPacer over loopback", .timeLimit(.minutes(5)))
struct RateLimitPacerOverLoopbackTests {
    @Test func aClientPacedByTheAdvertisedQuotaDrawsNo429() async throws {
        let quota = try QuotaServer()
        defer { quota.server.stop() }
        let session = Session(adapters: [RateLimitPacer()])

        for _ in 0..<8 {
            let response = try await session.send(quota.server.url("/items"))
            #expect(response.statusCode == 200)
        }

        #expect(quota.throttled == 0)
        #expect(quota.server.hits("/items") == 8)
    }

    @Test func withoutThePacerTheSameClientDrawsThem() async throws {
        // A window long enough that no machine sends 8 requests slowly enough to get past it. How many of them reach
        // the server within it is the machine's: only that some draw a 429 is asserted.
        let quota = try QuotaServer(window: .seconds(60))
        defer { quota.server.stop() }
        let session = Session()

        for _ in 0..<8 { _ = try? await session.send(quota.server.url("/items")) }

        #expect(quota.throttled >= 1)
    }
}
