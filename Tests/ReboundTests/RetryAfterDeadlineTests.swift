import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A server's `Retry-After` that ends after the request's deadline ends the request at once, whichever chain it has.
@Suite("Retry-After past the deadline", .timeLimit(.minutes(5)))
struct RetryAfterDeadlineTests {
    /// Chains that differ in what they make of the header: honour it, ignore it, hold it near their backoff, or never
    /// read it.
    enum Chain: String, CaseIterable, Sendable {
        case retryPolicy, ignoringRetryAfter, awsRetries2026, preset, loggingRetrier, closure

        func session(_ transport: ScriptedTransport, clock: ManualClock) -> Session {
            let deadline = Duration.seconds(2)
            switch self {
            case .retryPolicy:
                return Session(transport: transport, retriers: [RetryPolicy()], deadline: deadline, clock: clock)
            case .ignoringRetryAfter:
                return Session(
                    transport: transport, retriers: [RetryPolicy(retryAfter: .ignored)], deadline: deadline,
                    clock: clock)
            case .awsRetries2026:
                return Session(
                    transport: transport, adapters: [RetryBudget(configuration: .awsRetries2026)],
                    retriers: [RetryPolicy.awsRetries2026(using: .seeded(1))], deadline: deadline, clock: clock)
            case .preset:
                return Session(
                    transport: transport,
                    resilience: Resilience(clock: clock, random: .seeded(1), deadline: deadline), clock: clock)
            case .loggingRetrier:
                return Session(
                    transport: transport, retriers: [LoggingRetrier(wrapping: RetryPolicy(), sink: { _ in })],
                    deadline: deadline, clock: clock)
            case .closure:
                let soon = Retrier { request, _ in
                    request.retryCount < 2 ? .retryWithDelay(.milliseconds(100)) : .doNotRetry
                }
                return Session(transport: transport, retriers: [soon], deadline: deadline, clock: clock)
            }
        }
    }

    @Test(arguments: Chain.allCases, [429, 503])
    func aRetryAfterPastTheDeadlineEndsTheRequestAtOnceNamingTheResponse(chain: Chain, status: Int) async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport(
            [.response(status: status, headers: ["Retry-After": "10"]), .status(200)], clock: clock)

        let error = await #expect(throws: ReboundError.self) {
            try await chain.session(transport, clock: clock).send(request())
        }

        #expect(transport.requestCount == 1)
        #expect(clock.now.offset == .zero)  // nothing was slept
        if chain == .ignoringRetryAfter, status == 429 {
            // A policy that ignores the header does not retry a 429 at all: the response itself ends the request.
            guard case .unacceptableStatusCode(429) = error?.reason else {
                Issue.record("\(chain): \(String(describing: error?.reason))")
                return
            }
            #expect(
                error?.description.hasSuffix("failed with status 429 asking to wait 10 s; not retried (1 attempt)")
                    == true)
            #expect(error?.stopReason == .notRetried)
            return
        }
        guard case .deadlineExceeded(.seconds(2), .unacceptableStatusCode(status)) = error?.reason else {
            Issue.record("\(chain): \(String(describing: error?.reason))")
            return
        }
        #expect(
            error?.description
                == "GET https://api.example.com/items: attempt 1 failed with status \(status) asking to wait 10 s; "
                + "not retried: the wait asked ends after the deadline of 2 s (1 attempt)")
        #expect(error?.stopReason == .retryAfterPastDeadline)
    }

    @Test(arguments: [Chain.retryPolicy, .awsRetries2026, .preset])
    func aRetryAfterWithinTheDeadlineIsWaitedForAndRetried(chain: Chain) async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport(
            [.response(status: 503, headers: ["Retry-After": "1"]), .status(200)], clock: clock)
        let session = chain.session(transport, clock: clock)

        let task = Task { try await session.send(request()) }
        try await waitForSleep(of: .seconds(1), on: clock)
        clock.advance(by: .seconds(1))
        let response = try await task.value

        #expect(response.statusCode == 200)
        #expect(transport.requestCount == 2)
    }

    @Test func aRetryToAFallbackHostIsNotHeldToTheFirstHostsRetryAfter() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport(
            [.response(status: 503, headers: ["Retry-After": "10"]), .status(200)], clock: clock)
        let fallback = Retrier { request, _ in
            guard request.retryCount == 0 else { return .doNotRetry }
            return .retryWithRequest(URLRequest(url: URL(string: "https://fallback.example.com/items")!), delay: .zero)
        }
        let session = Session(transport: transport, retriers: [fallback], deadline: .seconds(2), clock: clock)

        let response = try await session.send(request())

        #expect(response.statusCode == 200)
        #expect(transport.requests.last?.url?.host == "fallback.example.com")
    }

    @Test func withoutADeadlineTheRetriersDelayStands() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport(
            [.response(status: 503, headers: ["Retry-After": "10"]), .status(200)], clock: clock)
        let soon = Retrier { request, _ in request.retryCount < 1 ? .retryWithDelay(.milliseconds(100)) : .doNotRetry }
        let session = Session(transport: transport, retriers: [soon], clock: clock)

        let task = Task { try await session.send(request()) }
        try await clock.waitForSleepers(1)
        clock.advance(by: .milliseconds(100))
        _ = try await task.value

        #expect(clock.sleeps == [.milliseconds(100)])
    }

    @Test func aMalformedRetryAfterIsNoSignal() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport(
            [.response(status: 503, headers: ["Retry-After": "in a while"]), .status(200)], clock: clock)
        let session = Chain.retryPolicy.session(transport, clock: clock)

        let task = Task { try await session.send(request()) }
        try await waitForSleep(of: .milliseconds(500), on: clock)
        clock.advance(by: .milliseconds(500))
        let response = try await task.value

        #expect(response.statusCode == 200)
    }
}
