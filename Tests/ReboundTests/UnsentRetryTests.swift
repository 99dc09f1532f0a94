import Foundation
import ReboundTesting
import Testing

@testable import Rebound

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A POST with a body, as an app sends an order.
private func post() -> URLRequest {
    var order = request(.post)
    order.httpBody = Data("{}".utf8)
    return order
}

/// A transport that forwards to `wrapped` and says nothing of when its failures came.
private struct SilentTransport: HTTPTransport {
    let wrapped: ScriptedTransport

    func exchange(_ request: URLRequest) async throws -> (Data, ResponseHead) {
        try await wrapped.exchange(request)
    }
}

/// Asks `policy` about the last of `failures`, the `URLError` codes of a request's attempts in order, each of which
/// failed before sending when `beforeSending` says so.
private func decision(
    _ policy: RetryPolicy, method: HTTPMethod, failures: [URLError.Code], beforeSending: Bool = true
) async -> RetryResult {
    let sent = request(method)
    let attempts = failures.enumerated().map { index, code in
        Attempt(
            number: index + 1, request: sent, responseHead: nil, failure: .transportFailed(error: URLError(code)),
            duration: .zero, failedBeforeSending: beforeSending)
    }
    let reason = ReboundError.Reason.transportFailed(error: URLError(failures.last ?? .cannotConnectToHost))
    let retryRequest = RetryRequest(
        originalRequest: sent, lastRequest: sent, response: nil, data: nil, attempts: attempts)
    let error = ReboundError(reason: reason, originalRequest: sent, lastRequest: sent, attempts: attempts)
    return await policy.retry(retryRequest, dueTo: error)
}

