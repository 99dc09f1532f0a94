#if OpenAPI
    import Foundation
    import HTTPTypes
    import OpenAPIRuntime
    import Rebound

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    /// How a request body that can be read only once (`IterationBehavior.single`: an upload streamed from a file or an
    /// async sequence) is treated when the request would need it again, for a retry or a 307/308 redirect.
    ///
    /// A minor release may add a case: switch over it with `@unknown default` (Rebound's `Docs/APIStability.md`).
    public enum SingleBodies: Sendable, Equatable {
        /// Sent once and never again: a failure that would need it resent ends the request with
        /// `StreamBodyNotReplayable` beside the attempt's own failure (a `ReboundError` whose reason is
        /// `.retryAborted(error:original:)`), and a 307 or 308 is not followed. The default.
        case sentOnce
        /// Collected in memory before the first attempt, up to `maximumBytes`, then sent and resent like any other
        /// body; a larger body fails before anything is sent, with swift-openapi-runtime's `TooManyBytesError`.
        case buffered(upTo: Int)
    }

    /// Runs a Rebound chain around a generated client's transport: adapters, retriers, breakers, budgets, the deadline
    /// and observers, on every operation of a client made by swift-openapi-generator.
    ///
    /// ```swift
    /// let client = Client(
    ///     serverURL: try Servers.Server1.url(), transport: URLSessionTransport(),
    ///     middlewares: [ReboundMiddleware(adapters: [CircuitBreakerRegistry()], retriers: [RetryPolicy()])])
    /// ```
    ///
    /// **What the caller sees** is what the generated client always returns. A response the retriers did not retry, or
    /// retried until they gave up, comes back as the response it is, documented (a 404 with its problem body) or
    /// `.undocumented` (a 503 after the last retry), with its body intact. A request that something else stopped (a
    /// breaker that refused it, a budget that denied its retry, the deadline, a transport error) throws the
    /// `ReboundError`, which the client wraps in its `ClientError` as the underlying error.
    ///
    /// **Bodies.** A body that can be iterated more than once is handed to the transport whole on every attempt (its
    /// `Content-Length` unchanged). A body that can be read once is sent once, unless `singleBodies` says to buffer it
    /// (see ``SingleBodies``). Response bodies are collected whole before the chain sees them (validators and retriers
    /// read them); list the operations that stream their responses (server-sent events, say) in `passingThrough`, which
    /// go straight to the transport.
    ///
    /// **What it cannot see**: the redirects the transport follows itself (`URLSession` follows them, and on Linux
    /// forwards `Authorization` to another host), and the time those take. To have Rebound's redirect rules and attempt
    /// timeout, send through ``ReboundTransport`` instead.
    ///
    /// **Time limits.** The generated client's `next` may not be called after `intercept` returns, so when the deadline
    /// or the attempt timeout cuts an attempt short, the middleware returns once that attempt has left `next`: at once
    /// with a transport that honours cancellation, as swift-openapi-urlsession's does; a transport that ignores it
    /// holds the call until it returns.
    ///
    /// The operation's `operationID` is the request's label (``RetryRequest/label``, ``AttemptOutcome/label``), so
    /// interceptors and logs can tell operations apart. Thread-safe: one middleware serves every call of a client.
    public struct ReboundMiddleware: ClientMiddleware {
        /// The session that runs the chain; its transport is the generated client's.
        public let session: Session
        /// How request bodies that can be read once are treated; ``SingleBodies/sentOnce`` by default.
        public let singleBodies: SingleBodies
        /// The operations sent straight to the transport, without the chain; none by default.
        public let passingThrough: Set<String>

        /// Creates a middleware that runs this chain around the transport.
        ///
        /// - Parameters:
        ///   - adapters: Adapt every request, first, in order; none by default.
        ///   - retriers: Are asked about every failed attempt, in order; none by default.
        ///   - interceptor: Adapts after `adapters` and is asked after `retriers`; none by default.
        ///   - observers: Are told how every attempt and request ends; none by default.
        ///   - gates: Have the last word on every retry; none by default.
        /// - validator: Decides which responses are failures; `Validator.successfulStatusCodes` (200..<300) by default.
        ///   - deadline: The total time limit of each operation, across attempts and backoffs; none by default.
        ///   - attemptTimeout: The time limit of each attempt; none by default.
        /// - singleBodies: How request bodies that can be read once are treated; ``SingleBodies/sentOnce`` by default.
        ///   - passingThrough: Operation IDs sent straight to the transport, without the chain; none by default.
        ///   - clock: The clock backoffs are slept on; `ContinuousClock` by default.
        public init<C: Clock>(
            adapters: [any RequestAdapter] = [],
            retriers: [any RequestRetrier] = [],
            interceptor: (any RequestInterceptor)? = nil,
            observers: [any AttemptObserver] = [],
            gates: [any RetryGate] = [],
            validator: any ResponseValidator = .successfulStatusCodes,
            deadline: Duration? = nil,
            attemptTimeout: Duration? = nil,
            singleBodies: SingleBodies = .sentOnce,
            passingThrough: Set<String> = [],
            clock: C = ContinuousClock()
        ) where C.Duration == Duration {
            self.session = Session(
                transport: NextTransport(), adapters: adapters, retriers: retriers, interceptor: interceptor,
                observers: observers, gates: gates, validator: validator, deadline: deadline,
                attemptTimeout: attemptTimeout, clock: clock)
            self.singleBodies = singleBodies
            self.passingThrough = passingThrough
        }

        /// Runs the chain around `next`: every attempt goes through `next`, as the generated client would have sent it.
        public func intercept(
            _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
            next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
        ) async throws -> (HTTPResponse, HTTPBody?) {
            if passingThrough.contains(operationID) { return try await next(request, body, baseURL) }
            let body = try await singleBodies.prepare(body)
            var urlRequest = Conversions.urlRequest(
                for: request, at: try Conversions.url(of: request, baseURL: baseURL))
            // The body stays with the call; an empty stream in the request tells the session it can be sent once only.
            if body?.iterationBehavior == .single { urlRequest.httpBodyStream = InputStream(data: Data()) }
            return try await Responses.sending {
                // `next` may be called only while this call lasts: the session's attempts reach it through the call,
                // which is closed (waiting for an attempt still in `next`) before this returns.
                try await withoutActuallyEscaping(next) { next in
                    let call = NextCall(next: next, body: body, baseURL: baseURL)
                    do {
                        let response = try await NextCall.$current.withValue(call) {
                            try await session.send(urlRequest, label: operationID)
                        }
                        await call.close()
                        return response
                    } catch {
                        await call.close()
                        throw error
                    }
                }
            }
        }
    }

    extension SingleBodies {
        /// `body`, collected into a body that can be iterated again when the setting says to buffer one that cannot.
        func prepare(_ body: HTTPBody?) async throws -> HTTPBody? {
            guard let body, body.iterationBehavior == .single, case .buffered(let maximumBytes) = self else {
                return body
            }
            return HTTPBody(try await ArraySlice(collecting: body, upTo: maximumBytes))
        }
    }

    /// What the session's responses and errors become for a generated client.
    enum Responses {
        /// The response of `send`; a response the retriers did not (or no longer) retry is returned as it is, every
        /// other failure is thrown.
        static func sending(_ send: () async throws -> Response) async throws -> (HTTPResponse, HTTPBody?) {
            do {
                let response = try await send()
                return Conversions.httpResponse(for: response.head, data: response.data)
            } catch let error as ReboundError {
                // The server's own answer, which no retrier or gate stopped: the generated client decides what it
                // means.
                if error.retrierError == nil, case .unacceptableStatusCode = error.reason,
                    let response = error.responseHead
                {
                    return Conversions.httpResponse(for: response, data: error.data)
                }
                throw error
            }
        }
    }

    /// The generated client's transport call that the session's attempts go through, for the request under way.
    ///
    /// `@unchecked Sendable`: its mutable state is read and written only while `lock` is held.
    final class NextCall: @unchecked Sendable {
        /// The call of the request under way in this task.
        @TaskLocal static var current: NextCall?

        typealias Next = @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)

        let baseURL: URL
        private let lock = NSLock()
        /// `nil` once the call is closed: no attempt reaches the transport after `intercept` returned.
        private var next: Next?
        private let body: HTTPBody?
        /// Whether a body that can be read once was handed to the transport.
        private var sentSingleBody = false
        /// Attempts inside `next` right now, and the closing that waits for them.
        private var inFlight = 0
        private var closing: CheckedContinuation<Void, Never>?

        init(next: @escaping Next, body: HTTPBody?, baseURL: URL) {
            self.next = next
            self.body = body
            self.baseURL = baseURL
        }

        /// Sends one attempt through the transport: a body that can be read once is handed out once (asked again, which
        /// the session's rules prevent, it throws rather than send it empty); after the call closed, it throws
        /// `CancellationError`.
        func send(_ request: HTTPRequest, baseURL: URL) async throws -> (HTTPResponse, HTTPBody?) {
            let (next, body) = try lock.withLock { () throws -> (Next, HTTPBody?) in
                guard let next = self.next else { throw CancellationError() }
                if let body = self.body, body.iterationBehavior == .single {
                    guard !sentSingleBody else { throw StreamBodyNotReplayable() }
                    sentSingleBody = true
                }
                inFlight += 1
                return (next, self.body)
            }
            defer { finishOne() }
            return try await next(request, body, baseURL)
        }

        /// Lets no further attempt through and waits for those still in the transport (the session has cancelled them).
        func close() async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let done = lock.withLock { () -> Bool in
                    next = nil
                    if inFlight == 0 { return true }
                    closing = continuation
                    return false
                }
                if done { continuation.resume() }
            }
        }

        private func finishOne() {
            let closed: CheckedContinuation<Void, Never>? = lock.withLock {
                inFlight -= 1
                guard inFlight == 0, let closing else { return nil }
                self.closing = nil
                return closing
            }
            closed?.resume()
        }
    }

    /// The session's transport inside ``ReboundMiddleware``: each attempt goes to the generated client's `next`.
    struct NextTransport: HTTPTransport {
        func exchange(_ request: URLRequest) async throws -> (Data, ResponseHead) {
            guard let call = NextCall.current, let url = request.url else {
                preconditionFailure("ReboundMiddleware's session sends only from ReboundMiddleware.intercept")
            }
            let (httpRequest, baseURL) = try Conversions.httpRequest(for: request, baseURL: call.baseURL)
            let (response, body) = try await call.send(httpRequest, baseURL: baseURL)
            var data = Data()
            if let body { data = try await Data(collecting: body, upTo: .max) }
            return (data, Conversions.head(of: response, url: url))
        }
    }
#endif
