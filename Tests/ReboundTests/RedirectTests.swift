import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A transport that answers by URL: each path maps to a step; unknown URLs get 404.
private func web(_ routes: [String: ScriptedTransport.Step]) -> ScriptedTransport {
    ScriptedTransport { request, _ in
        routes[request.url?.absoluteString ?? ""] ?? .status(404)
    }
}

private func redirect(_ status: Int = 302, to location: String) -> ScriptedTransport.Step {
    .response(status: status, headers: ["Location": location])
}

/// Remembers every hop it is told about.
private final class HopRecorder: AttemptObserver {
    let hops = Locked<[RedirectHop]>([])
    let finished = Locked(0)
    func attemptWasRedirected(_ hop: RedirectHop) async { hops.withLock { $0.append(hop) } }
    func attemptDidFinish(_ outcome: AttemptOutcome) async { finished.withLock { $0 += 1 } }
}

@Suite("Redirects")
struct RedirectTests {
    @Test("Same-origin hops keep the credential headers; a relative Location resolves against the request")
    func sameOrigin() async throws {
        let transport = web([
            "https://api.example.com/a": redirect(to: "/b?x=1"),
            "https://api.example.com/b?x=1": .status(200),
        ])
        var request = URLRequest(url: URL(string: "https://api.example.com/a")!)
        request.setValue("Bearer SECRET", forHTTPHeaderField: "Authorization")
        request.setValue("id=1", forHTTPHeaderField: "Cookie")
        let response = try await Session(transport: transport).send(request)

        #expect(response.statusCode == 200)
        #expect(transport.requests.count == 2)
        let hop = transport.requests[1]
        #expect(hop.url?.absoluteString == "https://api.example.com/b?x=1")
        #expect(hop.value(forHTTPHeaderField: "Authorization") == "Bearer SECRET")
        #expect(hop.value(forHTTPHeaderField: "Cookie") == "id=1")
        #expect(response.request.url == hop.url)
        #expect(response.attempts.count == 1)
    }

    @Test(
        "A hop to another origin drops Authorization, Proxy-Authorization, Cookie and the handler's headers, for good",
        arguments: ["https://evil.example/x", "http://api.example.com/x", "https://api.example.com:8443/x"])
    func crossOrigin(target: String) async throws {
        let transport = web([
            "https://api.example.com/a": redirect(to: target),
            target: redirect(307, to: "https://api.example.com/back"),
            "https://api.example.com/back": .status(200),
        ])
        var request = URLRequest(url: URL(string: "https://api.example.com/a")!)
        request.setValue("Bearer SECRET", forHTTPHeaderField: "authorization")
        request.setValue("Basic SECRET", forHTTPHeaderField: "Proxy-Authorization")
        request.setValue("session=SECRET", forHTTPHeaderField: "Cookie")
        request.setValue("SECRET", forHTTPHeaderField: "X-API-Key")
        request.setValue("kept", forHTTPHeaderField: "Accept-Language")
        let session = Session(
            transport: transport, redirectHandler: Redirector(behavior: .follow, strippedHeaders: ["x-api-key"]))
        _ = try await session.send(request)

        #expect(transport.requests.count == 3)
        for hop in transport.requests.dropFirst() {
            for name in ["Authorization", "Proxy-Authorization", "Cookie", "X-API-Key"] {
                #expect(hop.value(forHTTPHeaderField: name) == nil, "\(name) reached \(hop.url!)")
            }
            #expect(hop.value(forHTTPHeaderField: "Accept-Language") == "kept")
        }
    }

    @Test("The authenticator's hosts apply to each hop: in scope the credential follows, out of scope it never does")
    func authenticatorScope() async throws {
        let transport = web([
            "https://api.example.com/a": redirect(to: "https://files.example.com/f"),
            "https://files.example.com/f": redirect(to: "https://cdn.other.net/f"),
            "https://cdn.other.net/f": redirect(to: "https://api.example.com/done"),
            "https://api.example.com/done": .status(200),
        ])
        let auth = AuthenticationInterceptor(
            authenticator: HeaderAuthenticator(), credential: Token(value: 7),
            hosts: ["api.example.com", "files.example.com"])
        _ = try await Session(transport: transport, interceptor: auth).send(URL(string: "https://api.example.com/a")!)

        let sent = transport.requests.map { ($0.url!.host!, $0.value(forHTTPHeaderField: "X-Token")) }
        #expect(sent.count == 4)
        #expect(sent[0] == ("api.example.com", "7"))
        #expect(sent[1] == ("files.example.com", "7"))
        #expect(sent[2] == ("cdn.other.net", nil))
        #expect(sent[3] == ("api.example.com", "7"))
    }

