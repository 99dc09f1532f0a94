import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("RefusedPort", .timeLimit(.minutes(5)))
struct RefusedPortTests {
    @Test func refusesConnectionsUntilClosed() async throws {
        let down = try RefusedPort()
        defer { down.close() }

        await #expect {
            try await URLSessionHTTPTransport(session: URLSession(configuration: .ephemeral)).send(
                URLRequest(url: down.url("/x")))
        } throws: { error in
            (error as? URLError)?.code == .cannotConnectToHost
        }
        #expect(down.url("/x").absoluteString == "http://127.0.0.1:\(down.port)/x")
        #expect(throws: RawClient.Failure.self) { try RawClient(port: down.port) }
    }
}
