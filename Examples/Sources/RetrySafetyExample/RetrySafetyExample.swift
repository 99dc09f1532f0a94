import ExampleSupport
import Foundation
import Rebound
import ReboundTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Retrying without making things worse: an idempotency key on a retried POST, a server's Retry-After, a fallback
/// host, a deadline, a retry budget that stops a storm, and the free `retry` function. Offline; about two seconds.
@main
struct RetrySafetyExample {
    static func main() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        let fallback = try LoopbackServer()
        defer { fallback.stop() }
        let down = try RefusedPort()
        server.route("/payments", [.status(503), .status(201, body: "paid")])
        server.route("/busy", [.status(503, headers: ["Retry-After": "1"]), .status(200, body: "served")])
        server.route("/slow", [.status(200, body: "late").delayed(by: .seconds(5))])
        server.route("/down", [.status(503)])
        fallback.route("/video/manifest", [.status(200, body: "#EXTM3U")])
        print(
            "Retry safety example: servers on 127.0.0.1:\(server.port) and :\(fallback.port); :\(down.port) refuses.\n")

        let narrator = Narrator()
        let log = LoggingRetrier(wrapping: RetryPolicy()) { event in narrator.say(event.message) }

        await narrator.scenario("POST /payments: 503 then 201, retried because it carries an Idempotency-Key") {
            let session = Session(interceptor: Interceptor(adapters: [IdempotencyKeyAdapter()], retriers: [log]))
            let response = try await session.send(server.url("/payments"), method: .post, body: Data("{}".utf8))
            let keys = Set(server.requests("/payments").compactMap { $0.value(forHeader: "Idempotency-Key") })
            return "\(response.statusCode) \(String(decoding: response.data, as: UTF8.self)); keys seen: \(keys.count)"
        }
        await narrator.scenario("GET /busy: 503 with Retry-After: 1, so RetryPolicy waits 1 s instead of 0.5 s") {
            let response = try await Session(interceptor: log).send(server.url("/busy"))
            return "\(response.statusCode) after waiting \(response.attempts[0].retryDelay!)"
        }
        await narrator.scenario("GET the manifest: the primary refuses, the handler moves the retry to the fallback") {
            let handler = Retrier { request, _ in
                guard request.label == "manifest", request.retryCount < 3 else { return .doNotRetry }
                var moved = request.originalRequest
                moved.url = fallback.url(moved.url!.path)
                return .retryWithRequest(moved, delay: .milliseconds(100))
            }
            let response = try await Session(retriers: [handler]).send(down.url("/video/manifest"), label: "manifest")
            return
                "\(String(decoding: response.data, as: UTF8.self)) from \(response.request.url!.host!):\(response.request.url!.port!)"
        }
        await narrator.scenario("GET /slow with a 300 ms deadline: the attempt is cut, the error keeps why") {
            _ = try await Session(deadline: .milliseconds(300)).send(server.url("/slow"))
            return "unexpected success"
        }
        await narrator.scenario("200 concurrent GET /down with a budget: at most 500/5 retries in all") {
            let budget = RetryBudget()
            let session = Session(
                adapters: [budget], retriers: [RetryPolicy(retryLimit: 3, exponentialBackoffScale: 0.01)])
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<200 { group.addTask { _ = try? await session.send(server.url("/down")) } }
            }
            let key = "127.0.0.1:\(server.port)"
            return
                "the server saw \(server.hits("/down")) requests for 200 calls; \(budget.tokens(for: key)) tokens left"
        }
        await narrator.scenario("retry(maxAttempts:) for any async operation, with seeded jitter") {
            let attempts = Counter()
            let value = try await retry(maxAttempts: 4) { () async throws -> Int in
                let attempt = await attempts.next()
                narrator.say("operation, attempt \(attempt)")
                if attempt < 3 { throw URLError(.timedOut) }
                return attempt
            } strategy: { _ in
                .backoff(.exponential(a: .milliseconds(100), b: 2).fullJitter(using: .seeded(7)))
            }
            return "succeeded at attempt \(value)"
        }
    }
}

/// Counts the operation's attempts.
actor Counter {
    private var value = 0

    func next() -> Int {
        value += 1
        return value
    }
}
