import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The two ways to make the transport: with a session of its own, or with one the caller brings.
enum TransportKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case ownSession
    case callersSession

    var testDescription: String { rawValue }

    /// Whether the body of a 3xx that is not followed reaches the caller: on Linux, swift-corelibs-foundation
    /// completes a `data(for:)` or completion-handler task with an empty body in its place.
    static var keepsBodyOfUnfollowedRedirects: Bool {
        #if canImport(FoundationNetworking)
            false
        #else
            true
        #endif
    }

    /// Whether the body of a 401 with `challenge` reaches the caller: on Linux, a `Basic` challenge is raised and
    /// cancelled, and the task completes without the body; the others come through as ordinary 401s.
    static func keepsBodyOf401(challengedWith challenge: String) -> Bool {
        #if canImport(FoundationNetworking)
            !challenge.hasPrefix("Basic")
        #else
            true
        #endif
    }

    func make() -> URLSessionHTTPTransport {
        switch self {
        case .ownSession: URLSessionHTTPTransport()
        case .callersSession: URLSessionHTTPTransport(session: URLSession(configuration: .ephemeral))
        }
    }

    /// A transport whose session waits up to 600 s for a request's next bytes instead of the configuration's
    /// default 60 s, for tests whose many requests may be queued behind each other on a loaded machine.
    func makePatient() -> URLSessionHTTPTransport {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 600
        switch self {
        case .ownSession: return URLSessionHTTPTransport(configuration: configuration)
        case .callersSession: return URLSessionHTTPTransport(session: URLSession(configuration: configuration))
        }
    }
}

@Suite("URLSessionHTTPTransport", .timeLimit(.minutes(5)))
struct URLSessionHTTPTransportTests {
    @Test(arguments: TransportKind.allCases)
    func returnsAnyStatusWithItsBodyAndHeaders(_ kind: TransportKind) async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/teapot", [.status(418, headers: ["X-Kind": "teapot"], body: "short and stout")])

        let (data, response) = try await kind.make().send(URLRequest(url: server.url("/teapot")))