@Suite("Retries of what never left", .timeLimit(.minutes(5)))
struct UnsentRetryTests {
    @Test func aPostThatNeverLeftIsRetriedUpToItsOwnLimit() async {
        let policy = RetryPolicy(unsentRetryLimit: 2)

        #expect(await decision(policy, method: .post, failures: [.cannotConnectToHost]).delay == .milliseconds(500))
        #expect(
            await decision(policy, method: .post, failures: [.cannotFindHost, .cannotConnectToHost]).delay
                == .seconds(1))
        // Both used: a POST is then not retried, as any POST.
        let spent = await decision(
            policy, method: .post, failures: [.cannotConnectToHost, .cannotConnectToHost, .dnsLookupFailed])
        #expect(spent.retryRequired == false)
        // Off by default, and never for a failure that may have come after sending, or a code the policy does not retry.
        #expect(await decision(RetryPolicy(), method: .post, failures: [.cannotConnectToHost]).retryRequired == false)
        #expect(
            await decision(policy, method: .post, failures: [.cannotConnectToHost], beforeSending: false).retryRequired
                == false)
        #expect(await decision(policy, method: .post, failures: [.serverCertificateUntrusted]).retryRequired == false)
    }

    @Test func retriesOfWhatNeverLeftAreCountedApartFromTheRetryLimit() async {
        let policy = RetryPolicy(retryLimit: 1, unsentRetryLimit: 2)
        // Two retries after refused connections, then one of the policy's own.
        #expect(
            await decision(
                policy, method: .get, failures: [.cannotConnectToHost, .cannotConnectToHost, .cannotConnectToHost]
            )
            .retryRequired)
        let spent = await decision(
            policy, method: .get, failures: [.cannotConnectToHost, .cannotConnectToHost, .timedOut, .timedOut])
        guard case .doNotRetryBecause(.retryLimit) = spent else {
            Issue.record("\(spent)")
            return
        }
    }

    @Test func theRepeatedFailureStopDoesNotStopThem() async {
        let policy = RetryPolicy(stopsAfterRepeatedFailure: true, unsentRetryLimit: 2)
        #expect(
            await decision(policy, method: .get, failures: [.cannotConnectToHost, .cannotConnectToHost]).retryRequired)
        #expect(
            await decision(
                RetryPolicy(stopsAfterRepeatedFailure: true), method: .get,
                failures: [.cannotConnectToHost, .cannotConnectToHost]
            ).retryRequired == false)
    }

    @Test func theSessionRetriesAPostWhoseConnectionWasRefusedAndNotOneWhoseConnectionWasLost() async throws {
        let refused = ScriptedTransport([.urlError(.cannotConnectToHost), .status(201)])
        let session = Session(
            transport: refused, retriers: [RetryPolicy(unsentRetryLimit: 1)], clock: FastForwardClock())
        #expect(try await session.send(post()).statusCode == 201)
        #expect(refused.requestCount == 2)

        for code in [URLError.Code.networkConnectionLost, .timedOut] {
            let lost = ScriptedTransport([.urlError(code), .status(201)])
            let session = Session(
                transport: lost, retriers: [RetryPolicy(unsentRetryLimit: 2)], clock: FastForwardClock())
            let error = try await #require(throws: ReboundError.self) { try await session.send(post()) }
            #expect(error.urlError?.code == code)
            #expect(lost.requestCount == 1)
        }
    }

    @Test(arguments: [URLError.Code.cannotConnectToHost, .notConnectedToInternet, .callIsActive])
    func aTransportThatSaysNothingMayHaveSentIt(code: URLError.Code) async throws {
        let scripted = ScriptedTransport([.urlError(code), .status(201)])
        let session = Session(
            transport: SilentTransport(wrapped: scripted), retriers: [RetryPolicy(unsentRetryLimit: 2)],
            clock: FastForwardClock())

        _ = try? await session.send(post())

        #expect(scripted.requestCount == 1)
    }

    @Test(arguments: [URLError.Code.cannotConnectToHost, .notConnectedToInternet, .callIsActive])
    func aRedirectHopThatFailsBeforeSendingIsNotRetried(code: URLError.Code) async throws {
        // The first hop reached the server: the POST it carried was sent.
        let transport = ScriptedTransport([
            .response(status: 307, headers: ["Location": "https://api.example.com/elsewhere"]),
            .urlError(code), .status(201),
        ])
        let session = Session(
            transport: transport, retriers: [RetryPolicy(unsentRetryLimit: 2)], clock: FastForwardClock())

        let error = try await #require(throws: ReboundError.self) { try await session.send(post()) }

        #expect(error.urlError?.code == code)
        #expect(transport.requestCount == 2)
    }

    @Test func thePresetSendsAPostAgainAfterTwoRefusedConnectionsAndNoMore() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport(
            [.urlError(.cannotConnectToHost), .urlError(.cannotConnectToHost), .status(201)], clock: clock)
        let session = Session(
            transport: transport, resilience: Resilience(clock: clock, random: .seeded(1), deadline: nil), clock: clock)

        let ended = Locked(false)
        let task = Task {
            defer { ended.withLock { $0 = true } }
            return try await session.send(post())
        }
        // Each backoff, unless the request ends without one.
        for _ in 0..<2 {
            try await waitWhile { clock.pendingSleepCount == 0 && !ended.withLock { $0 } }
            clock.advance(by: .seconds(1))
        }
        #expect(try await task.value.statusCode == 201)

        let down = ScriptedTransport(Array(repeating: .urlError(.cannotConnectToHost), count: 4), clock: clock)
        let downSession = Session(
            transport: down, resilience: Resilience(clock: clock, random: .seeded(2), deadline: nil), clock: clock)
        let failing = Task { try await downSession.send(post()) }
        for _ in 0..<2 {
            try await clock.waitForSleepers(1)
            clock.advance(by: .seconds(1))
        }
        let error = await #expect(throws: ReboundError.self) { try await failing.value }
        #expect(error?.stopReason == .notRetried)
        #expect(down.requestCount == 3)
    }

    @Test func theMostAttemptsCountTheUnsentRetries() async throws {
        let transport = ScriptedTransport([.status(200)])
        let session = Session(
            transport: transport, adapters: [AttemptContextAdapter.plain],
            retriers: [RetryPolicy(retryLimit: 2, unsentRetryLimit: 2)])

        _ = try await session.send(request())

        #expect(transport.requests.first?.value(forHTTPHeaderField: "X-Max-Attempts") == "5")
    }

    @Test func aNegativeLimitIsRejectedNamingIt() {
        let error = #expect(throws: ConfigurationError.self) { try RetryPolicy.validated(unsentRetryLimit: -1) }
        #expect(error?.message == "RetryPolicy.unsentRetryLimit must be 0 or more, got -1")
    }

    @Test func theTransportsSayWhichFailuresCameBeforeSending() {
        let transport = URLSessionHTTPTransport()
        for code in [
            URLError.Code.cannotFindHost, .dnsLookupFailed, .cannotConnectToHost, .secureConnectionFailed,
            .notConnectedToInternet,
        ] {
            #expect(transport.failedBeforeSending(URLError(code)))
            #expect(ScriptedTransport([]).failedBeforeSending(URLError(code)))
        }
        for code in [URLError.Code.networkConnectionLost, .timedOut, .badServerResponse, .cancelled] {
            #expect(!transport.failedBeforeSending(URLError(code)))
        }
        #expect(!transport.failedBeforeSending(CancellationError()))
        #expect(!SilentTransport(wrapped: ScriptedTransport([])).failedBeforeSending(URLError(.cannotConnectToHost)))
    }
}
