import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

private struct Key: AuthenticationCredential {
    let value: String
    var requiresRefresh: Bool { false }
}

/// Sends the key as `Authorization: Bearer <key>` and as `X-Key: <key>`.
private struct KeyAuthenticator: Authenticator {
    func apply(_ credential: Key, to request: inout URLRequest) {
        request.setValue("Bearer \(credential.value)", forHTTPHeaderField: "Authorization")
        request.setValue(credential.value, forHTTPHeaderField: "X-Key")
    }

    func refresh(_ credential: Key) async throws -> Key { credential }

    func isRequest(_ request: URLRequest, authenticatedWith credential: Key) -> Bool {
        request.value(forHTTPHeaderField: "X-Key") == credential.value
    }
}

/// Two loopback servers on different ports are two origins: what the second receives shows what a redirect carried.
@Suite("Redirects over loopback", .timeLimit(.minutes(5)))
struct RedirectsOverLoopbackTests {
    @Test("A redirect to another origin never carries the credential, the caller's Cookie or Proxy-Authorization")
    func credentialStaysHome() async throws {
        let home = try LoopbackServer()
        defer { home.stop() }
        let other = try LoopbackServer()
        defer { other.stop() }
        home.route("/start", [.status(302, headers: ["Location": other.url("/land?token=SECRET").absoluteString])])
        other.route("/land", [.status(200, body: "landed")])

        let auth = AuthenticationInterceptor(authenticator: KeyAuthenticator(), credential: Key(value: "SECRET"))
        var request = URLRequest(url: home.url("/start"))
        request.setValue("session=SECRET", forHTTPHeaderField: "Cookie")
        request.setValue("Basic SECRET", forHTTPHeaderField: "Proxy-Authorization")
        let response = try await Session(interceptor: auth).send(request)

        #expect(String(decoding: response.data, as: UTF8.self) == "landed")
        let sentHome = try #require(home.requests("/start").first)
        #expect(sentHome.value(forHeader: "Authorization") == "Bearer SECRET")
        #expect(sentHome.value(forHeader: "X-Key") == "SECRET")
        let landed = try #require(other.requests("/land").first)
        for name in ["Authorization", "X-Key", "Cookie", "Proxy-Authorization"] {
            #expect(landed.value(forHeader: name) == nil, "\(name) reached the other origin")
        }
        #expect(home.hits("/start") == 1)
    }

    @Test("A second origin in the authenticator's hosts gets the credential on the hop")
    func scopeCoversBothOrigins() async throws {
        let home = try LoopbackServer()
        defer { home.stop() }
        let files = try LoopbackServer()
        defer { files.stop() }
        home.route("/start", [.status(307, headers: ["Location": files.url("/file").absoluteString])])
        files.route("/file", [.status(200)])

        let auth = AuthenticationInterceptor(
            authenticator: KeyAuthenticator(), credential: Key(value: "K"),
            hosts: ["127.0.0.1:\(home.port)", "127.0.0.1:\(files.port)"])
        _ = try await Session(interceptor: auth).send(home.url("/start"))
        #expect(files.requests("/file").first?.value(forHeader: "X-Key") == "K")
    }

    @Test("307 replays a POST's body to the other origin; 303 turns it into a GET without one")
    func methodAndBody() async throws {
        let home = try LoopbackServer()
        defer { home.stop() }
        let other = try LoopbackServer()
        defer { other.stop() }
        home.route("/307", [.status(307, headers: ["Location": other.url("/kept").absoluteString])])
        home.route("/303", [.status(303, headers: ["Location": other.url("/seen").absoluteString])])
        other.route("/kept", [.status(200)])
        other.route("/seen", [.status(200)])
        let session = Session()
        let body = Data(repeating: UInt8(ascii: "b"), count: 10_000)

        _ = try await session.send(home.url("/307"), method: .post, body: body)
        let kept = try #require(other.requests("/kept").first)
        #expect(kept.method == "POST")
        #expect(kept.body == body)

        _ = try await session.send(home.url("/303"), method: .post, body: body)
        let seen = try #require(other.requests("/seen").first)
        #expect(seen.method == "GET")
        #expect(seen.body.isEmpty)
    }

    @Test("A redirect loop ends with httpTooManyRedirects after the cap; doNotFollow returns the 302 itself")
    func loopAndDoNotFollow() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        let loop = server.url("/loop").absoluteString
        server.route("/loop", [.status(302, headers: ["Location": loop])])

        let session = Session(redirectHandler: Redirector(behavior: .follow, maximumRedirects: 5))
        let error = try await #require(throws: ReboundError.self) { try await session.send(server.url("/loop")) }
        #expect(error.urlError?.code == .httpTooManyRedirects)
        #expect(server.hits("/loop") == 6)

        let response = try await session.send(
            server.url("/loop"), validator: Validator.acceptableStatusCodes(200..<400),
            redirectHandler: Redirector.doNotFollow)
        #expect(response.statusCode == 302)
        #expect(server.hits("/loop") == 7)
    }
}
