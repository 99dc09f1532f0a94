import Dispatch
import Foundation
import Rebound

/// An HTTP/1.1 server on 127.0.0.1, started in-process by a test, that answers scripted routes and counts what each
/// route received.
///
/// It binds an ephemeral port when created and serves until ``stop()`` or until it is released. Each route answers
/// with a sequence of replies, one per request, the last one repeating (503, 503, 200 answers every request after
/// the second with 200), or with a closure. A reply can carry headers such as `Retry-After`, a body, a delay, or
/// drop the connection without answering. Paths without a route answer 404.
///
/// ```swift
/// let server = try LoopbackServer()
/// defer { server.stop() }
/// server.route("/flaky", [.status(503), .status(503), .status(200, body: "ok")])
/// let response = try await session.send(server.url("/flaky"))
/// #expect(server.hits("/flaky") == 3)
/// ```
///
/// Stop it with `defer { server.stop() }` right after creating it. It also stops when released, but Swift may
/// release a local as soon as its last use, which can come before a request to it has finished: the server would
/// then close that request's connection under it. The `defer` keeps it alive to the end of the scope.
///
/// Connections are kept alive, each served by its own thread with `TCP_NODELAY` set, so the server keeps up with
/// thousands of requests a second. All methods are thread-safe.
public final class LoopbackServer: Sendable {
    /// A scripted answer to one request.
    public struct Reply: Sendable {
        /// The status code.
        public var status: Int
        /// The header fields, sent in this order; `Content-Length` is always computed by the server, and
        /// `Connection: close` closes the connection after the reply.
        public var headers: [(name: String, value: String)]
        /// The body.
        public var body: Data
        /// How long the server waits before answering; zero by default.
        public var delay: Duration
        /// Whether the server closes the connection instead of answering, after ``delay``.
        public var dropsConnection: Bool
        /// Whether the server sends the head and only half the body, then closes the connection.
        public var truncatesBody = false
        /// A way to misbehave, for testing timeouts and lost connections; none by default.
        public var fault: Fault?

        /// Ways a reply misbehaves.
        ///
        /// A minor release may add a case: switch over it with `@unknown default` (Rebound's `Docs/APIStability.md`).
        public enum Fault: Sendable, Equatable {
            /// Never answers: the connection stays open, silent, until the server stops.
            case stallBeforeHeaders
            /// Sends the head and half the body, then nothing more until the server stops.
            case stallMidBody
            /// Resets the connection (an RST) instead of answering.
            case reset
            /// Sends the reply `bytes` at a time, waiting `interval` between chunks.
            case trickle(bytes: Int, interval: Duration)
            /// Answers as if keeping the connection alive, then closes it without a word: the client finds out when
            /// it sends its next request on it.
            case closeAfterReply
            /// Sends the head with `Transfer-Encoding: chunked` and half the body as one chunk, then closes the
            /// connection without the last chunk: a chunked response cut short.
            case truncatedChunkedBody
            /// Sends a status line that is not HTTP (`HTTP/1.1 2x0 Broken`), then closes the connection: a proxy or
            /// server that answers garbage.
            case malformedStatusLine
        }

        /// A reply with `status`, `headers` and a UTF-8 `body`; no headers and an empty body by default.
        public static func status(_ status: Int, headers: [String: String] = [:], body: String = "") -> Reply {
            response(status: status, headers: headers, body: Data(body.utf8))
        }

        /// A reply with `status`, `headers` and `body`.
        public static func response(status: Int, headers: [String: String] = [:], body: Data) -> Reply {
            Reply(
                status: status, headers: headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }, body: body,
                delay: .zero, dropsConnection: false)
        }

        /// A reply whose body is `json`, with `Content-Type: application/json`.
        public static func json(_ json: String, status: Int = 200) -> Reply {
            .status(status, headers: ["Content-Type": "application/json"], body: json)
        }

        /// Closes the connection after reading the request, without answering.
        public static let drop = Reply(status: 0, headers: [], body: Data(), delay: .zero, dropsConnection: true)

