import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A gate that logs what it is asked and denies retries after `allowed` of them.
final class CountingGate: RetryGate {
    private let asked = Locked<[Duration]>([])
    let allowed: Int

    init(allowed: Int) { self.allowed = allowed }

    func admitRetry(_ request: RetryRequest, dueTo error: ReboundError, after delay: Duration) -> (any Error)? {
        let count = asked.withLock { asked -> Int in
            asked.append(delay)
            return asked.count
        }
        return count > allowed ? TestError("gate closed") : nil
    }

    var delays: [Duration] { asked.withLock { $0 } }
}

@Suite("Retry gates", .timeLimit(.minutes(5)))
struct RetryGateTests {
    @Test func aGateIsAskedAfterTheRetriersAndItsDenialEndsTheRequestKeepingTheFailure() async throws {
        let gate = CountingGate(allowed: 1)
        let observer = RecordingObserver()
        let transport = ScriptedTransport { _, _ in .status(503) }
        let session = Session(
            transport: transport,
            interceptor: Interceptor(
                retriers: [retryAnything(limit: 5, delay: .seconds(2))], observers: [observer], gates: [gate]),
            clock: FastForwardClock())

        let error = await #expect(throws: ReboundError.self) { try await session.send(request()) }

        #expect(transport.requestCount == 2)
        #expect(gate.delays == [.seconds(2), .seconds(2)])
        guard case .retryAborted(let denial as TestError, .unacceptableStatusCode(503)) = error?.reason else {
            Issue.record("reason: \(String(describing: error?.reason))")
            return
        }
        #expect(denial == TestError("gate closed"))
        #expect(observer.lines == ["#1 503 retry 2.0 seconds", "#2 503 failed 2"])
    }

    @Test func aGateIsNotAskedWhenNothingIsRetried() async throws {
        let gate = CountingGate(allowed: 0)
        let session = Session(
            transport: ScriptedTransport([.status(404)]),
            interceptor: Interceptor(retriers: [RetryPolicy()], gates: [gate]),
            clock: FastForwardClock())

        _ = try? await session.send(request())

        #expect(gate.delays.isEmpty)
    }

    @Test func gatesOfTheSessionAndOfTheRequestAreAllAskedAndOneDenialIsEnough() async throws {
        let open = CountingGate(allowed: 10)
        let closed = CountingGate(allowed: 0)
        let session = Session(
            transport: ScriptedTransport { _, _ in .status(503) },
            interceptor: Interceptor(retriers: [retryAnything(limit: 3)], gates: [open]), clock: FastForwardClock()
        )

        let error = await #expect(throws: ReboundError.self) {
            try await session.send(request(), interceptor: Interceptor(gates: [closed]))
        }

        #expect(open.delays.count == 1)
        #expect(closed.delays.count == 1)
        #expect(error?.attemptCount == 1)
        #expect(Interceptor(gates: [open, open]).gates.count == 1)
    }

    @Test func aSessionAndARequestTakeGatesOnTheirOwn() async throws {
        let open = CountingGate(allowed: 10)
        let closed = CountingGate(allowed: 0)
        let session = Session(
            transport: ScriptedTransport { _, _ in .status(503) }, retriers: [retryAnything(limit: 3)], gates: [open],
            clock: FastForwardClock())

        let error = try await #require(throws: ReboundError.self) {
            try await session.send(request(), gates: [closed])
        }

        #expect(open.delays.count == 1)
        #expect(closed.delays.count == 1)
        #expect(error.retrierError as? TestError == TestError("gate closed"))
    }
}
