import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Circuit breakers over loopback", .timeLimit(.minutes(5)))
struct CircuitBreakerOverLoopbackTests {
    /// Sends `count` requests at once and returns how many failed because a breaker stopped them.
    private func sendConcurrently(_ count: Int, to url: URL, through session: Session) async -> Int {
        await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<count {
                group.addTask {
                    do {
                        _ = try await session.send(url)
                        return false
                    } catch let error as ReboundError {
                        return error.underlyingError is CircuitBreakerOpenError
                    } catch {
                        return false
                    }
                }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
    }

    @Test func twoHundredConcurrentRequestsToAFailingHostSendOneTrialWhileHalfOpen() async throws {
        let failing = try LoopbackServer()
        defer { failing.stop() }
        let healthy = try LoopbackServer()
        defer { healthy.stop() }
        failing.route("/down", [.status(503)])
        healthy.route("/up", [.status(200, body: "ok")])
        let breakerClock = ManualClock()
        let registry = CircuitBreakerRegistry(clock: breakerClock)
        let session = Session(
            adapters: [registry], retriers: [RetryPolicy()], clock: FastForwardClock())

        _ = await sendConcurrently(200, to: failing.url("/down"), through: session)
        let hitsWhileClosed = failing.hits("/down")
        let failingKey = try #require(CircuitBreakerRegistry.hostKey(for: URLRequest(url: failing.url("/down"))))
        #expect(registry.breaker(for: failingKey).state == .open)

        // Open: nothing reaches the server, and the other host is not affected.
        #expect(await sendConcurrently(200, to: failing.url("/down"), through: session) == 200)
        #expect(failing.hits("/down") == hitsWhileClosed)
        #expect(await sendConcurrently(20, to: healthy.url("/up"), through: session) == 0)
        #expect(healthy.hits("/up") == 20)

        // Half-open: one trial call, which fails and opens the breaker again.
        breakerClock.advance(by: .seconds(30))
        let stopped = await sendConcurrently(200, to: failing.url("/down"), through: session)
        #expect(failing.hits("/down") - hitsWhileClosed == 1)
        // The trial's own retry is stopped by the re-opened breaker, so every request ends with the breaker's error.
        #expect(stopped == 200)
        #expect(registry.breaker(for: failingKey).state == .open)

        // Back up: the next trial closes it.
        failing.route("/down", [.status(200)])
        breakerClock.advance(by: .seconds(30))
        #expect(await sendConcurrently(1, to: failing.url("/down"), through: session) == 0)
        #expect(registry.breaker(for: failingKey).state == .closed)
    }
}
