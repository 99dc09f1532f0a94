import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Adapter.modifying")
struct ModifyingAdapterTests {
    @Test func changesTheRequestInPlaceAndSeesTheContext() async throws {
        let adapter: any RequestAdapter = .modifying { request, context in
            request.setValue("\(context.attempt)", forHTTPHeaderField: "X-Attempt")
            request.httpMethod = "PUT"
        }

        let adapted = try await adapter.adapt(request(), context: RequestContext(attempt: 3))

        #expect(adapted.value(forHTTPHeaderField: "X-Attempt") == "3")
        #expect(adapted.httpMethod == "PUT")
    }

    @Test func aThrowingClosureFailsTheAttempt() async throws {
        let session = Session(
            transport: ScriptedTransport([.status(200)]),
            interceptor: Adapter.modifying { _, _ in throw TestError("no") }, clock: ImmediateClock())

        let error = await #expect(throws: ReboundError.self) { try await session.send(request()) }

        #expect(error?.underlyingError as? TestError == TestError("no"))
    }
}