    @Test("A hop from https to http gets no credential, though its host is one of the authenticator's")
    func aCredentialNeverFollowsARedirectIntoClearText() async throws {
        let transport = web([
            "https://api.example.com/a": redirect(to: "http://api.example.com/b"),
            "http://api.example.com/b": redirect(to: "https://api.example.com/c"),
            "https://api.example.com/c": .status(200),
        ])
        let auth = AuthenticationInterceptor(
            authenticator: HeaderAuthenticator(), credential: Token(value: 7), hosts: ["api.example.com"])
        _ = try await Session(transport: transport, interceptor: auth).send(URL(string: "https://api.example.com/a")!)

        let sent = transport.requests.map { ($0.url!.absoluteString, $0.value(forHTTPHeaderField: "X-Token")) }
        #expect(sent.count == 3)
        #expect(sent[0] == ("https://api.example.com/a", "7"))
        #expect(sent[1] == ("http://api.example.com/b", nil))
        // Back on https, the hop is in scope again.
        #expect(sent[2] == ("https://api.example.com/c", "7"))
    }

    @Test("A credential applied before a logout is still dropped from a hop to another origin")
    func aLogoutDuringTheAttemptLeavesNoCredentialOnAHopElsewhere() async throws {
        let auth = AuthenticationInterceptor(
            authenticator: HeaderAuthenticator(), credential: Token(value: 7), hosts: ["api.example.com"])
        let transport = ScriptedTransport { request, _ in
            switch request.url?.absoluteString {
            case "https://api.example.com/a":
                // Logged out while the first hop is in flight: no credential is current when the next hop is made.
                auth.credential = nil
                return redirect(to: "https://cdn.other.net/f")
            case "https://cdn.other.net/f": return .status(200)
            default: return .status(404)
            }
        }
        _ = try await Session(transport: transport, interceptor: auth).send(URL(string: "https://api.example.com/a")!)

        let sent = transport.requests.map { ($0.url?.host ?? "-", $0.value(forHTTPHeaderField: "X-Token")) }
        #expect(sent.map(\.0) == ["api.example.com", "cdn.other.net"])
        // The credential the attempt was adapted with, in a header of its own, never reaches the other origin.
        #expect(sent.map(\.1) == ["7", nil])
    }

    @Test("A handler cannot put a credential back on a hop outside its scope")
    func handlerCannotLeak() async throws {
        let transport = web([
            "https://api.example.com/a": redirect(to: "https://evil.example/x"),
            "https://evil.example/x": .status(200),
        ])
        let sneaky = Redirector(
            behavior: .modify { _, next, _ in
                var next = next
                next.setValue("Bearer SECRET", forHTTPHeaderField: "Authorization")
                return next
            })
        var request = URLRequest(url: URL(string: "https://api.example.com/a")!)
        request.setValue("Bearer SECRET", forHTTPHeaderField: "Authorization")
        _ = try await Session(transport: transport, redirectHandler: sneaky).send(request)
        #expect(transport.requests.last?.value(forHTTPHeaderField: "Authorization") == nil)
    }

    @Test(
        "303 (and 301/302 after a POST) becomes a GET without a body; 307 and 308 keep method and body",
        arguments: [
            (303, "POST", "GET", false), (303, "PUT", "GET", false), (303, "HEAD", "HEAD", true),
            (301, "POST", "GET", false), (302, "POST", "GET", false), (302, "PUT", "PUT", true),
            (307, "POST", "POST", true), (308, "PUT", "PUT", true),
        ])
    func methodAndBody(status: Int, method: String, expected: String, keepsBody: Bool) async throws {
        let transport = web([
            "https://api.example.com/a": redirect(status, to: "/b"),
            "https://api.example.com/b": .status(200),
        ])
        var request = URLRequest(url: URL(string: "https://api.example.com/a")!)
        request.httpMethod = method
        request.httpBody = Data("payload".utf8)
        request.setValue("text/plain", forHTTPHeaderField: "Content-Type")
        _ = try await Session(transport: transport).send(request)

        let hop = try #require(transport.requests.last)
        #expect(transport.requests.count == 2)
        #expect(hop.httpMethod == expected)
        #expect(hop.httpBody == (keepsBody ? Data("payload".utf8) : nil))
        #expect(hop.value(forHTTPHeaderField: "Content-Type") == (keepsBody ? "text/plain" : nil))
    }

