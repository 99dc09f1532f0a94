import ExampleSupport
import Foundation
import Rebound
import ReboundTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

struct Token: AuthenticationCredential {
    let number: Int
    var requiresRefresh: Bool { false }
}

/// Sends `Bearer token-<n>`; a refresh takes 200 ms and gives the next number.
struct DemoAuthenticator: Authenticator {
    let narrator: Narrator

    func apply(_ credential: Token, to request: inout URLRequest) {
        request.setValue("Bearer token-\(credential.number)", forHTTPHeaderField: "Authorization")
    }

    func refresh(_ credential: Token) async throws -> Token {
        narrator.say("refreshing token-\(credential.number)…")
        try await Task.sleep(for: .milliseconds(200))
        narrator.say("…got token-\(credential.number + 1)")
        return Token(number: credential.number + 1)
    }

    func isRequest(_ request: URLRequest, authenticatedWith credential: Token) -> Bool {
        request.value(forHTTPHeaderField: "Authorization") == "Bearer token-\(credential.number)"
    }
}

/// Twenty concurrent requests meet a 401 with an expired token: one refresh, each retried once. A request to
/// another host never carries the token. Offline; under a second.
@main
struct AuthenticationExample {
    static func main() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/me") { request, _ in
            request.value(forHeader: "Authorization") == "Bearer token-2" ? .status(200, body: "Ada") : .status(401)
        }
        server.route("/public", [.status(200, body: "hello")])
        print("AuthenticationInterceptor example: a loopback server on 127.0.0.1:\(server.port).\n")

        let narrator = Narrator()
        let auth = AuthenticationInterceptor(
            authenticator: DemoAuthenticator(narrator: narrator), credential: Token(number: 1),
            hosts: ["127.0.0.1:\(server.port)"])
        let session = Session(interceptor: auth)

        await narrator.scenario("20 concurrent GET /me with token-1, which the server rejects") {
            let responses = try await withThrowingTaskGroup(of: Response.self) { group in
                for _ in 0..<20 { group.addTask { try await session.send(server.url("/me")) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let retried = responses.filter { $0.retryCount == 1 }.count
            return "\(responses.count) succeeded, \(retried) after one retry; \(auth.refreshCount) refresh"
        }
        await narrator.scenario("GET http://localhost/public: another host, so no Authorization header") {
            _ = try await session.send(URL(string: "http://localhost:\(server.port)/public")!)
            let header = server.requests("/public").last?.value(forHeader: "Authorization")
            return "the server saw Authorization: \(header ?? "(none)")"
        }
    }
}
