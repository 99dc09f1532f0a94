import ExampleSupport
import Foundation
import Rebound
import ReboundTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Trips a breaker on a failing upstream, fails fast while it is open, lets one trial through when half-open, and
/// closes it once the upstream is back; a second upstream keeps its own, closed breaker. Offline; about two seconds.
@main
struct CircuitBreakerExample {
    static func main() async throws {
        let payments = try LoopbackServer()
        defer { payments.stop() }
        let search = try LoopbackServer()
        defer { search.stop() }
        payments.route("/charge", [.status(503)])
        search.route("/q", [.status(200, body: "results")])
        print("CircuitBreaker example: payments on port \(payments.port) (down), search on port \(search.port) (up).\n")

        let narrator = Narrator()
        let breakers = CircuitBreakerRegistry(
            configuration: .init(tripCondition: .consecutiveFailures(3), openDuration: .seconds(1)),
            onTransition: { transition in
                narrator.say("breaker \(transition.key ?? "-"): \(transition.from) → \(transition.to)")
            })
        let session = Session(adapters: [breakers])

        await narrator.scenario("5 calls to payments: 3 failures trip the breaker, then it fails fast") {
            for _ in 1...5 {
                do {
                    _ = try await session.send(payments.url("/charge"), method: .put)
                } catch let error as ReboundError {
                    narrator.say("✘ \(error.underlyingError.map { "\($0)" } ?? "\(error.reason)")")
                }
            }
            return "payments was hit \(payments.hits("/charge")) times"
        }
        await narrator.scenario("search has a breaker of its own, still closed") {
            "\(try await session.send(search.url("/q")).statusCode) from search"
        }
        await narrator.scenario("after 1 s: half-open, one trial call fails, and it opens again") {
            try await Task.sleep(for: .seconds(1))
            _ = try? await session.send(payments.url("/charge"), method: .put)
            return "payments was hit \(payments.hits("/charge")) times"
        }
        await narrator.scenario("payments recovers; after 1 s a trial call succeeds and closes the breaker") {
            payments.route("/charge", [.status(200, body: "charged")])
            try await Task.sleep(for: .seconds(1))
            return String(decoding: try await session.send(payments.url("/charge"), method: .put).data, as: UTF8.self)
        }
    }
}
