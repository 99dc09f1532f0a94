import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Idempotency safety", .timeLimit(.minutes(5)))
struct IdempotencyTests {
    @Test(arguments: [HTTPMethod.post, .patch, .connect, HTTPMethod(rawValue: "PURGE")])
    func retryPolicyNeverRetriesANonIdempotentMethod(method: HTTPMethod) async throws {
        let transport = ScriptedTransport([.status(503), .status(200)])
        let session = Session(transport: transport, retriers: [RetryPolicy()], clock: FastForwardClock())

        await #expect(throws: ReboundError.self) { try await session.send(request(method)) }
        #expect(transport.requestCount == 1)
    }

    @Test func aRequestWithAnIdempotencyKeyIsRetried() async throws {
        let transport = ScriptedTransport([.status(503), .status(200)])
        let session = Session(transport: transport, retriers: [RetryPolicy()], clock: FastForwardClock())
        var post = request(.post)
        post.setValue("order-42", forHTTPHeaderField: "Idempotency-Key")

        let response = try await session.send(post)

        #expect(response.retryCount == 1)
    }

    @Test func listingTheMethodIsTheExplicitOptIn() async throws {
        let transport = ScriptedTransport([.status(503), .status(200)])
        let policy = RetryPolicy(retryableHTTPMethods: RetryPolicy.defaultRetryableHTTPMethods.union([.post]))
        let session = Session(transport: transport, retriers: [policy], clock: FastForwardClock())

        #expect(try await session.send(request(.post)).retryCount == 1)
    }

    @Test func theAdapterKeepsOneKeyPerRequestAcrossAttempts() async throws {
        let transport = ScriptedTransport([.status(503), .status(502), .status(200), .status(200)])
        let session = Session(
            transport: transport, interceptor: Interceptor(adapters: [.idempotencyKey], retriers: [RetryPolicy()]),
            clock: FastForwardClock())

        _ = try await session.send(request(.post))
        _ = try await session.send(request(.post))

        let keys = transport.requests.map { $0.value(forHTTPHeaderField: "Idempotency-Key") }
        #expect(keys[0] != nil && keys[0] == keys[1] && keys[1] == keys[2])
        #expect(keys[3] != nil && keys[3] != keys[0])
        #expect(UUID(uuidString: keys[0] ?? "") != nil)
    }

    @Test func theAdapterLeavesOtherMethodsAndExistingKeysAlone() async throws {
        let adapter = IdempotencyKeyAdapter()
        let context = RequestContext()
        var keyed = request(.post)
        keyed.setValue("mine", forHTTPHeaderField: "Idempotency-Key")

        #expect(
            try await adapter.adapt(request(.get), context: context).value(forHTTPHeaderField: "Idempotency-Key") == nil
        )
        #expect(try await adapter.adapt(keyed, context: context).value(forHTTPHeaderField: "Idempotency-Key") == "mine")
        #expect(
            try await adapter.adapt(request(.patch), context: context).value(forHTTPHeaderField: "Idempotency-Key")
                == context.requestID.uuidString)
        #expect(
            try await IdempotencyKeyAdapter(methods: [.put]).adapt(request(.put), context: context)
                .value(forHTTPHeaderField: "Idempotency-Key") != nil)
    }
}
