import ExampleSupport
import Foundation
import Rebound
import ReboundTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Starts a loopback server with flaky routes and shows, line by line, requests being adapted, failing, backing
/// off and succeeding, with timings. Offline; finishes in about four seconds.
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

        print("Rebound demo: a loopback server on 127.0.0.1:\(server.port) with flaky routes.\n")

        let narrator = Narrator()
        let session = Session(
            interceptor: Interceptor(
                adapters: [
                    .modifying { request, context in
                        request.setValue(context.requestID.uuidString, forHTTPHeaderField: "X-Request-ID")
                        request.setValue("Bearer demo-token", forHTTPHeaderField: "Authorization")
                        narrator.say(
                            "attempt \(context.attempt): \(request.method) \(request.url!.path)  (adapted: +X-Request-ID, +Authorization)"
                        )
                    }
                ],
                retriers: [NarratedRetrier("RetryPolicy", RetryPolicy(), narrator: narrator)]
            ))

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
            let retryRateLimits = NarratedRetrier(
                "the request's own retrier",
                Retrier { request, error in
                    guard case .validationFailed(is RateLimited) = error.reason, request.retryCount < 3 else {
                        return .doNotRetry
                    }
                    return .retryWithDelay(.milliseconds(300))
                }, narrator: narrator)
            let response = try await session.send(
                server.url("/quote"), interceptor: retryRateLimits, validator: rejectErrorBodies)
            return "\(response.statusCode) \(String(decoding: response.data, as: UTF8.self))"
        }

        print(
            "Server hits: "
                + ["/catalog", "/profile", "/orders", "/quote"].map { "\($0) \(server.hits($0))" }.joined(
                    separator: ", "))
        server.stop()
    }
}

struct RateLimited: Error {}

/// Wraps a retrier and prints each failure and the decision taken.
struct NarratedRetrier: RequestInterceptor {
    let name: String
    let retrier: any RequestRetrier
    let narrator: Narrator

    init(_ name: String, _ retrier: any RequestRetrier, narrator: Narrator) {
        self.name = name
        self.retrier = retrier
        self.narrator = narrator
    }

    func retry(_ request: RetryRequest, dueTo error: ReboundError) async -> RetryResult {
        let result = await retrier.retry(request, dueTo: error)
        let decision =
            switch result {
            case .retry: "retry now"
            case .retryWithDelay(let delay): "retry in \(delay)"
            case .retryWithRequest(let request, let delay): "retry \(request.url?.absoluteString ?? "") in \(delay)"
            case .doNotRetry: "does not retry"
            case .doNotRetryWithError(let error): "fail with \(error)"
            }
        narrator.say("attempt \(request.attempts.count) failed: \(error.reason) → \(name) \(decision)")
        return result
    }
}
