import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Retry budget accounting", .timeLimit(.minutes(5)))
struct BudgetAccountingTests {
    let clock = ManualClock()

    @Test("A retry after a 401 is not charged: a refresh says nothing about the host's health")
    func authenticationRetriesAreFree() async throws {
        let budget = RetryBudget(configuration: .init(initialTokens: 100, maximumTokens: 500))
        let transport = ScriptedTransport { request, _ in
            request.value(forHTTPHeaderField: "Authorization") == "Bearer 1" ? .status(401) : .status(503)
        }
        let auth = AuthenticationInterceptor(
            authenticator: TokenAuthenticator(), credential: Token(value: 1), clock: clock)
        let session = Session(transport: transport, adapters: [budget], interceptor: auth, clock: clock)

        // Ten requests, each refreshed and retried once after its 401, each ending with its retry's 503.
        for _ in 0..<10 { _ = try? await session.send(request()) }

        #expect(transport.requestCount == 11)
        #expect(budget.tokens(for: exampleURL) == 100)
        #expect(budget.requestsWithGrants == 0)
    }

    @Test("An attempt ended by the attempt timeout was sent: the retry that led to it stays charged")
    func aTimedOutAttemptIsCharged() async throws {
        let budget = RetryBudget(configuration: .init(initialTokens: 100, maximumTokens: 500))
        let transport = ScriptedTransport([.status(503), .hang, .status(200)])
        let session = Session(
            transport: transport, adapters: [budget], retriers: [RetryPolicy(backoff: .zero)],
            attemptTimeout: .seconds(5), clock: clock)
        let task = Task { try await session.send(request()) }
        try await transport.waitForRequests(2)
        try await clock.waitForSleepers(1)
        clock.advance(by: .seconds(5))

        let response = try await task.value

        #expect(response.attempts.map(\.statusCode) == [503, nil, 200])
        #expect(response.attempts[1].request != nil)
        // 5 for the retry after the 503, spent; 10 for the retry after the timeout, given back by the success.
        #expect(budget.tokens(for: exampleURL) == 95)
    }
}
