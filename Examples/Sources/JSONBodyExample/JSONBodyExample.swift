import ExampleSupport
import Foundation
import Rebound
import ReboundTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Retries 200 responses whose JSON body says `"error_code": "RATE_LIMITED"` or `"TEMPORARY_ERROR"`, and shows the
/// error a caller gets when the body keeps saying so. Offline; about two and a half seconds.
@main
struct JSONBodyExample {
    static func main() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route(
            "/quote",
            [
                .json(#"{"error_code": "RATE_LIMITED"}"#), .json(#"{"error_code": "TEMPORARY_ERROR"}"#),
                .json(#"{"price": 12.5}"#),
            ])
        server.route("/stuck", [.json(#"{"error_code": "RATE_LIMITED"}"#)])
        server.route("/teapot", [.status(503, body: "<html>down</html>")])
        print("JSONBodyRetrier example: a loopback server on 127.0.0.1:\(server.port).\n")

        let narrator = Narrator()
        // The default delay is 5 s; half a second keeps the example short.
        let retrier = JSONBodyRetrier(
            path: "error_code", values: ["RATE_LIMITED", "TEMPORARY_ERROR"], retryLimit: 3, delay: .milliseconds(500))
        let session = Session(
            adapters: [retrier], interceptor: LoggingRetrier { event in narrator.say(event.message) })

        await narrator.scenario("GET /quote: 200 RATE_LIMITED, 200 TEMPORARY_ERROR, then a price") {
            String(decoding: try await session.send(server.url("/quote")).data, as: UTF8.self)
        }
        await narrator.scenario("GET /stuck: 200 RATE_LIMITED every time: 3 retries, then an error that says so") {
            String(decoding: try await session.send(server.url("/stuck")).data, as: UTF8.self)
        }
        await narrator.scenario("GET /teapot: 503 with an HTML body: no match, not retried by this retrier") {
            String(decoding: try await session.send(server.url("/teapot")).data, as: UTF8.self)
        }
    }
}