        #expect(response.statusCode == 418)
        #expect(response.value(forHTTPHeaderField: "X-Kind") == "teapot")
        #expect(String(decoding: data, as: UTF8.self) == "short and stout")
    }

    @Test(arguments: TransportKind.allCases)
    func sendsMethodHeadersAndBody(_ kind: TransportKind) async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/echo", [.status(204)])

        _ = try await kind.make().send(
            URLRequest(url: server.url("/echo"), method: .patch, headers: ["X-A": "1"], body: Data("patch".utf8)))

        let received = try #require(server.requests("/echo").first)
        #expect(received.method == "PATCH")
        #expect(received.value(forHeader: "X-A") == "1")
        #expect(received.body == Data("patch".utf8))
    }

    @Test(arguments: TransportKind.allCases, [301, 302, 303, 307, 308])
    func returnsARedirectAsIsWithoutFollowingIt(_ kind: TransportKind, status: Int) async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        let target = server.url("/to")
        server.route("/from", [.status(status, headers: ["Location": target.absoluteString], body: "moved")])
        server.route("/to", [.status(200, body: "arrived")])

        let (data, response) = try await kind.make().send(
            URLRequest(url: server.url("/from"), method: .post, body: Data("form".utf8)))

        #expect(response.statusCode == status)
        #expect(response.value(forHTTPHeaderField: "Location") == target.absoluteString)
        #expect(response.url == server.url("/from"))
        #expect(String(decoding: data, as: UTF8.self) == (TransportKind.keepsBodyOfUnfollowedRedirects ? "moved" : ""))
        #expect(server.hits("/from") == 1)
        #expect(server.hits("/to") == 0)
    }

    @Test(
        arguments: TransportKind.allCases,
        [
            "Basic realm=\"api\"", "Digest realm=\"api\", nonce=\"abc\", qop=\"auth\"", "Bearer", "Negotiate",
        ])
    func aChallengeArrivesAsA401(_ kind: TransportKind, challenge: String) async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/me", [.status(401, headers: ["WWW-Authenticate": challenge], body: "sign in first")])

        let (data, response) = try await kind.make().send(URLRequest(url: server.url("/me")))

        #expect(response.statusCode == 401)
        #expect(response.value(forHTTPHeaderField: "WWW-Authenticate") == challenge)
        let expectedBody = TransportKind.keepsBodyOf401(challengedWith: challenge) ? "sign in first" : ""
        #expect(String(decoding: data, as: UTF8.self) == expectedBody)
        #expect(server.hits("/me") == 1)
    }

    @Test(arguments: TransportKind.allCases)
    func concurrentChallengedSendsEachGetTheirOwn401(_ kind: TransportKind) async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        // Given five resources, each challenging with a 401 of its own, and a sixth that answers 200.
        let names = ["a", "b", "c", "d", "e"]
        for name in names {
            server.route(
                "/\(name)",
                [.status(401, headers: ["WWW-Authenticate": "Basic realm=\"\(name)\"", "X-Resource": name])])
        }
        server.route("/ok", [.status(200, body: "ok")])
        let transport = kind.make()

        // When 200 sends run at once, a sixth of them to the resource that answers.
        let results = try await withThrowingTaskGroup(of: (String, HTTPURLResponse, Data).self) { group in
            for index in 0..<200 {
                let name = index % 6 == 5 ? "ok" : names[index % 6]
                group.addTask {
                    let (data, response) = try await transport.send(URLRequest(url: server.url("/\(name)")))
                    return (name, response, data)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }

        // Then each got the answer of the resource it asked, and the next challenged send of each still gets a 401.
        #expect(results.count == 200)
        for (name, response, data) in results {
            if name == "ok" {
                #expect(response.statusCode == 200 && data == Data("ok".utf8))
            } else {
                #expect(response.statusCode == 401)
                #expect(response.value(forHTTPHeaderField: "X-Resource") == name)
                #expect(response.url == server.url("/\(name)"))
            }
        }
        let (_, again) = try await transport.send(URLRequest(url: server.url("/c")))
        #expect(again.statusCode == 401 && again.value(forHTTPHeaderField: "X-Resource") == "c")
    }

    @Test(arguments: TransportKind.allCases)
    func alreadyCancelledTaskSendsNothing(_ kind: TransportKind) async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/a", [.status(200)])
        let url = server.url("/a")
        let transport = kind.make()

        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await transport.send(URLRequest(url: url))
        }

        await #expect(throws: CancellationError.self) { try await task.value }
        // Prove the server is still answering, then that the cancelled request never reached it.
        _ = try await transport.send(URLRequest(url: url))
        #expect(server.hits("/a") == 1)
    }

    @Test(arguments: TransportKind.allCases)
    func cancellingDuringTheSendEndsItWithCancellation(_ kind: TransportKind) async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/slow", [.status(200).delayed(by: .seconds(30))])
        let url = server.url("/slow")
        let transport = kind.make()

        let task = Task { try await transport.send(URLRequest(url: url)) }
        try await server.waitForRequests(1)
        task.cancel()

        await #expect(throws: CancellationError.self) { try await task.value }
    }

    @Test(arguments: TransportKind.allCases)
    func everyOneOfManyConcurrentSendsEndsOnceAmidCancellations(_ kind: TransportKind) async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/fast", [.status(200, body: "ok")])
        server.route("/slow", [.status(200, body: "ok").delayed(by: .seconds(30))])
        let transport = kind.makePatient()
        var generator = SystemRandomNumberGenerator()

        // Given 500 sends: a third never cancelled, a third cancelled at once, a third cancelled after a random
        // number of yields (before, during or after their send); the cancelled ones go to a route that stalls.
        let tasks = (0..<500).map { index in
            let url = index % 3 == 0 ? server.url("/fast") : server.url("/slow")
            let task = Task { try await transport.send(URLRequest(url: url)) }
            return (index, task, Int.random(in: 0..<50, using: &generator))
        }
        await withTaskGroup(of: Void.self) { group in
            for (index, task, yields) in tasks where index % 3 != 0 {
                group.addTask {
                    if index % 3 == 2 { for _ in 0..<yields { await Task.yield() } }
                    task.cancel()
                }
            }
        }

        // Then each ends exactly once: the uncancelled with their 200, every other with CancellationError, or with
        // its 200 if the answer came before the cancellation (a starved canceller, under the thread sanitizer and a
        // busy machine, can come 30 s late). Nothing else, and nothing twice.
        var succeeded = 0
        var cancelled = 0
        for (index, task, _) in tasks {
            do {
                let (data, response) = try await task.value
                #expect(response.statusCode == 200 && data == Data("ok".utf8))
                succeeded += 1
            } catch is CancellationError {
                #expect(index % 3 != 0, "a send nobody cancelled ended as cancelled")
                cancelled += 1
            }
        }
        #expect(succeeded + cancelled == 500)
        #expect(succeeded >= 167)
    }

    @Test(arguments: TransportKind.allCases)
    func refusedConnectionIsCannotConnectToHost(_ kind: TransportKind) async throws {
        let down = try RefusedPort()
        defer { down.close() }

        await #expect {
            try await kind.make().send(URLRequest(url: down.url()))
        } throws: { error in
            (error as? URLError)?.code == .cannotConnectToHost
        }
    }

    @Test func itsOwnSessionIsMadeWithTheGivenConfiguration() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/a", [.status(200)])
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpAdditionalHeaders = ["X-Configured": "yes"]

        _ = try await URLSessionHTTPTransport(configuration: configuration).send(URLRequest(url: server.url("/a")))

        #expect(server.requests("/a").first?.value(forHeader: "X-Configured") == "yes")
    }

    @Test func releasingTheTransportInvalidatesItsSession() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/a", [.status(200)])
        weak var released: URLSession?

        do {
            let transport = URLSessionHTTPTransport()
            released = transport.session
            _ = try await transport.send(URLRequest(url: server.url("/a")))
        }

        for _ in 0..<500 where released != nil { try await Task.sleep(for: .milliseconds(10)) }
        #expect(released == nil)
    }

    #if canImport(FoundationNetworking)
        @Test(
            "On Linux the transport's own session keeps no response cache, and the caller's configuration is untouched")
        func ownSessionHasNoCacheOnLinux() {
            let configuration = URLSessionConfiguration.default
            let cache = URLCache(memoryCapacity: 1_024, diskCapacity: 0, diskPath: nil)
            configuration.urlCache = cache

            let transport = URLSessionHTTPTransport(configuration: configuration)

            #expect(transport.session.configuration.urlCache == nil)
            #expect(configuration.urlCache === cache)
        }

        @Test("Thousands of sends cancelled as their tasks start or finish never trap the process")
        func cancellingAsTasksStartOrFinishNeverTraps() async {
            // In a process of its own: with a response cache, swift-corelibs-foundation traps the process in most runs
            // of this size (a cancel delivered after the task left its session).
            await #expect(processExitsWith: .success) {
                let server = try LoopbackServer()
                defer { server.stop() }
                server.route("/fast", [.status(200, body: "ok")])
                let transport = URLSessionHTTPTransport()
                let request = URLRequest(url: server.url("/fast"))
                for _ in 0..<5 {
                    await withTaskGroup(of: Void.self) { group in
                        for index in 0..<2_000 {
                            let send = Task { _ = try? await transport.exchange(request) }
                            // Cancelled from 0 to 2 ms after it starts: before, during and after its task's start.
                            let delay = DispatchTimeInterval.microseconds(index * 7 % 2_000)
                            DispatchQueue.global().asyncAfter(deadline: .now() + delay) { send.cancel() }
                            group.addTask { await send.value }
                        }
                    }
                }
            }
        }
    #endif
}