    @Test("A 307 or 308 whose body is a stream stops: the 3xx reaches the chain and nothing is sent again")
    func streamBodyStops() async throws {
        let transport = web(["https://api.example.com/upload": redirect(307, to: "/elsewhere")])
        var request = URLRequest(url: URL(string: "https://api.example.com/upload")!)
        request.httpMethod = "PUT"
        request.httpBodyStream = InputStream(data: Data("payload".utf8))
        let session = Session(transport: transport, retriers: [retryAnything(limit: 3)])
        let error = try await #require(throws: ReboundError.self) { try await session.send(request) }
        #expect(error.response?.statusCode == 307)
        #expect(transport.requests.count == 1)
    }

    @Test("Redirects are capped at 20 hops by default and at the handler's limit; past it, httpTooManyRedirects")
    func cap() async throws {
        let loop = ScriptedTransport { request, number in
            redirect(to: "https://api.example.com/hop\(number)")
        }
        let error = try await #require(throws: ReboundError.self) {
            try await Session(transport: loop).send(exampleURL)
        }
        #expect((error.underlyingError as? URLError)?.code == .httpTooManyRedirects)
        #expect(loop.requests.count == 21)

        let short = ScriptedTransport { _, number in redirect(to: "https://api.example.com/hop\(number)") }
        let session = Session(transport: short, redirectHandler: Redirector(behavior: .follow, maximumRedirects: 2))
        let capped = try await #require(throws: ReboundError.self) { try await session.send(exampleURL) }
        #expect((capped.underlyingError as? URLError)?.code == .httpTooManyRedirects)
        #expect(short.requests.count == 3)
    }

    @Test(
        "doNotFollow hands the 3xx to the chain: the validator decides, and a request's handler overrides the session's"
    )
    func doNotFollow() async throws {
        let routes: [String: ScriptedTransport.Step] = [
            "https://api.example.com/items": redirect(301, to: "/moved"),
            "https://api.example.com/moved": .status(200),
        ]
        let transport = web(routes)
        let session = Session(transport: transport, redirectHandler: Redirector.doNotFollow)
        let error = try await #require(throws: ReboundError.self) { try await session.send(exampleURL) }
        #expect(error.response?.statusCode == 301)

        let accepted = try await session.send(exampleURL, validator: Validator.acceptableStatusCodes(200..<400))
        #expect(accepted.statusCode == 301)
        #expect(accepted.httpResponse.value(forHTTPHeaderField: "Location") == "/moved")

        let followed = try await session.send(exampleURL, redirectHandler: Redirector.follow)
        #expect(followed.statusCode == 200)
        #expect(transport.requests.count == 4)
    }

    @Test("A modifying handler rewrites the next hop or stops it; a rewrite to a non-HTTP URL stops")
    func modify() async throws {
        let transport = web([
            "https://api.example.com/items": redirect(to: "http://api.example.com/items"),
            "https://api.example.com/secure": .status(200),
        ])
        let upgrade = Redirector(
            behavior: .modify { _, next, _ in
                var next = next
                next.url = URL(string: "https://api.example.com/secure")
                return next
            })
        let response = try await Session(transport: transport, redirectHandler: upgrade).send(exampleURL)
        #expect(response.request.url?.absoluteString == "https://api.example.com/secure")

        let toFile = Redirector(
            behavior: .modify { _, next, _ in
                var next = next
                next.url = URL(fileURLWithPath: "/etc/passwd")
                return next
            })
        let error = try await #require(throws: ReboundError.self) {
            try await Session(transport: transport, redirectHandler: toFile).send(exampleURL)
        }
        #expect(error.response?.statusCode == 302)
        #expect(transport.requests.allSatisfy { $0.url?.scheme == "https" || $0.url?.scheme == "http" })
    }

    @Test(
        "A redirect without a usable Location is not followed",
        arguments: ["", "   ", "file:///etc/passwd", "javascript:alert(1)", "http://", "ftp://example.com/x"])
    func unusableLocation(location: String) async throws {
        let transport = web(["https://api.example.com/items": redirect(to: location)])
        let error = try await #require(throws: ReboundError.self) {
            try await Session(transport: transport).send(exampleURL)
        }
        #expect(error.response?.statusCode == 302)
        #expect(transport.requests.count == 1)
    }

    @Test("Observers see each hop, in order, before the next is sent; the attempt is reported once")
    func observersSeeHops() async throws {
        let transport = web([
            "https://api.example.com/items": redirect(to: "https://b.example/1"),
            "https://b.example/1": redirect(303, to: "https://c.example/2?token=SECRET"),
            "https://c.example/2?token=SECRET": .status(200),
        ])
        let recorder = HopRecorder()
        _ = try await Session(transport: transport, observers: [recorder]).send(exampleURL, label: "items")

        let hops = recorder.hops.withLock { $0 }
        #expect(hops.map(\.number) == [1, 2])
        #expect(hops.map(\.response.statusCode) == [302, 303])
        #expect(hops.map { $0.next.url?.host } == ["b.example", "c.example"])
        #expect(hops.allSatisfy { $0.attempt == 1 && $0.label == "items" })
        #expect(recorder.finished.withLock { $0 } == 1)
        #expect(!hops[1].description.contains("SECRET"))
    }

    @Test("A retry after a redirected attempt starts again from the caller's URL")
    func retryStartsOver() async throws {
        let transport = web([
            "https://api.example.com/items": redirect(to: "https://b.example/busy"),
            "https://b.example/busy": .status(503),
        ])
        let session = Session(transport: transport, retriers: [retryAnything(limit: 1)])
        let error = try await #require(throws: ReboundError.self) { try await session.send(exampleURL) }
        #expect(error.attempts.count == 2)
        #expect(
            transport.requests.map { $0.url!.host! } == ["api.example.com", "b.example"] + [
                "api.example.com", "b.example",
            ])
        #expect(error.response?.statusCode == 503)
    }

    @Test(
        "A POST whose redirect to a GET fails is not sent again: the retry would repeat the POST, not the GET",
        arguments: [URLError.Code.networkConnectionLost, .notConnectedToInternet])
    func aPostRedirectedToAGetIsJudgedAsThePost(code: URLError.Code) async throws {
        let transport = web([
            "https://api.example.com/orders": redirect(303, to: "https://api.example.com/orders/7"),
            "https://api.example.com/orders/7": .urlError(code),
        ])
        let monitor = ManualConnectivityMonitor(isConnected: true)
        let session = Session(
            transport: transport,
            retriers: [OfflineRetrier(monitor: monitor), RetryPolicy(backoff: .zero, unsentRetryLimit: 2)])
        var post = URLRequest(url: URL(string: "https://api.example.com/orders")!)
        post.httpMethod = "POST"
        post.httpBody = Data("{}".utf8)

        let error = try await #require(throws: ReboundError.self) { try await session.send(post) }

        #expect(error.attempts.count == 1)
        #expect(transport.requests.map { $0.httpMethod ?? "GET" } == ["POST", "GET"])
    }

    @Test("A 401 or a body's signal at the GET a POST was redirected to does not send the POST again")
    func credentialsAndBodySignalsAtARedirectsHopDoNotRepeatThePost() async throws {
        func postAndHop(_ hop: ScriptedTransport.Step) -> ScriptedTransport {
            web([
                "https://api.example.com/orders": redirect(303, to: "https://api.example.com/orders/7"),
                "https://api.example.com/orders/7": hop,
            ])
        }
        var post = URLRequest(url: URL(string: "https://api.example.com/orders")!)
        post.httpMethod = "POST"

        let unauthorized = postAndHop(.status(401))
        let auth = AuthenticationInterceptor(authenticator: TokenAuthenticator(), credential: Token(value: 1))
        let authenticated = Session(transport: unauthorized, interceptor: auth, clock: FastForwardClock())
        await #expect(throws: ReboundError.self) { try await authenticated.send(post) }
        #expect(unauthorized.requests.map { $0.httpMethod ?? "GET" } == ["POST", "GET"])

        let signalled = postAndHop(.response(status: 503, body: #"{"error_code": "TEMPORARY_ERROR"}"#))
        let signals = Session(
            transport: signalled, adapters: [JSONBodyRetrier(values: ["TEMPORARY_ERROR"])], clock: FastForwardClock())
        await #expect(throws: ReboundError.self) { try await signals.send(post) }
        #expect(signalled.requests.map { $0.httpMethod ?? "GET" } == ["POST", "GET"])
    }

    @Test("Under hedging, a POST redirected to a GET is not held to the attempts of a request that may be repeated")
    func hedgingJudgesARedirectedPostAsThePost() async throws {
        let transport = web([
            "https://api.example.com/orders": redirect(303, to: "https://api.example.com/orders/7"),
            "https://api.example.com/orders/7": .status(503),
        ])
        // A retrier of the app's that retries anything, three times; hedging's cap of two attempts holds retries and
        // hedges of requests that may be repeated, which the POST is not, whatever its hop.
        let session = Session(
            transport: transport, retriers: [retryAnything(limit: 3)],
            hedging: Hedging(delay: .seconds(1), maximumAttempts: 2), clock: FastForwardClock())
        var post = URLRequest(url: URL(string: "https://api.example.com/orders")!)
        post.httpMethod = "POST"

        let error = try await #require(throws: ReboundError.self) { try await session.send(post) }

        #expect(error.attempts.count == 4)
    }

    @Test("A negative maximum traps with a message; validated throws it")
    func invalidMaximum() async throws {
        #expect(throws: ConfigurationError.self) { try Redirector.validated(behavior: .follow, maximumRedirects: -1) }
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = Redirector(behavior: .follow, maximumRedirects: -1)
        }
        expectStandardError(of: result, contains: "Redirector.maximumRedirects must be 0 or more, got -1")
    }
}

