import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A transport on a URLSession of its own, so that the first request opens a new connection (libcurl silently
/// re-sends a request once on a kept-alive connection that the server closed).
private func freshTransport() -> URLSessionHTTPTransport {
    URLSessionHTTPTransport(session: URLSession(configuration: .ephemeral))
}

@Suite("Retrying real HTTP over loopback", .timeLimit(.minutes(5)))
struct RetryOverLoopbackTests {
    @Test func twoServiceUnavailablesThenSuccessTakesThreeHitsAndTheDefaultDelays() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/flaky", [.status(503), .status(503), .status(200, body: "ok")])
        let clock = FastForwardClock()
        let session = Session(retriers: [RetryPolicy()], clock: clock)

        let response = try await session.send(server.url("/flaky"))

        #expect(String(decoding: response.data, as: UTF8.self) == "ok")
        #expect(server.hits("/flaky") == 3)
        #expect(clock.sleeps == [.milliseconds(500), .seconds(1)])
        #expect(response.attempts.map(\.statusCode) == [503, 503, 200])
        #expect(response.attempts.map(\.retryDelay) == [.milliseconds(500), .seconds(1), nil])
    }

    @Test func givesUpAfterTheRetryLimitWithTheLastResponse() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/down", [.status(503, headers: ["Retry-After": "120"], body: "maintenance")])
        let session = Session(retriers: [RetryPolicy()], clock: FastForwardClock())

        let error = try await #require(throws: ReboundError.self) { try await session.send(server.url("/down")) }

        #expect(server.hits("/down") == 3)
        #expect(error.attemptCount == 3)
        #expect(error.statusCode == 503)
        #expect(error.response?.value(forHTTPHeaderField: "Retry-After") == "120")
        #expect(error.data == Data("maintenance".utf8))
    }

    @Test(arguments: [false, true])
    func aRetryAfterPastTheDeadlineEndsTheRequestAtOnceNamingTheResponse(preset: Bool) async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        // Deadlines far enough away that a loaded machine does not reach them before the retriers answer.
        server.route("/busy", [.status(503, headers: ["Retry-After": "45"]), .status(200)])
        let session =
            preset
            ? Session(resilience: Resilience()) : Session(retriers: [RetryPolicy()], deadline: .seconds(20))

        let error = try await #require(throws: ReboundError.self) { try await session.send(server.url("/busy")) }

        let deadline = preset ? Duration.seconds(30) : .seconds(20)
        // Not cut short in a backoff: the 503 is the reason's last failure, the one attempt sent.
        guard case .deadlineExceeded(deadline, .unacceptableStatusCode(503)) = error.reason else {
            Issue.record("reason: \(error.reason)")
            return
        }
        #expect(server.hits("/busy") == 1)
        // Which rule ended it is timing's to say over real loopback: on a machine loaded enough that the 503 comes just
        // before the deadline, the deadline ends the retriers' decision first. `RetryAfterDeadlineTests` checks the
        // rule on a manual clock.
        #expect(error.stopReason == .retryAfterPastDeadline || error.stopReason == .deadline)
        #expect(error.description.contains("attempt 1 failed with status 503 asking to wait 45 s; "), "\(error)")
    }

    @Test func postToA503IsNotRetried() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/pay", [.status(503), .status(200)])
        let session = Session(retriers: [RetryPolicy()], clock: FastForwardClock())

        let error = try await #require(throws: ReboundError.self) {
            try await session.send(server.url("/pay"), method: .post, body: Data("{}".utf8))
        }

        #expect(server.hits("/pay") == 1)
        guard case .unacceptableStatusCode(503) = error.reason else {
            Issue.record("reason: \(error.reason)")
            return
        }
    }

    @Test func droppedConnectionIsRetried() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/drop", [.drop, .status(200, body: "ok")])
        let session = Session(transport: freshTransport(), retriers: [RetryPolicy()], clock: FastForwardClock())

        let response = try await session.send(server.url("/drop"))

        #expect(server.hits("/drop") == 2)
        #expect(response.attempts.count == 2)
        #expect(response.attempts[0].failure?.urlError != nil)
    }

    @Test func connectionLostRetryPolicyRetriesADroppedConnection() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/drop", [.drop, .truncated(), .status(200, body: "ok")])
        let session = Session(
            transport: freshTransport(), retriers: [ConnectionLostRetryPolicy()], clock: FastForwardClock())

        let response = try await session.send(server.url("/drop"))

        #expect(server.hits("/drop") == 3)
        #expect(
            response.attempts.compactMap(\.failure?.urlError?.code).allSatisfy {
                ConnectionLostRetryPolicy.connectionLostURLErrorCodes.contains($0)
            })
    }

    @Test func refusedConnectionKeepsCannotConnectToHost() async throws {
        let down = try RefusedPort()
        defer { down.close() }
        let session = Session(
            transport: freshTransport(), retriers: [ConnectionLostRetryPolicy()], clock: FastForwardClock())

        let error = try await #require(throws: ReboundError.self) { try await session.send(down.url("/gone")) }

        #expect(error.urlError?.code == .cannotConnectToHost)
        #expect(error.attemptCount == 1)  // never connected, so not a lost connection
    }

    @Test func retryPolicyRetriesARefusedConnection() async throws {
        let down = try RefusedPort()
        defer { down.close() }
        let clock = FastForwardClock()
        let session = Session(transport: freshTransport(), retriers: [RetryPolicy()], clock: clock)

        let error = try await #require(throws: ReboundError.self) { try await session.send(down.url("/gone")) }

        #expect(error.attempts.map { $0.failure?.urlError?.code } == Array(repeating: .cannotConnectToHost, count: 3))
        #expect(clock.sleeps == [.milliseconds(500), .seconds(1)])
    }

    @Test func headerAddedByAnAdapterReachesTheServerOnEveryAttempt() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/flaky", [.status(503), .status(500), .status(200)])
        let session = Session(
            interceptor: Interceptor(
                adapters: [
                    .adapter { request, context in
                        var request = request
                        request.setValue(context.requestID.uuidString, forHTTPHeaderField: "X-Request-ID")
                        request.setValue("\(context.attempt)", forHTTPHeaderField: "X-Attempt")
                        return request
                    }
                ],
                retriers: [RetryPolicy()]),
            clock: FastForwardClock())

        _ = try await session.send(server.url("/flaky"))

        let received = server.requests("/flaky")
        #expect(received.map { $0.value(forHeader: "X-Attempt") } == ["1", "2", "3"])
        #expect(Set(received.compactMap { $0.value(forHeader: "X-Request-ID") }).count == 1)
    }

    @Test func failingValidatorOnA200TriggersARetry() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/quote", [.json(#"{"error_code": "RATE_LIMITED"}"#), .json(#"{"price": 12}"#)])
        let rejectErrorCodes = Validator.successfulStatusCodes.and { _, data in
            let json = try JSONSerialization.jsonObject(with: data) as? [String: Any]
            if let code = json?["error_code"] as? String { throw BodyError(code: code) }
        }
        let retryBodyErrors = Retrier { request, error in
            guard case .validationFailed(let cause as BodyError) = error.reason, cause.code == "RATE_LIMITED",
                request.retryCount < 3
            else { return .doNotRetry }
            return .retryWithDelay(.seconds(5))
        }
        let clock = FastForwardClock()
        let session = Session(retriers: [retryBodyErrors], validator: rejectErrorCodes, clock: clock)

        let response = try await session.send(server.url("/quote"))

        #expect(String(decoding: response.data, as: UTF8.self) == #"{"price": 12}"#)
        #expect(server.hits("/quote") == 2)
        #expect(clock.sleeps == [.seconds(5)])
    }

    @Test func serviceUnavailableWithABodyIsRetried() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        let page = String(repeating: "<p>Down for maintenance</p>", count: 2_000)
        server.route(
            "/m", [.status(503, headers: ["Content-Type": "text/html"], body: page), .status(200, body: "ok")])
        let session = Session(retriers: [RetryPolicy()], clock: FastForwardClock())

        let response = try await session.send(server.url("/m"))

        #expect(response.statusCode == 200)
        #expect(server.hits("/m") == 2)
    }

    @Test func cancellingDuringAnAttemptEndsWithCancellationAndNothingMoreReachesTheServer() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/slow", [.status(503).delayed(by: .seconds(30)), .status(200)])
        let session = Session(transport: freshTransport(), retriers: [RetryPolicy()], clock: FastForwardClock())

        let task = Task { try await session.send(server.url("/slow")) }
        try await server.waitForRequests(1)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(server.hits("/slow") == 1)
    }

    @Test func cancellingDuringARealBackoffEndsWithCancellation() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/down", [.status(503)])
        // A 30-second backoff on the real clock: only cancellation can end this test quickly.
        let session = Session(retriers: [RetryPolicy(exponentialBackoffScale: 30)])

        let task = Task { try await session.send(server.url("/down")) }
        try await server.waitForRequests(1)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(server.hits("/down") == 1)
    }

    @Test func manyConcurrentRequestsEachEndWithOneOutcome() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/mixed") { _, number in number % 2 == 1 ? .status(503) : .status(200) }
        let session = Session(retriers: [RetryPolicy()], clock: FastForwardClock())

        let attemptCounts = await withTaskGroup(of: Int?.self) { group in
            for _ in 0..<200 {
                group.addTask {
                    do {
                        return try await session.send(server.url("/mixed")).attempts.count
                    } catch let error as ReboundError {
                        return error.attemptCount
                    } catch {
                        return nil
                    }
                }
            }
            return await group.reduce(into: [Int?]()) { $0.append($1) }
        }

        #expect(attemptCounts.count == 200)
        #expect(!attemptCounts.contains(nil))
        #expect(attemptCounts.reduce(0) { $0 + ($1 ?? 0) } == server.hits("/mixed"))
    }
}

private struct BodyError: Error {
    let code: String
}
