#if OpenAPI
    import Foundation
    import HTTPTypes
    import OpenAPIRuntime
    import Rebound

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    /// A generated client's transport that sends every operation through a Rebound ``Rebound/Session``: its chain, and
    /// also its redirect rules (credentials dropped across origins, the authenticator's hosts per hop, the hop cap) and
    /// its attempt timeout, which a middleware cannot apply to the redirects a transport follows by itself.
    ///
    /// ```swift
    /// let session = Session(adapters: [CircuitBreakerRegistry()], retriers: [RetryPolicy()], attemptTimeout: .seconds(10))
    /// let client = Client(serverURL: try Servers.Server1.url(), transport: ReboundTransport(session: session))
    /// ```
    ///
    /// What the caller sees, and how bodies are treated, are as with ``ReboundMiddleware``: a response no retrier or
    /// gate stopped comes back as it is (documented or `.undocumented`), anything else throws the `ReboundError`. The
    /// session sends bytes, so each request body is collected in memory before the first attempt; a body that can be
    /// read once is then sent once (see ``SingleBodies``), and a body that can be iterated again is resent whole on a
    /// retry.
    ///
    /// The operation's `operationID` is the request's label. Thread-safe: one transport serves every call of a client.
    public struct ReboundTransport: ClientTransport {
        /// The session every operation is sent through.
        public let session: Session
        /// How request bodies that can be read once are treated; ``SingleBodies/sentOnce`` by default.
        public let singleBodies: SingleBodies

        /// Creates a transport that sends through `session`.
        ///
        /// - Parameters:
        /// - session: The session every operation is sent through; a `Session()` on `URLSessionHTTPTransport()` by
        /// default.
        /// - singleBodies: How request bodies that can be read once are treated; ``SingleBodies/sentOnce`` by default.
        public init(session: Session = Session(), singleBodies: SingleBodies = .sentOnce) {
            self.session = session
            self.singleBodies = singleBodies
        }

        /// Sends the operation through the session.
        public func send(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String) async throws -> (
            HTTPResponse, HTTPBody?
        ) {
            var urlRequest = Conversions.urlRequest(
                for: request, at: try Conversions.url(of: request, baseURL: baseURL))
            if let body = try await singleBodies.prepare(body) {
                let bytes = try await Data(collecting: body, upTo: .max)
                if body.iterationBehavior == .single {
                    // A stream, which the session sends once: no retry, no 307 or 308 followed with it.
                    urlRequest.httpBodyStream = InputStream(data: bytes)
                } else {
                    urlRequest.httpBody = bytes
                }
            }
            let sent = urlRequest
            return try await Responses.sending { try await session.send(sent, label: operationID) }
        }
    }
#endif
