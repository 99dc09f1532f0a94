import Foundation
import ReboundTesting
import Testing

@testable import Rebound

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Which requests make a backoff wait a breaker can end", .timeLimit(.minutes(5)))
struct BackoffWaitTests {
    /// Whether the retriers were handed a backoff wait when asked about the first failure of a request through
    /// `adapters`, a 503 then a 200, retried at once.
    func retriersGetAWait(adapters: [any RequestAdapter]) async throws -> Bool {
        let handedAWait = Locked<Bool?>(nil)
        let recorder = Retrier { request, _ in
            handedAWait.withLock { $0 = $0 ?? (request.backoffWait != nil) }
            return .doNotRetry
        }
        let session = Session(
            transport: ScriptedTransport([.status(503), .status(200)]), adapters: adapters,
            retriers: [recorder, RetryPolicy(backoff: .constant(.milliseconds(10)))], clock: FastForwardClock())

        let response = try await session.send(request())

        #expect(response.attempts.count == 2)
        return try #require(handedAWait.withLock { $0 } as Bool?)
    }

    @Test func aRequestABreakerLetThroughHasOne() async throws {
        #expect(try await retriersGetAWait(adapters: [CircuitBreaker(clock: FastForwardClock())]))
        #expect(try await retriersGetAWait(adapters: [CircuitBreakerRegistry(clock: FastForwardClock())]))
    }

    @Test func aThrottleOrNoChainMakesNone() async throws {
        #expect(try await !retriersGetAWait(adapters: [AdaptiveThrottle(clock: FastForwardClock())]))
        #expect(try await !retriersGetAWait(adapters: []))
    }
}
