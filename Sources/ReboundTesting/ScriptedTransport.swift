import Foundation
import Rebound

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A transport that answers from a script instead of the network, and records every request it is sent.
///
/// Give it a queue of steps, one per request in the order they arrive, or a closure that picks the step for each
/// request. A step is a response, an error, or a hang that lasts until the task is cancelled, optionally after
/// a delay slept on the transport's clock.
///
/// ```swift
/// let transport = ScriptedTransport([.status(503), .urlError(.timedOut), .response(status: 200, body: "ok")])
/// let session = Session(transport: transport, retriers: [RetryPolicy()], clock: FastForwardClock())
/// let response = try await session.send(URL(string: "https://example.com")!)
/// #expect(transport.requestCount == 3)
/// ```
///
/// When the queue runs out, a request fails with ``Exhausted``, which names the request. A scripted `URLError` is taken
/// as `URLSessionHTTPTransport` takes it: one of `URLSessionHTTPTransport.failureCodesBeforeSending` (a refused
/// connection, a DNS failure) means the request never reached the server (``failedBeforeSending(_:)``). All methods
/// are thread-safe.
public final class ScriptedTransport: HTTPTransport {
    /// One scripted answer.
    public struct Step: Sendable {
        enum Answer: Sendable {
            case response(status: Int, headers: [String: String], body: Data)
            case failure(any Error)
            case hang
        }

        let answer: Answer
        let delay: Duration

        /// A response with `status`, `headers` and `body`; status 200, no headers and an empty body by default.
        public static func response(status: Int = 200, headers: [String: String] = [:], body: Data = Data()) -> Step {
            Step(answer: .response(status: status, headers: headers, body: body), delay: .zero)
        }

        /// A response whose body is the UTF-8 encoding of `body`.
        public static func response(status: Int = 200, headers: [String: String] = [:], body: String) -> Step {
            response(status: status, headers: headers, body: Data(body.utf8))
        }

        /// A response with `status`, no headers and an empty body.
        public static func status(_ status: Int) -> Step {
            response(status: status)
        }

        /// The transport throws `error`.
        public static func failure(_ error: any Error) -> Step {
            Step(answer: .failure(error), delay: .zero)
        }

        /// The transport throws `URLError(code)`.
        public static func urlError(_ code: URLError.Code) -> Step {
            failure(URLError(code))
        }

        /// The send never finishes; it throws `CancellationError` when the calling task is cancelled.
        public static let hang = Step(answer: .hang, delay: .zero)

        /// The same step, answered after `delay` on the transport's clock (cancellably).
        public func delayed(by delay: Duration) -> Step {
            Step(answer: answer, delay: self.delay + delay)
        }
    }

    /// The error a request gets when the script has no step left for it.
    public struct Exhausted: Error, CustomStringConvertible {
        /// The number of the request, counting from 1, that found no step.
        public let requestNumber: Int
        /// The request that found no step.
        public let request: URLRequest

        /// Says which request found the script empty.
        public var description: String {
            "ScriptedTransport has no step for request #\(requestNumber) (\(request.method) \(request.url?.absoluteString ?? "-"))"
        }
    }

    /// A closure that picks the step for a request, given the request and its number counting from 1.
    public typealias Handler = @Sendable (URLRequest, Int) async throws -> Step

    private struct State {
        var queue: [Step] = []
        var requests: [URLRequest] = []
    }

    private let state = Locked(State())
    private let handler: Handler?
    private let sleep: @Sendable (Duration) async throws -> Void
    private let sentSignal = CountSignal()

    /// Creates a transport that answers requests with `steps`, in order.
    ///
    /// - Parameters:
    ///   - steps: One step per request, in the order requests arrive; more can be added with ``enqueue(_:)``.
    ///   - clock: The clock that step delays are slept on; an ``FastForwardClock`` by default.
    public init<C: Clock>(_ steps: [Step] = [], clock: C = FastForwardClock()) where C.Duration == Duration {
        state.withLock { $0.queue = steps }
        handler = nil
        sleep = { try await clock.sleep(for: $0) }
    }

    /// Creates a transport that asks `handler` for the step of each request.
    ///
    /// - Parameters:
    ///   - clock: The clock that step delays are slept on; an ``FastForwardClock`` by default.
    ///   - handler: Picks the step for a request, given the request and its number counting from 1; an error it
    ///     throws is thrown by the transport.
    public init<C: Clock>(clock: C = FastForwardClock(), handler: @escaping Handler) where C.Duration == Duration {
        self.handler = handler
        sleep = { try await clock.sleep(for: $0) }
    }

    /// Adds steps at the end of the queue.
    public func enqueue(_ steps: Step...) {
        state.withLock { $0.queue.append(contentsOf: steps) }
    }

    /// Every request sent so far, in order.
    public var requests: [URLRequest] { state.withLock { $0.requests } }

    /// How many requests were sent so far.
    public var requestCount: Int { sentSignal.count }

    /// Suspends until at least `count` requests in all have been sent.
    ///
    /// - Throws: `CancellationError` if the waiting task is cancelled first.
    public func waitForRequests(_ count: Int) async throws {
        try await sentSignal.wait(atLeast: count)
    }

    /// Whether `error` is a `URLError` that `URLSessionHTTPTransport` counts as failing before sending.
    public func failedBeforeSending(_ error: any Error) -> Bool {
        (error as? URLError).map { URLSessionHTTPTransport.failureCodesBeforeSending.contains($0.code) } ?? false
    }

    /// Records `request` and answers it with the next step, as a head whose `HTTPURLResponse` is built only when code
    /// asks for it (its fields in order of name), as a transport on another HTTP client answers.
    public func exchange(_ request: URLRequest) async throws -> (Data, ResponseHead) {
        let (number, queued) = state.withLock { state -> (Int, Step?) in
            state.requests.append(request)
            return (state.requests.count, handler == nil && !state.queue.isEmpty ? state.queue.removeFirst() : nil)
        }
        sentSignal.increment()

        let step: Step
        if let handler {
            step = try await handler(request, number)
        } else if let queued {
            step = queued
        } else {
            throw Exhausted(requestNumber: number, request: request)
        }

        if step.delay > .zero { try await sleep(step.delay) }
        try Task.checkCancellation()
        switch step.answer {
        case .response(let status, let headers, let body):
            let url = request.url ?? URL(string: "http://localhost/")!
            let fields = headers.sorted { $0.key < $1.key }.map { (name: $0.key, value: $0.value) }
            return (body, ResponseHead(url: url, statusCode: status, headerFields: fields))
        case .failure(let error):
            throw error
        case .hang:
            try await CountSignal().wait(atLeast: 1)
            throw CancellationError()
        }
    }
}
