import ExampleSupport
import Foundation
import Rebound
import ReboundTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Logs every failed attempt, decision and final outcome of real requests, with the token in the URL and the
/// Authorization header redacted. Offline; about three seconds.
@main
struct LoggingExample {
    static func main() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/catalog", [.status(503), .status(502), .status(200, body: "[]")])
        server.route("/broken", [.status(500)])
        server.route("/fine", [.status(200)])
        print("LoggingRetrier example: a loopback server on 127.0.0.1:\(server.port).\n")

        // Lines go to standard error by default; this sink prints them, and their level, to standard output.
        let session = Session(
            interceptor: Interceptor(
                adapters: [
                    .adapter { request, _ in
                        var request = request
                        request.setValue("Bearer s3cr3t", forHTTPHeaderField: "Authorization")
                        return request
                    }
                ],
                retriers: [
                    LoggingRetrier(wrapping: RetryPolicy(), minimumLevel: .debug, includesHeaders: true) { event in
                        print(
                            "  \(event.level.rawValue.padding(toLength: 6, withPad: " ", startingAt: 0)) \(event.message)"
                        )
                    }
                ]))

        let narrator = Narrator()
        await narrator.scenario("GET /catalog?token=…: 503, 502, then 200") {
            var components = URLComponents(url: server.url("/catalog"), resolvingAgainstBaseURL: false)!
            components.queryItems = [
                URLQueryItem(name: "token", value: "abc123"), URLQueryItem(name: "page", value: "1"),
            ]
            return "\(try await session.send(components.url!, label: "catalog").statusCode)"
        }
        await narrator.scenario("GET /broken: 500 three times, then RetryPolicy gives up") {
            "\(try await session.send(server.url("/broken")).statusCode)"
        }
        await narrator.scenario("GET /fine: a first-attempt success, logged at debug level") {
            "\(try await session.send(server.url("/fine")).statusCode)"
        }
    }
}
