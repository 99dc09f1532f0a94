import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The samples of README.md and Docs/Testing.md, kept compiling and true here; change both together.
@Suite("Documentation samples", .timeLimit(.minutes(5)))
struct DocumentationSamplesTests {
    struct Item: Decodable, Equatable {
        let name: String
    }

    @Test func readmeQuickStart() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/items", [.status(503), .json(#"[{"name": "kettle"}]"#)])
        let token = "t0k3n"

        // README: Quick start (with the loopback server's URL and an FastForwardClock so the test does not wait).
        let session = Session(
            adapters: [
                .modifying { request, _ in
                    request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
                }
            ],
            retriers: [RetryPolicy()], clock: FastForwardClock())
        let items: [Item] = try await session.send(server.url("/items")).decode()

        #expect(items == [Item(name: "kettle")])
        #expect(
            server.requests("/items").map { $0.value(forHeader: "Authorization") } == ["Bearer t0k3n", "Bearer t0k3n"])
    }

    /// The retrier that Docs/Testing.md tests: waits 1 s, then 2 s, and gives up after two retries.
    struct MyRetrier: RequestInterceptor {
        func retry(_ request: RetryRequest, dueTo error: ReboundError) async -> RetryResult {
            request.retryCount < 2 ? .retryWithDelay(.seconds(request.retryCount + 1)) : .doNotRetry
        }
    }

    @Test func testingGuideUnitTest() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport([.status(503), .status(503), .status(503)])
        let session = Session(transport: transport, interceptor: MyRetrier(), clock: clock)

        let task = Task { try await session.send(URL(string: "https://example.com/a")!) }
        try await clock.waitForSleepers(1)
        #expect(clock.sleeps == [.seconds(1)])
        clock.advance(by: .seconds(1))
        try await clock.waitForSleepers(1)
        clock.advance(by: .seconds(2))
        let error = try await #require(throws: ReboundError.self) { try await task.value }
        #expect(error.attemptCount == 3)
    }

    @Test func testingGuideIntegrationTest() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/flaky", [.status(503), .status(503), .status(200, body: "ok")])
        let clock = FastForwardClock()
        let session = Session(retriers: [RetryPolicy()], clock: clock)

        _ = try await session.send(server.url("/flaky"))

        #expect(server.hits("/flaky") == 3)
        #expect(clock.sleeps == [.milliseconds(500), .seconds(1)])
    }
}
