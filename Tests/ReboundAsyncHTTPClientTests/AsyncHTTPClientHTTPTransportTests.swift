#if AsyncHTTPClient
    import AsyncHTTPClient
    import Foundation
    import NIOCore
    import NIOSSL
    import Rebound
    @testable import ReboundAsyncHTTPClient
    import ReboundTesting
    import Testing

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    @Suite("AsyncHTTPClient transport, over loopback", .timeLimit(.minutes(5)))
    struct AsyncHTTPClientHTTPTransportTests {
        let server: LoopbackServer
        let transport = AsyncHTTPClientHTTPTransport()

        init() throws { server = try LoopbackServer() }

        /// The error a session on this transport ends `request` with, retrying nothing.
        func failure(of request: URLRequest) async throws -> ReboundError {
            let session = Session(transport: transport)
            return try await #require(throws: ReboundError.self) { try await session.send(request) }
        }

        @Test func aRetryPolicyRetriesA503AndTheResponseComesBackWhole() async throws {
            server.route("/items", [.status(503), .status(200, headers: ["X-Page": "1"], body: "[1,2,3]")])
            let session = Session(transport: transport, retriers: [RetryPolicy(backoff: .zero)])

            let response = try await session.send(server.url("/items"))

            #expect(String(decoding: response.data, as: UTF8.self) == "[1,2,3]")
            #expect(response.statusCode == 200)
            #expect(response.httpResponse.value(forHTTPHeaderField: "X-Page") == "1")
            #expect(response.attempts.count == 2)
        }

        @Test func methodHeadersAndADataBodyAreSentAsGiven() async throws {
            server.route("/items", [.status(201)])
            var request = URLRequest(url: server.url("/items?page=2"))
            request.httpMethod = "PUT"
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.setValue("abc", forHTTPHeaderField: "X-Trace")
            request.httpBody = Data(#"{"name":"new"}"#.utf8)

            _ = try await Session(transport: transport).send(request)

            let sent = try #require(server.requests("/items").first)
            #expect(sent.method == "PUT")
            #expect(sent.query == "page=2")
            #expect(sent.value(forHeader: "X-Trace") == "abc")
            #expect(sent.value(forHeader: "Content-Type") == "application/json")
            #expect(String(decoding: sent.body, as: UTF8.self) == #"{"name":"new"}"#)
            #expect(sent.value(forHeader: "Content-Length") == "14")
        }

        @Test func aStreamBodyIsSentWhole() async throws {
            server.route("/upload", [.status(204)])
            let payload = Data((0..<100_000).map { UInt8($0 % 251) })
            var request = URLRequest(url: server.url("/upload"))
            request.httpMethod = "POST"
            request.httpBodyStream = InputStream(data: payload)

            _ = try await Session(transport: transport).send(request)

            #expect(server.requests("/upload").first?.body == payload)
        }

        @Test func theSessionFollowsRedirectsAndKeepsCredentialsAtHome() async throws {
            let other = try LoopbackServer()
            defer { other.stop() }
            other.route("/landing", [.status(200, body: "there")])
            server.route("/start", [.status(302, headers: ["Location": other.url("/landing").absoluteString])])
            var request = URLRequest(url: server.url("/start"))
            request.setValue("Bearer home-only", forHTTPHeaderField: "Authorization")

            let response = try await Session(transport: transport).send(request)

            #expect(String(decoding: response.data, as: UTF8.self) == "there")
            #expect(server.requests("/start").first?.value(forHeader: "Authorization") == "Bearer home-only")
            #expect(other.requests("/landing").first?.value(forHeader: "Authorization") == nil)
        }

        @Test func aClientThatFollowsRedirectsItselfIsRefused() async throws {
            let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)
            server.route("/start", [.status(302, headers: ["Location": server.url("/landing").absoluteString])])
            server.route("/landing", [.status(200)])

            let error = await #expect(throws: ReboundError.self) {
                try await Session(transport: AsyncHTTPClientHTTPTransport(client: client)).send(server.url("/start"))
            }
            try await client.shutdown()

            #expect(error?.underlyingError is AsyncHTTPClientHTTPTransport.RedirectFollowedByClient)
        }

        @Test func aRefusedConnectionIsCannotConnectToHost() async throws {
            let refused = try RefusedPort()
            defer { refused.close() }

            let error = try await failure(of: URLRequest(url: refused.url("/items")))

            #expect(error.urlError?.code == .cannotConnectToHost)
        }

        @Test func aPostToAPortThatStartsListeningWithinTheBackoffReachesTheServerOnce() async throws {
            let port = try RefusedPort()
            let clock = ManualClock()
            let session = Session(
                transport: transport, retriers: [RetryPolicy(unsentRetryLimit: 1)], clock: clock)
            let ended = Locked(false)
            let task = Task {
                defer { ended.withLock { $0 = true } }
                return try await session.send(port.url("/orders"), method: .post, body: Data("{}".utf8))
            }
            // Refused: the transport says it came before sending, and the policy waits its backoff.
            while clock.pendingSleepCount == 0, !ended.withLock({ $0 }) { await Task.yield() }
            let listening = try port.startListening()
            defer { listening.stop() }
            listening.route("/orders", [.status(201)])
            clock.advance(by: .milliseconds(500))

            #expect(try await task.value.statusCode == 201)
            #expect(listening.hits("/orders") == 1)
        }

        @Test func theFailuresBeforeSendingAreThoseOfMakingTheConnection() {
            // A code alone says nothing: only the transport's own mark does.
            #expect(!transport.failedBeforeSending(URLError(.cannotConnectToHost)))
            let refused = AsyncHTTPClientHTTPTransport.mapped(IOError(errnoCode: ECONNREFUSED, reason: "connect"))
            #expect((refused as? URLError)?.code == .cannotConnectToHost && transport.failedBeforeSending(refused))
            // Unreachable on a connection already made (a read after an ICMP error) may follow sending.
            let unreachable = AsyncHTTPClientHTTPTransport.mapped(IOError(errnoCode: EHOSTUNREACH, reason: "read"))
            #expect((unreachable as? URLError)?.code == .cannotConnectToHost)
            #expect(!transport.failedBeforeSending(unreachable))
            for timeout in [HTTPClientError.tlsHandshakeTimeout, .getConnectionFromPoolTimeout] {
                #expect(transport.failedBeforeSending(AsyncHTTPClientHTTPTransport.mapped(timeout)))
            }
            let connectTimeout = AsyncHTTPClientHTTPTransport.mapped(HTTPClientError.connectTimeout)
            #expect((connectTimeout as? URLError)?.code == .timedOut)
            #expect(transport.failedBeforeSending(connectTimeout))
            #expect(!transport.failedBeforeSending(AsyncHTTPClientHTTPTransport.mapped(HTTPClientError.readTimeout)))
            #expect(
                !transport.failedBeforeSending(
                    AsyncHTTPClientHTTPTransport.mapped(HTTPClientError.remoteConnectionClosed)))
        }

        // On Linux, where the client's TLS is swift-nio-ssl's; on Apple platforms its default is Network.framework's.
        #if os(Linux)
            @Test func aTLSHandshakeThatFailsCameBeforeSending() async throws {
                // An https request to a server that speaks plain HTTP: the handshake fails before the request is written.
                server.route("/orders", [.status(201)])
                let url = URL(string: "https://127.0.0.1:\(server.port)/orders")!
                var post = URLRequest(url: url)
                post.httpMethod = "POST"

                let error = try await failure(of: post)

                #expect(error.urlError?.code == .secureConnectionFailed)
                #expect(error.attempts.first?.failedBeforeSending == true)
                #expect(server.hits("/orders") == 0)
            }
        #endif

        @Test func swiftNIOSSLsErrorsOfSettingUpTheConnectionAreMarkedAndOthersAreNot() {
            let handshake = AsyncHTTPClientHTTPTransport.mapped(NIOSSLError.handshakeFailed(.sslError([])))
            #expect((handshake as? URLError)?.code == .secureConnectionFailed)
            #expect(transport.failedBeforeSending(handshake))
            #expect((handshake as? URLError)?.userInfo[NSUnderlyingErrorKey] is NIOSSLError)
            let certificate = AsyncHTTPClientHTTPTransport.mapped(NIOSSLError.unableToValidateCertificate)
            #expect((certificate as? URLError)?.code == .serverCertificateUntrusted)
            #expect(transport.failedBeforeSending(certificate))
            let hostname = AsyncHTTPClientHTTPTransport.mapped(NIOSSLExtraError.failedToValidateHostname)
            #expect((hostname as? URLError)?.code == .serverCertificateUntrusted)
            #expect(transport.failedBeforeSending(hostname))
            let sni = AsyncHTTPClientHTTPTransport.mapped(NIOSSLExtraError.invalidSNIHostname)
            #expect((sni as? URLError)?.code == .secureConnectionFailed && transport.failedBeforeSending(sni))
            // A TLS connection that ends without its closing message may end after the request was written.
            let unclean = AsyncHTTPClientHTTPTransport.mapped(NIOSSLError.uncleanShutdown)
            #expect(unclean is NIOSSLError)
            #expect(!transport.failedBeforeSending(unclean))
            // A certificate that does not validate is not retried by default, as URLSession's is not.
            #expect(!RetryPolicy.defaultRetryableURLErrorCodes.contains(.serverCertificateUntrusted))
        }

        @Test func aResetIsNetworkConnectionLost() async throws {
            server.route("/reset", [.reset])

            let error = try await failure(of: URLRequest(url: server.url("/reset")))

            #expect(error.urlError?.code == .networkConnectionLost)
        }

        @Test func aConnectionClosedMidBodyIsNetworkConnectionLost() async throws {
            server.route("/cut", [.closeMidBody(length: 4096)])

            let error = try await failure(of: URLRequest(url: server.url("/cut")))

            #expect(error.urlError?.code == .networkConnectionLost)
        }

        @Test func aStalledServerTimesOut() async throws {
            server.route("/stall", [.stall])
            var request = URLRequest(url: server.url("/stall"))
            request.timeoutInterval = 0.3

            let error = try await failure(of: request)

            #expect(error.urlError?.code == .timedOut)
            server.stop()
        }

        @Test func cancellingTheCallerCancelsTheRequestInFlight() async throws {
            server.route("/stall", [.stall])
            let session = Session(transport: transport)

            let call = Task { try await session.send(server.url("/stall")) }
            // The server has the request: it is in flight.
            try await server.waitForRequests(1)
            call.cancel()

            await #expect(throws: CancellationError.self) { try await call.value }
            server.stop()
        }

        @Test func resetsAndConnectionsClosedMidBodyAreRetried() async throws {
            server.route("/flaky", [.reset, .closeMidBody(length: 1024), .status(200, body: "ok")])
            let session = Session(
                transport: transport,
                retriers: [RetryPolicy(backoff: .zero), ConnectionLostRetryPolicy(exponentialBackoffScale: 0.01)])

            let response = try await session.send(server.url("/flaky"))

            #expect(String(decoding: response.data, as: UTF8.self) == "ok")
            #expect(
                response.attempts.map { $0.failure?.urlError?.code } == [
                    .networkConnectionLost, .networkConnectionLost, nil,
                ])
        }
    }
#endif
