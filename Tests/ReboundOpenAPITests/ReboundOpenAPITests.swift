#if OpenAPI
    import Foundation
    import HTTPTypes
    import OpenAPIRuntime
    import OpenAPIURLSession
    import Rebound
    import ReboundOpenAPI
    import ReboundTesting
    import Testing

    @testable import ReboundOpenAPIExample

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    /// How the generated client reaches Rebound in a test: the middleware around swift-openapi-urlsession's transport,
    /// or Rebound's transport.
    enum Placement: String, CaseIterable, CustomTestStringConvertible {
        case middleware, transport

        var testDescription: String { rawValue }

        func client(
            _ server: LoopbackServer, retriers: [any RequestRetrier] = [RetryPolicy(backoff: .zero)],
            adapters: [any RequestAdapter] = [], singleBodies: SingleBodies = .sentOnce,
            clock: some Clock<Duration> = FastForwardClock()
        ) -> Client {
            switch self {
            case .middleware:
                Client(
                    serverURL: server.baseURL, transport: URLSessionTransport(),
                    middlewares: [
                        ReboundMiddleware(
                            adapters: adapters, retriers: retriers, singleBodies: singleBodies, clock: clock)
                    ])
            case .transport:
                Client(
                    serverURL: server.baseURL,
                    transport: ReboundTransport(
                        session: Session(adapters: adapters, retriers: retriers, clock: clock),
                        singleBodies: singleBodies))
            }
        }
    }

    /// A body the server received, as text.
    func text(_ request: LoopbackServer.Request) -> String { String(decoding: request.body, as: UTF8.self) }

    /// A body that can be read once, streamed in two chunks.
    func streamedBody(_ parts: [String]) -> HTTPBody {
        let stream = AsyncStream<ArraySlice<UInt8>> { continuation in
            for part in parts { continuation.yield(ArraySlice(part.utf8)) }
            continuation.finish()
        }
        return HTTPBody(stream, length: .unknown, iterationBehavior: .single)
    }

    @Suite("OpenAPI: a generated client through Rebound, over loopback", .timeLimit(.minutes(5)))
    struct GeneratedClientTests {
        let server: LoopbackServer

        init() throws { server = try LoopbackServer() }

        @Test(arguments: Placement.allCases)
        func aGETIsRetried(placement: Placement) async throws {
            server.route("/items", [.status(503), .json(#"[{"name":"first"}]"#)])

            let output = try await placement.client(server).listItems()

            guard case .ok(let ok) = output else {
                Issue.record("output: \(output)")
                return
            }
            #expect(try ok.body.json.map(\.name) == ["first"])
            #expect(server.hits("/items") == 2)
        }

        @Test(arguments: Placement.allCases)
        func aPOSTIsNotRetriedAndItsResponseComesBackAsUndocumented(placement: Placement) async throws {
            server.route("/items", [.status(503, body: "busy"), .json(#"{"name":"late"}"#, status: 201)])

            let output = try await placement.client(server).createItem(body: .json(.init(name: "new")))

            guard case .undocumented(let status, let payload) = output else {
                Issue.record("output: \(output)")
                return
            }
            #expect(status == 503)
            #expect(try await String(collecting: try #require(payload.body), upTo: 1_000) == "busy")
            #expect(server.hits("/items") == 1)
        }

        @Test(arguments: Placement.allCases)
        func aPOSTWithAnIdempotencyKeyIsRetriedWithTheSameBytes(placement: Placement) async throws {
            server.route("/items", [.status(503), .json(#"{"name":"new"}"#, status: 201)])

            let output = try await placement.client(server).createItem(
                headers: .init(Idempotency_hyphen_Key: "key-1"), body: .json(.init(name: "new")))

            guard case .created(let created) = output else {
                Issue.record("output: \(output)")
                return
            }
            #expect(try created.body.json.name == "new")
            let sent = server.requests("/items")
            #expect(sent.count == 2)
            #expect(sent.map(text).allSatisfy { $0 == text(sent[0]) && $0.contains("\"new\"") })
            #expect(sent.map { $0.value(forHeader: "Idempotency-Key") } == ["key-1", "key-1"])
            // The body is whole each time, and its length says so.
            #expect(sent.map { $0.value(forHeader: "Content-Length") } == sent.map { "\($0.body.count)" })
        }

        @Test(arguments: Placement.allCases)
        func aStreamedUploadIsSentOnceAndA503EndsItWithAClearError(placement: Placement) async throws {
            server.route("/uploads/a.csv", [.status(503), .status(204)])

            let error = await #expect(throws: ClientError.self) {
                try await placement.client(server).upload(
                    path: .init(name: "a.csv"), body: .binary(streamedBody(["name,count\n", "apples,3\n"])))
            }

            let rebound = try #require(error?.underlyingError as? ReboundError)
            guard case .retryAborted(is StreamBodyNotReplayable, .unacceptableStatusCode(503)) = rebound.reason else {
                Issue.record("reason: \(rebound.reason)")
                return
            }
            // Sent once, whole: not cut short, not sent again.
            #expect(server.requests("/uploads/a.csv").map(text) == ["name,count\napples,3\n"])
        }

        @Test(arguments: Placement.allCases)
        func aStreamedUploadBufferedByChoiceIsRetriedWhole(placement: Placement) async throws {
            server.route("/uploads/a.csv", [.status(503), .status(204)])

            let output = try await placement.client(server, singleBodies: .buffered(upTo: 1_000)).upload(
                path: .init(name: "a.csv"), body: .binary(streamedBody(["name,count\n", "apples,3\n"])))

            guard case .noContent = output else {
                Issue.record("output: \(output)")
                return
            }
            #expect(
                server.requests("/uploads/a.csv").map(text) == ["name,count\napples,3\n", "name,count\napples,3\n"])
        }

        @Test(arguments: Placement.allCases)
        func anUploadLargerThanTheBufferFailsBeforeAnythingIsSent(placement: Placement) async throws {
            server.route("/uploads/a.csv", [.status(204)])

            await #expect(throws: ClientError.self) {
                try await placement.client(server, singleBodies: .buffered(upTo: 8)).upload(
                    path: .init(name: "a.csv"), body: .binary(streamedBody(["name,count\n", "apples,3\n"])))
            }
            #expect(server.hits("/uploads/a.csv") == 0)
        }

        @Test(arguments: Placement.allCases)
        func aDocumentedNotFoundComesBackIntactAndIsRetriedOnlyWhenThePolicySaysSo(placement: Placement) async throws {
            let problem = LoopbackServer.Reply.response(
                status: 404, headers: ["Content-Type": "application/problem+json"],
                body: Data(#"{"title":"no items","status":404}"#.utf8))
            server.route("/items", [problem, problem, problem])
            let retriesNotFound = RetryPolicy(retryLimit: 1, retryableHTTPStatusCodes: [404], backoff: .zero)

            for (retriers, hits) in [([RetryPolicy(backoff: .zero)], 1), ([retriesNotFound], 3)] {
                let output = try await placement.client(server, retriers: retriers).listItems()

                guard case .notFound(let notFound) = output else {
                    Issue.record("output: \(output)")
                    return
                }
                #expect(try notFound.body.application_problem_plus_json.title == "no items")
                #expect(server.hits("/items") == hits)
            }
        }

        @Test(arguments: Placement.allCases)
        func retryAfterIsHonoured(placement: Placement) async throws {
            server.route("/items", [.status(503, headers: ["Retry-After": "7"]), .json("[]")])
            let clock = FastForwardClock()

            _ = try await placement.client(server, retriers: [RetryPolicy()], clock: clock).listItems()

            #expect(clock.sleeps == [.seconds(7)])
            #expect(server.hits("/items") == 2)
        }

        @Test(arguments: Placement.allCases)
        func cancellationDuringTheBackoffEndsTheCallAtOnce(placement: Placement) async throws {
            server.route("/items", [.status(503), .json("[]")])
            let clock = ManualClock()
            let client = placement.client(
                server, retriers: [RetryPolicy(backoff: .constant(.seconds(60)))], clock: clock)

            let call = Task { try await client.listItems() }
            try await clock.waitForSleepers(1)
            call.cancel()

            await #expect(throws: (any Error).self) { try await call.value }
            #expect(server.hits("/items") == 1)
        }

        @Test func theTransportKeepsCredentialsAtHomeAcrossARedirect() async throws {
            let other = try LoopbackServer()
            other.route("/items", [.json("[]")])
            server.route("/items", [.status(302, headers: ["Location": other.url("/items").absoluteString])])
            let credential = Adapter.modifying { request, _ in
                request.setValue("Bearer home-only", forHTTPHeaderField: "Authorization")
            }

            _ = try await Placement.transport.client(server, adapters: [credential]).listItems()

            #expect(server.requests("/items").first?.value(forHeader: "Authorization") == "Bearer home-only")
            #expect(other.hits("/items") == 1)
            #expect(other.requests("/items").first?.value(forHeader: "Authorization") == nil)
        }

        @Test func theMiddlewareLabelsEachRequestWithItsOperation() async throws {
            server.route("/items", [.json("[]")])
            let labels = Labels()
            let client = Client(
                serverURL: server.baseURL, transport: URLSessionTransport(),
                middlewares: [
                    ReboundMiddleware(adapters: [
                        Adapter { request, context in
                            labels.append(context.label)
                            return request
                        }
                    ])
                ])

            _ = try await client.listItems()

            #expect(labels.all == ["listItems"])
        }
    }

    /// Labels seen by an adapter, behind a lock.
    final class Labels: @unchecked Sendable {
        // `@unchecked Sendable`: `values` is read and written only while `lock` is held.
        private let lock = NSLock()
        private var values: [String?] = []

        func append(_ label: String?) { lock.withLock { values.append(label) } }
        var all: [String?] { lock.withLock { values } }
    }
#endif
