import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Retry safety over loopback", .timeLimit(.minutes(5)))
struct RetrySafetyOverLoopbackTests {
    @Test func theServerSeesOneKeyAcrossTheAttemptsOfAPost() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/pay", [.status(503), .status(503), .status(201)])
        let session = Session(
            interceptor: Interceptor(adapters: [IdempotencyKeyAdapter()], retriers: [RetryPolicy()]),
            clock: FastForwardClock())

        _ = try await session.send(server.url("/pay"), method: .post)

        let keys = server.requests("/pay").map { $0.value(forHeader: "Idempotency-Key") }
        #expect(keys.count == 3)
        #expect(Set(keys).count == 1 && keys[0] != nil)
    }

    @Test func aPostWithoutAKeyIsNotRetried() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/pay", [.status(503), .status(201)])
        let session = Session(retriers: [RetryPolicy()], clock: FastForwardClock())

        await #expect(throws: ReboundError.self) { try await session.send(server.url("/pay"), method: .post) }
        #expect(server.hits("/pay") == 1)
    }

    @Test func theSecondAttemptGoesToTheFallbackServerWhenThePrimaryIsDown() async throws {
        let primary = try RefusedPort()
        let fallback = try LoopbackServer()
        defer { fallback.stop() }
        fallback.route("/video/manifest", [.status(200, body: "#EXTM3U")])
        let handler = Retrier { request, _ in
            guard request.label == "manifest", request.retryCount < 3 else { return .doNotRetry }
            var moved = request.originalRequest
            moved.url = fallback.url(moved.url?.path ?? "/")
            return .retryWithRequest(moved, delay: .milliseconds(100))
        }
        let session = Session(retriers: [handler], clock: FastForwardClock())

        let response = try await session.send(primary.url("/video/manifest"), label: "manifest")

        #expect(String(decoding: response.data, as: UTF8.self) == "#EXTM3U")
        #expect(response.attempts.count == 2)
        #expect(response.attempts[0].failure?.urlError?.code == .cannotConnectToHost)
        #expect(response.request.url == fallback.url("/video/manifest"))
        #expect(fallback.hits("/video/manifest") == 1)
    }

    @Test func retryAfterFromARealServerSetsTheDelay() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/busy", [.status(503, headers: ["Retry-After": "3"]), .status(200)])
        let clock = FastForwardClock()
        let session = Session(retriers: [RetryPolicy()], clock: clock)

        _ = try await session.send(server.url("/busy"))

        #expect(clock.sleeps == [.seconds(3)])
    }

    @Test func aThousandConcurrentRequestsToAFailingServerStayWithinTheBudget() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/down", [.status(503)])
        let budget = RetryBudget()
        let session = Session(
            adapters: [budget], retriers: [RetryPolicy(retryLimit: 3)],
            clock: FastForwardClock())

        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<1_000 { group.addTask { _ = try? await session.send(server.url("/down")) } }
        }

        #expect(server.hits("/down") <= 1_000 + 500 / 5)
        #expect(server.hits("/down") >= 1_000)
    }

    @Test func aDeadlineCutsAHangingRequest() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/slow", [.status(200).delayed(by: .seconds(30))])
        let session = Session(deadline: .milliseconds(200))

        let error = await #expect(throws: ReboundError.self) { try await session.send(server.url("/slow")) }

        guard case .deadlineExceeded(.milliseconds(200), _) = error?.reason else {
            Issue.record("reason: \(String(describing: error?.reason))")
            return
        }
    }

    @Test func aStreamBodyIsNeverRetriedHalfAndEndsWithTheOriginalFailure() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/upload", [.status(503), .status(200)])
        var request = URLRequest(url: server.url("/upload"), method: .put)
        request.httpBodyStream = InputStream(data: Data(repeating: 65, count: 1_000))
        let session = Session(retriers: [RetryPolicy()], clock: FastForwardClock())

        let error = try await #require(throws: ReboundError.self) { try await session.send(request) }

        guard case .retryAborted(let stop as StreamBodyNotReplayable, .unacceptableStatusCode(503)) = error.reason
        else {
            Issue.record("reason: \(error.reason)")
            return
        }
        #expect("\(stop)" == "the request's body is a stream, which cannot be replayed")
        #expect(server.requests("/upload").map(\.body.count) == [1_000])
    }

    @Test func aBodyStreamAdapterGivesEveryAttemptTheWholeBody() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/upload", [.status(503), .status(200)])
        let body = Data((0..<1_000).map { UInt8($0 % 251) })
        let session = Session(retriers: [RetryPolicy()], clock: FastForwardClock())

        let response = try await session.send(
            server.url("/upload"), method: .put, adapters: [.bodyStream { InputStream(data: body) }])

        #expect(response.statusCode == 200)
        #expect(server.requests("/upload").map(\.body) == [body, body])
    }
}