        /// Sends the head of a response with `status` and a body of `length` bytes, but only half the body, then
        /// closes the connection: a connection lost in the middle of a response.
        public static func truncated(status: Int = 200, length: Int = 1024) -> Reply {
            var reply = response(status: status, body: Data(repeating: UInt8(ascii: "x"), count: max(length, 2)))
            reply.truncatesBody = true
            return reply
        }

        /// Accepts the request and never answers, until the server stops: a server that hangs.
        public static let stall = Reply(
            status: 0, headers: [], body: Data(), delay: .zero, dropsConnection: false, fault: .stallBeforeHeaders)

        /// Resets the connection after reading the request: a connection reset by the peer.
        public static let reset = Reply(
            status: 0, headers: [], body: Data(), delay: .zero, dropsConnection: false, fault: .reset)

        /// Sends the head of a response with `status` and half of a `length`-byte body, then stalls until the server
        /// stops: a server that hangs in the middle of a body.
        public static func stallMidBody(status: Int = 200, length: Int = 1024) -> Reply {
            var reply = response(status: status, body: Data(repeating: UInt8(ascii: "x"), count: max(length, 2)))
            reply.fault = .stallMidBody
            return reply
        }

        /// Sends the head and half the body, then closes the connection: the same as ``truncated(status:length:)``.
        public static func closeMidBody(status: Int = 200, length: Int = 1024) -> Reply {
            truncated(status: status, length: length)
        }

        /// Sends the head of a response with `status`, `Transfer-Encoding: chunked` and half of a `length`-byte body
        /// as one chunk, then closes the connection before the last chunk: a chunked body cut short.
        public static func truncatedChunked(status: Int = 200, length: Int = 1024) -> Reply {
            var reply = response(status: status, body: Data(repeating: UInt8(ascii: "x"), count: max(length, 2)))
            reply.fault = .truncatedChunkedBody
            return reply
        }

        /// Answers with a status line that is not HTTP, then closes the connection.
        public static let malformedStatusLine = Reply(
            status: 200, headers: [], body: Data("ok".utf8), delay: .zero, dropsConnection: false,
            fault: .malformedStatusLine)

        /// The same reply, sent `bytes` at a time with `interval` of real time between chunks: a slow server.
        public func trickled(bytes: Int = 1, every interval: Duration) -> Reply {
            var reply = self
            reply.fault = .trickle(bytes: max(bytes, 1), interval: interval)
            return reply
        }

        /// The same reply, after which the server closes the kept-alive connection without saying so.
        public func closingSilently() -> Reply {
            var reply = self
            reply.fault = .closeAfterReply
            return reply
        }

        /// Whether the server closes the connection after this reply: when the reply carries `Connection: close`.
        public var closesConnection: Bool {
            headers.contains {
                $0.name.caseInsensitiveCompare("Connection") == .orderedSame && $0.value.lowercased() == "close"
            }
        }