/// Sends the credential as `X-Token: <value>`, a header no list of credential headers names.
struct HeaderAuthenticator: Authenticator {
    func apply(_ credential: Token, to request: inout URLRequest) {
        request.setValue("\(credential.value)", forHTTPHeaderField: "X-Token")
    }

    func refresh(_ credential: Token) async throws -> Token { Token(value: credential.value + 1) }

    func isRequest(_ request: URLRequest, authenticatedWith credential: Token) -> Bool {
        request.value(forHTTPHeaderField: "X-Token") == "\(credential.value)"
    }

    @Test("Every per-host part admits and counts a redirected attempt under the host it was adapted for")
    func perHostPartsCountUnderTheEntryHost() async throws {
        // entry → 302 → cdn → 503, as a CDN in front of an overloaded origin answers.
        let transport = web([
            "https://entry.example.com/a": redirect(to: "https://cdn.example.com/a"),
            "https://cdn.example.com/a": .status(503),
        ])
        // The retry waits for the pacing's token: every sleep ends at once.
        let clock = FastForwardClock()
        let configuration = AdaptiveThrottle.Configuration(maximumRejection: 1, minimumRequests: 0)
        // Draws of 0 reject whenever the probability is above 0.
        let throttle = AdaptiveThrottle(configuration: configuration, clock: clock, random: RandomSource(Zero()))
        let pacing = AdaptiveRateLimiter(clock: clock)
        let budget = RetryBudget()
        let entry = URLRequest(url: URL(string: "https://entry.example.com/a")!)

        // A retried request through the budget and the pacing.
        let retrying = Session(
            transport: transport, adapters: [pacing, budget], retriers: [RetryPolicy(retryLimit: 1, backoff: .zero)],
            clock: clock)
        let retried = try await #require(throws: ReboundError.self) { try await retrying.send(entry) }
        #expect(retried.attempts.count == 2, "the 503 was retried once")
        #expect(retried.attempts.allSatisfy { $0.request?.url?.host == "cdn.example.com" }, "each sent its last hop")
        #expect(budget.tokens(for: "entry.example.com") == 495, "the retry was charged to the entry host")
        #expect(budget.tokens(for: "cdn.example.com") == 500)
        #expect(pacing.snapshot(for: "entry.example.com").isPacing, "the 503 paces the entry host")
        #expect(!pacing.snapshot(for: "cdn.example.com").isPacing)

        // A request through the throttle: counted under the entry host, where the throttle draws.
        let throttled = Session(transport: transport, adapters: [throttle], clock: clock)
        _ = try? await throttled.send(entry)
        #expect(throttle.snapshot(for: "entry.example.com").requests == 1)
        #expect(throttle.snapshot(for: "entry.example.com").accepts == 0)
        #expect(throttle.snapshot(for: "cdn.example.com").requests == 0)

        // The next request to the entry host is rejected on the client, before anything is sent.
        let sentBefore = transport.requestCount
        let second = try await #require(throws: ReboundError.self) { try await throttled.send(entry) }
        #expect(second.underlyingError is AdaptiveThrottleRejection)
        #expect(transport.requestCount == sentBefore)
    }
}

/// A generator that always answers 0.
private struct Zero: RandomNumberGenerator, Sendable {
    mutating func next() -> UInt64 { 0 }
}
