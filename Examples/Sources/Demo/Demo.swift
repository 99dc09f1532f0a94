import ExampleSupport
import Foundation
import Rebound
import ReboundTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Starts a loopback server with flaky routes and shows, line by line, requests being adapted, failing, backing
/// off and succeeding, and a slow request hedged, with timings. Offline; finishes in about two and a half seconds.
@main
struct Demo {
    static func main() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        // Every reply closes its connection, so that the dropped connection below reaches Rebound: on a kept-alive
        // connection, URLSession on Linux (libcurl) would quietly re-send the request once by itself.
        let close = ["Connection": "close"]
        server.route(
            "/catalog",
            [
                .status(503, headers: close, body: "busy"), .status(503, headers: close, body: "busy"),
                .status(200, headers: close, body: #"{"items": ["kettle", "teapot"]}"#),
            ])
        server.route("/profile", [.drop, .status(200, headers: close, body: #"{"name": "Ada"}"#)])
        server.route("/orders", [.status(503, headers: close), .status(201, headers: close)])
        server.route(
            "/quote",
            [
                .status(200, headers: close, body: #"{"error_code": "RATE_LIMITED"}"#),
                .status(200, headers: close, body: #"{"price": 12.5}"#),
            ])

        server.route("/search") { _, number in
            number == 1
                ? .status(200, headers: close, body: #"{"hits": 3, "from": "slow replica"}"#).delayed(by: .seconds(3))
                : .status(200, headers: close, body: #"{"hits": 3, "from": "fast replica"}"#)
        }

        print("Rebound demo: a loopback server on 127.0.0.1:\(server.port) with flaky routes.\n")

        // The README's shape: adapters and retriers, plus an observer that narrates each attempt's end once, with what
        // the whole chain decided.
        let narrator = Narrator()
        let session = Session(
            adapters: [
                .modifying { request, context in
                    request.setValue(context.requestID.uuidString, forHTTPHeaderField: "X-Request-ID")
                    request.setValue("Bearer demo-token", forHTTPHeaderField: "Authorization")
                    narrator.say(
                        "attempt \(context.attempt): \(request.method) \(request.url!.path)  (adapted: +X-Request-ID, +Authorization)"
                    )
                }
            ],
            retriers: [RetryPolicy()],
            observers: [NarratedAttempts(narrator: narrator)])

        await narrator.scenario("GET /catalog answers 503, 503, then 200: RetryPolicy backs off 0.5 s, then 1 s") {
            let response = try await session.send(server.url("/catalog"))
            return "\(response.statusCode) \(String(decoding: response.data, as: UTF8.self))"
        }
        await narrator.scenario("GET /profile: the server drops the connection once, then answers") {
            let response = try await session.send(server.url("/profile"))
            return "\(response.statusCode) \(String(decoding: response.data, as: UTF8.self))"
        }
        await narrator.scenario("POST /orders answers 503: POST is not idempotent, so it is not retried") {
            let response = try await session.send(server.url("/orders"), method: .post, body: Data("{}".utf8))
            return "\(response.statusCode)"
        }
        await narrator.scenario("GET /quote answers 200 with an error body: a validator and a retrier of its own") {
            let rejectErrorBodies = Validator.successfulStatusCodes.and { _, data in
                if String(decoding: data, as: UTF8.self).contains("RATE_LIMITED") { throw RateLimited() }
            }
            let retryRateLimits = Retrier { request, error in
                guard case .validationFailed(is RateLimited) = error.reason, request.retryCount < 3 else {
                    return .doNotRetry
                }
                return .retryWithDelay(.milliseconds(300))
            }
            let response = try await session.send(
                server.url("/quote"), retriers: [retryRateLimits], validator: rejectErrorBodies)
            return "\(response.statusCode) \(String(decoding: response.data, as: UTF8.self))"
        }

        await narrator.scenario("GET /search: the first answer would take 3 s; a hedge after 200 ms answers first") {
            let response = try await session.send(server.url("/search"), hedging: Hedging(delay: .milliseconds(200)))
            return "\(response.statusCode) \(String(decoding: response.data, as: UTF8.self))"
        }

        print(
            "Server hits: "
                + ["/catalog", "/profile", "/orders", "/quote", "/search"].map { "\($0) \(server.hits($0))" }.joined(
                    separator: ", "))
        server.stop()
    }
}

struct RateLimited: Error {}

/// Prints one line per failed attempt: why it failed and what the chain decided (retry after a delay, or not).
struct NarratedAttempts: AttemptObserver {
    let narrator: Narrator

    func attemptDidFinish(_ outcome: AttemptOutcome) async {
        if outcome.attempt.wasCancelled {
            narrator.say("attempt \(outcome.attempt.number) cancelled: another attempt answered first")
            return
        }
        guard let failure = outcome.failure else { return }
        let decision =
            switch outcome.decision {
            case .retry(let delay): "retry in \(delay)"
            case .failed: "not retried"
            case .succeeded, .cancelled: "\(outcome.decision)"
            // AttemptDecision may gain cases in a minor release (Docs/APIStability.md).
            @unknown default: "\(outcome.decision)"
            }
        narrator.say("attempt \(outcome.attempt.number) failed: \(failure) → \(decision)")
    }
}