        /// The same reply, sent (or the connection dropped) after `delay` of real time.
        public func delayed(by delay: Duration) -> Reply {
            var reply = self
            reply.delay += delay
            return reply
        }
    }

    /// A request as the server received it.
    public struct Request: Sendable {
        /// The method, for example `"GET"`.
        public let method: String
        /// The path, without the query.
        public let path: String
        /// The query, without the `?`; `nil` if the target had none.
        public let query: String?
        /// The header fields in the order received.
        public let headers: [(name: String, value: String)]
        /// The body, de-chunked if it was sent chunked; empty if none.
        public let body: Data

        /// The first value of the header `name`, compared without regard to case.
        public func value(forHeader name: String) -> String? {
            headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
        }
    }

    /// The closure form of a route: the request and its number on this route, counting from 1, in; the reply out.
    public typealias Handler = @Sendable (Request, Int) -> Reply

    /// The port the server listens on, on 127.0.0.1.
    public let port: UInt16

    private let core: ServerCore

    /// Starts a server on an ephemeral port of 127.0.0.1.
    ///
    /// - Throws: An error naming the socket call that failed, if the port cannot be opened.
    public convenience init() throws {
        let (listener, port) = try POSIXSocket.listenOnLoopback()
        try self.init(listener: listener, port: port)
    }

    /// Starts a server on `listener`, a socket listening on `port` of 127.0.0.1, which it takes over.
    init(listener: Int32, port: UInt16) throws {
        self.port = port
        do {
            core = try ServerCore(listener: listener)
        } catch {
            POSIXSocket.closeSocket(listener)
            throw error
        }
        core.start()
    }

    deinit {
        core.stop()
    }

    /// `http://127.0.0.1:<port>`.
    public var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// The URL of `path` (which may carry a query) on this server.
    public func url(_ path: String) -> URL {
        URL(string: "http://127.0.0.1:\(port)\(path.hasPrefix("/") ? "" : "/")\(path)")!
    }

    /// Answers requests to `path` with `replies` in order, one per request; the last reply repeats.
    ///
    /// Replaces any route `path` had, and its counts.
    public func route(_ path: String, _ replies: [Reply]) {
        precondition(!replies.isEmpty, "LoopbackServer.route(_:_:) needs at least one reply for \(path)")
        route(path) { _, number in replies[min(number, replies.count) - 1] }
    }

    /// Answers requests to `path` with what `handler` returns for each.
    ///
    /// Replaces any route `path` had, and its counts.
    public func route(_ path: String, handler: @escaping Handler) {
        core.setRoute(path, handler: handler)
    }

    /// How many requests `path` has received.
    public func hits(_ path: String) -> Int {
        core.requests(path).count
    }

    /// How many requests to `path` the client gave up on while their reply was delayed: it closed the connection
    /// (as a client does when it cancels a request), and the server wrote nothing.
    public func abandoned(_ path: String) -> Int {
        core.abandoned(path)
    }

    /// The requests `path` has received, in order.
    public func requests(_ path: String) -> [Request] {
        core.requests(path)
    }

    /// How many requests the server has received in all, on every path.
    public var totalHits: Int { core.totalHits }

    /// Suspends until the server has received at least `count` requests in all, on every path.
    ///
    /// A request counts as received once it has been read whole, before its reply's delay.
    /// - Throws: `CancellationError` if the waiting task is cancelled first.
    public func waitForRequests(_ count: Int) async throws {
        try await core.received.wait(atLeast: count)
    }

    /// Stops accepting connections, closes the open ones, and returns when every server thread has finished.
    ///
    /// Requests being delayed are dropped. Calling it again does nothing.
    public func stop() {
        core.stop()
    }
}

extension LoopbackServer.Reply.Fault {
    /// Whether the server closes the connection after a reply with this fault (the faults that end before the
    /// reply's end close it at once).
    var closesConnection: Bool {
        switch self {
        case .closeAfterReply, .truncatedChunkedBody, .malformedStatusLine: true
        case .stallBeforeHeaders, .stallMidBody, .reset, .trickle: false
        }
    }
}

/// The server's state and threads, apart from the public handle so that threads do not keep the handle alive.
private final class ServerCore: Sendable {
    private struct Route {
        var handler: LoopbackServer.Handler
        var requests: [LoopbackServer.Request] = []
    }

    private struct State {
        var routes: [String: Route] = [:]
        var unrouted: [String: [LoopbackServer.Request]] = [:]
        var connections: Set<Int32> = []
        var abandoned: [String: Int] = [:]
        var stopped = false
    }

    private let listener: Int32
    private let wake: (read: Int32, write: Int32)
    private let state = Locked(State())
    private let threads = DispatchGroup()
    let received = CountSignal()

    init(listener: Int32) throws {
        self.listener = listener
        wake = try POSIXSocket.makePipe()
    }

    func start() {
        spawn { self.acceptLoop() }
    }

    func setRoute(_ path: String, handler: @escaping LoopbackServer.Handler) {
        state.withLock { state in
            state.routes[path] = Route(handler: handler)
            state.unrouted[path] = nil
        }
    }

    func requests(_ path: String) -> [LoopbackServer.Request] {
        state.withLock { $0.routes[path]?.requests ?? $0.unrouted[path] ?? [] }
    }

    var totalHits: Int { received.count }

    func abandoned(_ path: String) -> Int {
        state.withLock { $0.abandoned[path] ?? 0 }
    }

