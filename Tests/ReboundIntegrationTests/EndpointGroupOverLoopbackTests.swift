import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An endpoint group over real HTTP: two servers, one of them refusing connections, then started.
@Suite("Endpoint groups over loopback", .timeLimit(.minutes(5)))
struct EndpointGroupOverLoopbackTests {
    /// A transport on a URLSession of its own, whose connections no other test holds.
    private func freshTransport(timeout: TimeInterval = 60) -> URLSessionHTTPTransport {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        return URLSessionHTTPTransport(session: URLSession(configuration: configuration))
    }

    @Test func requestsMoveToTheOtherServerWhileOneIsDownAndComeBackOnceItIsUp() async throws {
        let down = try RefusedPort()
        let other = try LoopbackServer()
        defer { other.stop() }
        other.route("/v1/items", [.status(200, body: "other")])
        // Ejections are timed on a manual clock, so that the test says when the first endpoint's ejection ends.
        let clock = ManualClock()
        let group = EndpointGroup(
            name: "items", endpoints: [.init(down.url("/v1")), .init(other.url("/v1"))],
            outlierDetection: .init(consecutiveFailures: 3), clock: clock)
        let session = Session(
            transport: freshTransport(), adapters: [group], retriers: [RetryPolicy(backoff: .zero)], clock: clock)

        // While the first server refuses connections, each request's retry goes to the other, and every one succeeds;
        // after three failures in a row the first is ejected, and requests go to the other at once.
        var attempts: [Int] = []
        for _ in 0..<6 {
            let response = try await session.send(down.url("/v1/items"))
            #expect(String(decoding: response.data, as: UTF8.self) == "other")
            attempts.append(response.attempts.count)
        }
        #expect(attempts == [2, 2, 2, 1, 1, 1])
        #expect(other.hits("/v1/items") == 6)

        // The first server starts; once its ejection ends, its trial succeeds and it takes the traffic again.
        let started = try down.startListening()
        defer { started.stop() }
        started.route("/v1/items", [.status(200, body: "first")])
        clock.advance(by: .seconds(30))
        for _ in 0..<3 {
            let response = try await session.send(down.url("/v1/items"))
            #expect(String(decoding: response.data, as: UTF8.self) == "first")
            #expect(response.attempts.count == 1)
        }
        #expect(started.hits("/v1/items") == 3)
        #expect(group.isInRotation(.init(down.url("/v1"))))
    }

    @Test func aHedgeGoesToTheOtherServerNotTheOneWhoseAttemptIsInFlight() async throws {
        let slow = try LoopbackServer()
        defer { slow.stop() }
        let fast = try LoopbackServer()
        defer { fast.stop() }
        // Never answered: the hedge wins first, and the client drops the slow attempt.
        slow.route("/v1/items", [.status(200, body: "slow").delayed(by: .seconds(600))])
        fast.route("/v1/items", [.status(200, body: "fast")])
        let group = EndpointGroup(endpoints: [.init(slow.url("/v1")), .init(fast.url("/v1"))])
        let session = Session(
            transport: freshTransport(timeout: 600), adapters: [group], hedging: Hedging(delay: .milliseconds(100)))

        let response = try await session.send(slow.url("/v1/items"))

        #expect(String(decoding: response.data, as: UTF8.self) == "fast")
        #expect(response.attempts.map(\.hedge) == [0, 1])
        #expect(response.attempts.map { $0.request?.url?.port } == [Int(slow.port), Int(fast.port)])
        // The slow server may not have read the first attempt yet when the hedge wins: at most once.
        #expect(slow.hits("/v1/items") <= 1)
        #expect(fast.hits("/v1/items") == 1)
    }
}
