import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

private struct RefreshFailed: Error, Equatable {}

/// 500 concurrent requests hit 401 together; exactly one refresh; when it fails, throws or stalls, all 500 end with a
/// clear error in bounded (manual-clock) time, and the interceptor can refresh again.
@Suite("AuthenticationInterceptor under a 401 storm", .timeLimit(.minutes(5)))
struct AuthenticationStormTests {
    enum Refresh: Sendable { case succeeds, fails, stalls }

    static let count = 500

    @Test("500 concurrent 401s cause exactly one refresh", arguments: [Refresh.succeeds, .fails, .stalls])
    func storm(refresh: Refresh) async throws {
        let clock = ManualClock()
        let gate = Gate()
        let stalled = Gate()
        let calls = Locked(0)
        let authenticator = TokenAuthenticator { token in
            let call = calls.increment()
            guard call == 1 else { return Token(value: token.value + 1) }
            // The first refresh waits until all 500 requests wait for it.
            await gate.wait()
            switch refresh {
            case .succeeds: return Token(value: 2)
            case .fails: throw RefreshFailed()
            case .stalls:
                await stalled.wait()
                return Token(value: 99)  // Too late: dropped.
            }
        }
        let auth = AuthenticationInterceptor(
            authenticator: authenticator, credential: Token(value: 1), refreshTimeout: .seconds(10), clock: clock)
        // 401 to the first token; every first attempt is in flight before any answer comes.
        let transport = ScriptedTransport(clock: clock) { request, number in
            let ok = request.value(forHTTPHeaderField: "Authorization") != "Bearer 1"
            return number <= Self.count
                ? ScriptedTransport.Step.status(401).delayed(by: .seconds(1)) : .status(ok ? 200 : 401)
        }
        let session = Session(transport: transport, interceptor: auth, clock: clock)

        let results = Task {
            await withTaskGroup(of: Result<Int, any Error>.self) { group in
                for _ in 0..<Self.count {
                    group.addTask {
                        do { return .success(try await session.send(exampleURL).statusCode) } catch {
                            return .failure(error)
                        }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
        }
        try await clock.waitForSleepers(Self.count)
        clock.advance(by: .seconds(1))
        // Every request got its 401 and waits for the one refresh.
        try await waitWhile { auth.pendingRefresh.waiters < Self.count }
        #expect(auth.pendingRefresh.refreshing)
        await gate.open()
        if refresh == .stalls {
            try await clock.waitForSleepers(1)  // the refresh's timer
            clock.advance(by: .seconds(10))
        }
        let ended = await results.value

        #expect(ended.count == Self.count)
        #expect(auth.refreshCount == 1)
        #expect(auth.pendingRefresh.waiters == 0 && !auth.pendingRefresh.refreshing)
        switch refresh {
        case .succeeds:
            #expect(ended.allSatisfy { (try? $0.get()) == 200 })
        case .fails:
            #expect(ended.allSatisfy { ($0.error as? ReboundError)?.retrierError is RefreshFailed })
        case .stalls:
            #expect(
                ended.allSatisfy {
                    ($0.error as? ReboundError)?.retrierError as? AuthenticationError
                        == .refreshTimedOut(after: .seconds(10))
                })
            #expect(
                "\(AuthenticationError.refreshTimedOut(after: .seconds(10)))"
                    == "the credential's refresh did not finish within 10 s; the next request refreshes again")
        }
        guard refresh != .succeeds else { return }

        // The interceptor is not wedged: the next 401 refreshes again, and succeeds.
        let response = try await session.send(exampleURL)
        #expect(response.statusCode == 200)
        #expect(auth.refreshCount == 2)
        #expect(auth.credential == Token(value: 2))
        // The stalled refresh's late result does not replace the newer credential.
        // The stalled refresh is still running (the second one may be too, until it has handed over its result).
        #expect(auth.unfinishedRefreshCalls >= (refresh == .stalls ? 1 : 0))
        await stalled.open()
        // Its late result has been handled once no call is left.
        try await waitWhile { auth.unfinishedRefreshCalls > 0 }
        #expect(auth.credential == Token(value: 2))
    }

    @Test("A refresh that throws CancellationError fails its waiters with refreshCancelled; none ends as cancelled")
    func aRefreshCancelledByTheAuthenticatorIsAFailureNotACancellation() async throws {
        let clock = ManualClock()
        let calls = Locked(0)
        let authenticator = TokenAuthenticator { token in
            let call = calls.increment()
            // The first refresh's own network call was cancelled, say.
            if call == 1 { throw CancellationError() }
            return Token(value: token.value + 1)
        }
        let auth = AuthenticationInterceptor(
            authenticator: authenticator, credential: Token(value: 1, expired: true), clock: clock)
        let transport = ScriptedTransport(clock: clock) { request, _ in
            .status(request.value(forHTTPHeaderField: "Authorization") == "Bearer 2" ? 200 : 401)
        }
        let session = Session(transport: transport, interceptor: auth, clock: clock)

        let error = await #expect(throws: ReboundError.self) { try await session.send(exampleURL) }
        #expect(error?.underlyingError as? AuthenticationError == .refreshCancelled)
        #expect(
            "\(AuthenticationError.refreshCancelled)"
                == "the credential's refresh was cancelled by the authenticator; the next request refreshes again")

        // After a 401 too: the request ends with the error, not as cancelled, and the next one refreshes again.
        auth.credential = Token(value: 1)
        calls.withLock { $0 = 0 }
        let afterA401 = await #expect(throws: ReboundError.self) { try await session.send(exampleURL) }
        #expect(afterA401?.retrierError as? AuthenticationError == .refreshCancelled)
        #expect(try await session.send(exampleURL).statusCode == 200)
        #expect(auth.refreshCount == 3)
    }

    @Test("Refreshes that time out count toward the refresh limit")
    func timedOutRefreshesCountTowardTheLimit() async throws {
        let clock = ManualClock()
        let stalled = Gate()
        let authenticator = TokenAuthenticator { _ in
            await stalled.wait()
            return Token(value: 99)
        }
        let auth = AuthenticationInterceptor(
            authenticator: authenticator, credential: Token(value: 1, expired: true),
            refreshLimit: AuthenticationRefreshLimit(maximumCount: 2, window: .seconds(60)),
            refreshTimeout: .seconds(1), clock: clock)
        let session = Session(
            transport: ScriptedTransport(clock: clock) { _, _ in .status(200) }, interceptor: auth, clock: clock)

        for _ in 0..<2 {
            let request = Task { try await session.send(exampleURL) }
            try await clock.waitForSleepers(1)  // the refresh's timer
            clock.advance(by: .seconds(1))
            let error = await #expect(throws: ReboundError.self) { try await request.value }
            #expect(error?.underlyingError as? AuthenticationError == .refreshTimedOut(after: .seconds(1)))
        }
        // Both timed-out refreshes may still run at the token server: a third is not started.
        let error = await #expect(throws: ReboundError.self) { try await session.send(exampleURL) }
        #expect(error?.underlyingError as? AuthenticationError == .excessiveRefresh(count: 2, window: .seconds(60)))
        #expect(auth.refreshCount == 2)
        await stalled.open()
    }

    @Test("A refresh time limit of zero or less traps naming the setting")
    func invalidTimeout() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = AuthenticationInterceptor(authenticator: TokenAuthenticator(), refreshTimeout: .zero)
        }
        expectStandardError(
            of: result, contains: "AuthenticationInterceptor.refreshTimeout must be longer than zero, got 0.0 seconds")
    }
}

extension Result {
    fileprivate var error: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