    func stop() {
        let stopping = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            state.stopped = true
            // Under the lock, so that no connection thread closes one of these descriptors meanwhile and lets the
            // process reuse its number for another socket, which this would then shut down.
            for fd in state.connections { POSIXSocket.shutdownBoth(fd) }
            return true
        }
        guard stopping else { return }
        POSIXSocket.signal(wake.write)
        threads.wait()
        POSIXSocket.closeSocket(listener)
        POSIXSocket.closeSocket(wake.read)
        POSIXSocket.closeSocket(wake.write)
    }

    private func spawn(_ body: @escaping @Sendable () -> Void) {
        threads.enter()
        let thread = Thread { [threads] in
            body()
            threads.leave()
        }
        thread.stackSize = 512 * 1024
        thread.start()
    }

    private func acceptLoop() {
        while POSIXSocket.waitReadable(listener, orWake: wake.read) {
            guard let fd = POSIXSocket.acceptConnection(listener) else { continue }
            let accepted = state.withLock { state in
                guard !state.stopped else { return false }
                state.connections.insert(fd)
                return true
            }
            guard accepted else {
                POSIXSocket.closeSocket(fd)
                return
            }
            spawn { self.serve(fd) }
        }
    }

    private func serve(_ fd: Int32) {
        defer {
            // Closed under the lock: see `stop()`.
            state.withLock { state in
                state.connections.remove(fd)
                POSIXSocket.closeSocket(fd)
            }
        }
        var buffer: [UInt8] = []
        while true {
            let head: HTTPRequestParser.Head
            let body: Data
            switch readRequest(fd, into: &buffer) {
            case .closed:
                return
            case .invalid(let reason):
                respond(fd, status: 400, headers: [], body: Data(reason.utf8), keepAlive: false, isHead: false)
                return
            case .request(let parsedHead, let parsedBody):
                (head, body) = (parsedHead, parsedBody)
            }

            let (path, query) = Self.split(head.target)
            let request = LoopbackServer.Request(
                method: head.method, path: path, query: query, headers: head.headers, body: body)
            let reply = record(request)
            if reply.delay > .zero {
                let milliseconds = Int32(
                    clamping: reply.delay.components.seconds * 1000
                        + reply.delay.components.attoseconds / 1_000_000_000_000_000)
                switch POSIXSocket.sleep(milliseconds: milliseconds, orWake: wake.read, watching: fd) {
                case .elapsed: break
                case .woken: return
                case .peerClosed:
                    state.withLock { $0.abandoned[path, default: 0] += 1 }
                    return
                }
            }
            if reply.dropsConnection { return }
            switch reply.fault {
            case .stallBeforeHeaders:
                _ = POSIXSocket.sleep(milliseconds: -1, orWake: wake.read)
                return
            case .reset:
                POSIXSocket.resetOnClose(fd)
                return
            case .stallMidBody:
                _ = respond(
                    fd, status: reply.status, headers: reply.headers, body: reply.body, keepAlive: true,
                    isHead: false, truncated: true)
                _ = POSIXSocket.sleep(milliseconds: -1, orWake: wake.read)
                return
            case .trickle, .closeAfterReply, .truncatedChunkedBody, .malformedStatusLine, nil:
                break
            }
            let keepAlive = head.keepsAlive && !reply.closesConnection
            guard
                respond(
                    fd, status: reply.status, headers: reply.headers, body: reply.body, keepAlive: keepAlive,
                    isHead: head.method == "HEAD", truncated: reply.truncatesBody, fault: reply.fault),
                keepAlive, !reply.truncatesBody, !(reply.fault?.closesConnection ?? false)
            else { return }
        }
    }

    private enum Incoming {
        case request(HTTPRequestParser.Head, Data)
        case invalid(String)
        case closed
    }

    /// Reads the next whole request from `fd`, keeping any bytes after it in `buffer` for the next one.
    private func readRequest(_ fd: Int32, into buffer: inout [UInt8]) -> Incoming {
        var head: HTTPRequestParser.Head?
        var sentContinue = false
        while true {
            if let current = head {
                switch HTTPRequestParser.parseBody(buffer[current.length...], framing: current.bodyFraming) {
                case .body(let body, let consumed):
                    buffer.removeFirst(current.length + consumed)
                    return .request(current, body)
                case .invalid(let reason):
                    return .invalid(reason)
                case .incomplete:
                    // A client that sent `Expect: 100-continue` waits for this before sending the body.
                    if current.expectsContinue && !sentContinue {
                        sentContinue = true
                        guard POSIXSocket.writeAll(fd, Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) else {
                            return .closed
                        }
                    }
                }
            } else {
                switch HTTPRequestParser.parseHead(buffer) {
                case .head(let parsed):
                    head = parsed
                    continue
                case .invalid(let reason):
                    return .invalid(reason)
                case .incomplete:
                    break
                }
            }
            guard receive(fd, into: &buffer) else { return .closed }
        }
    }

    private func receive(_ fd: Int32, into buffer: inout [UInt8]) -> Bool {
        POSIXSocket.waitReadable(fd, orWake: wake.read) && POSIXSocket.readAvailable(fd, into: &buffer)
    }

    /// Counts the request on its route and returns the route's reply (404 for a path without a route).
    private func record(_ request: LoopbackServer.Request) -> LoopbackServer.Reply {
        let (handler, number) = state.withLock { state -> (LoopbackServer.Handler?, Int) in
            defer { received.increment() }
            guard state.routes[request.path] != nil else {
                state.unrouted[request.path, default: []].append(request)
                return (nil, state.unrouted[request.path]!.count)
            }
            state.routes[request.path]!.requests.append(request)
            return (state.routes[request.path]!.handler, state.routes[request.path]!.requests.count)
        }
        guard let handler else { return .status(404, body: "no route for \(request.path)") }
        return handler(request, number)
    }

    @discardableResult
    private func respond(
        _ fd: Int32, status: Int, headers: [(name: String, value: String)], body: Data, keepAlive: Bool,
        isHead: Bool, truncated: Bool = false, fault: LoopbackServer.Reply.Fault? = nil
    ) -> Bool {
        let chunked = fault == .truncatedChunkedBody
        var head =
            fault == .malformedStatusLine
            ? "HTTP/1.1 2x0 Broken\r\n" : "HTTP/1.1 \(status) \(Self.reasonPhrase(status))\r\n"
        var hasCacheControl = false
        for (name, value) in headers where name.caseInsensitiveCompare("Content-Length") != .orderedSame {
            if name.caseInsensitiveCompare("Cache-Control") == .orderedSame { hasCacheControl = true }
            head += "\(name): \(value)\r\n"
        }
        // Keep clients' caches out of the way of scripted sequences.
        if !hasCacheControl { head += "Cache-Control: no-store\r\n" }
        head += chunked ? "Transfer-Encoding: chunked\r\n" : "Content-Length: \(body.count)\r\n"
        let hasConnection = headers.contains { $0.name.caseInsensitiveCompare("Connection") == .orderedSame }
        if !keepAlive && !hasConnection { head += "Connection: close\r\n" }
        head += "\r\n"
        var bytes = Array(head.utf8)
        if chunked {
            // One chunk of half the body, and no last chunk: the connection closes after it.
            let half = body.prefix(body.count / 2)
            bytes += Array("\(String(half.count, radix: 16))\r\n".utf8) + half + Array("\r\n".utf8)
        } else if !isHead {
            bytes.append(contentsOf: truncated ? body.prefix(body.count / 2) : body)
        }
        guard case .trickle(let size, let interval) = fault else { return POSIXSocket.writeAll(fd, bytes) }
        let milliseconds = Int32(
            clamping: interval.components.seconds * 1000 + interval.components.attoseconds / 1_000_000_000_000_000)
        var offset = 0
        while offset < bytes.count {
            let end = min(offset + size, bytes.count)
            guard POSIXSocket.writeAll(fd, Array(bytes[offset..<end])) else { return false }
            offset = end
            // A stopping server stops trickling.
            if offset < bytes.count, !POSIXSocket.sleep(milliseconds: milliseconds, orWake: wake.read) { return false }
        }
        return true
    }

    private static func split(_ target: String) -> (path: String, query: String?) {
        guard let mark = target.firstIndex(of: "?") else { return (target, nil) }
        return (String(target[..<mark]), String(target[target.index(after: mark)...]))
    }

    private static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 201: "Created"
        case 204: "No Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 304: "Not Modified"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 408: "Request Timeout"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        default: "Status \(status)"
        }
    }
}
