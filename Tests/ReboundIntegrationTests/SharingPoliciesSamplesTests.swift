import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The samples of Docs/SharingPolicies.md, kept compiling and true here against a loopback server; change both
/// together.
@Suite("Sharing policies samples", .timeLimit(.minutes(5)))
struct SharingPoliciesSamplesTests {
    typealias OAuth = BuiltInsDocumentationSamplesTests.OAuth
    typealias Token = BuiltInsDocumentationSamplesTests.Token

    @Test func aSharedBaseInterceptorNestedInEachServicesOwn() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/pay", [.status(503), .status(201)])
        server.route("/find", [.status(200)])

        let base = Interceptor(
            adapters: [.modifying { request, _ in request.setValue("Rebound/1.0", forHTTPHeaderField: "User-Agent") }],
            retriers: [RetryPolicy()]
        )

        let payments = Session(
            adapters: [IdempotencyKeyAdapter()],  // this service's own parts come first
            interceptor: base,  // then the shared ones
            clock: FastForwardClock()
        )
        let search = Session(interceptor: base)

        let paid = try await payments.send(server.url("/pay"), method: .post)
        _ = try await search.send(server.url("/find"))

        #expect(paid.statusCode == 201)
        let keys = server.requests("/pay").map { $0.value(forHeader: "Idempotency-Key") }
        #expect(keys.count == 2 && keys[0] != nil && keys[0] == keys[1])
        #expect(server.requests("/find").map { $0.value(forHeader: "User-Agent") } == ["Rebound/1.0"])
    }

    @Test func sharedInstancesAcrossSessions() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/down", [.status(503)])
        let tokens = BuiltInsDocumentationSamplesTests.TokenService()
        let savedToken = Token(access: "fresh", refresh: "r", expiry: Date().addingTimeInterval(3_600))

        let budget = RetryBudget()
        let breakers = CircuitBreakerRegistry()
        let auth = AuthenticationInterceptor(
            authenticator: OAuth(tokens: tokens), credential: savedToken, hosts: [server.baseURL.host!])

        func makeSession() -> Session {
            Session(
                adapters: [breakers, budget], retriers: [RetryPolicy(retryLimit: 0)], interceptor: auth,
                clock: FastForwardClock())
        }
        let catalog = makeSession()
        let orders = makeSession()

        for _ in 0..<3 { _ = try? await catalog.send(server.url("/down")) }
        for _ in 0..<2 { _ = try? await orders.send(server.url("/down")) }
        let error = try await #require(throws: ReboundError.self) { try await orders.send(server.url("/down")) }

        // Five failures from two sessions opened the one breaker of the host: the sixth fails fast.
        #expect(error.circuitBreakerOpenError != nil)
        #expect(server.hits("/down") == 5)
        #expect(server.requests("/down").allSatisfy { $0.value(forHeader: "Authorization") == "Bearer fresh" })
    }

    @Test func aLabelledRequestIsRetriedHarderByItsOwnRetrier() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/checkout", [.status(503), .status(503), .status(503), .status(200)])
        let session = Session(retriers: [RetryPolicy(retryLimit: 1)], clock: FastForwardClock())
        let request = URLRequest(url: server.url("/checkout"))

        let patient = Retrier { request, error in
            guard request.label == "checkout", request.retryCount < 5 else { return .doNotRetry }
            return .retryWithDelay(.seconds(1))
        }
        let response = try await session.send(request, label: "checkout", retriers: [patient])

        #expect(response.statusCode == 200)
        #expect(response.attempts.map(\.retryDelay) == [.milliseconds(500), .seconds(1), .seconds(1), nil])
    }
}
