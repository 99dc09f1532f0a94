import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Sends requests with Foundation's `URLSession` (FoundationNetworking on Linux); the default transport.
///
/// It sends each request once and returns what the server answered, whatever the status: a redirect (3xx) comes back
/// as is, with its `Location` header and body, and is never followed here (the ``Session`` follows redirects), and a
/// 401 comes back as a 401 with its body, so that ``AuthenticationInterceptor`` can refresh and retry.
///
/// `URLSessionTransport()` sends through a `URLSession` of its own, created with a delegate that refuses redirects
/// and turns an HTTP authentication challenge into its 401 response. That session lives as long as the transport
/// (and its copies): it is invalidated once the last copy is released and its tasks have finished. Create one
/// transport and reuse it, so that its connections are kept alive between requests.
///
/// On Linux every challenge is cancelled and its 401 delivered, because answering it by default hangs the task with
/// Swift 6.3.1 (swift-corelibs-foundation issue #5456). On Apple platforms a challenge gets `URLSession`'s default
/// handling, which delivers the 401 unless the configuration's `urlCredentialStorage` holds a credential for that
/// protection space: set it to `nil` to rule that out.
///
/// `URLSessionTransport(session:)` sends through a session you bring. It sets a delegate on each task to refuse
/// redirects and to answer authentication challenges, but cannot do everything the transport's own session does; see
/// ``init(session:)``.
///
/// Cancelling the calling task cancels the data task at once and the send ends with `CancellationError` (a task that
/// is already cancelled sends nothing). Other errors are the `URLError`s that `URLSession` reports, codes unchanged.
/// Sends may run concurrently from any number of tasks.
public struct URLSessionTransport: HTTPTransport {
    /// The session requests go through: the transport's own, or the one given to ``init(session:)``.
    public let session: URLSession

    /// The transport's own session and its delegate; `nil` for a session the caller brought.
    private let owned: OwnedSession?

    /// Creates a transport with a `URLSession` of its own, made with `configuration` (`.default` by default).
    ///
    /// The session follows no redirect, and an authentication challenge reaches the caller as its 401 (see above).
    /// It is invalidated when the last copy of the transport is released, after its tasks finish.
    public init(configuration: URLSessionConfiguration = .default) {
        let owned = OwnedSession(configuration: configuration)
        self.owned = owned
        self.session = owned.session
    }

    /// Creates a transport that sends through `session`, which the caller keeps and invalidates.
    ///
    /// Each request runs as a data task with a completion handler and a delegate of its own (the task's `delegate`),
    /// which refuses redirects, so a 3xx comes back as is, and on Linux cancels authentication challenges, so a 401
    /// comes back as a 401 instead of hanging (swift-corelibs-foundation issue #5456, in Swift 6.3.1). The session's
    /// own delegate is not asked about redirects or challenges. What a session of your own cannot give, on Linux:
    /// - The body of a 3xx: swift-corelibs-foundation hands a completion handler an empty body for a redirect that
    ///   is not followed. The status and headers (`Location`) arrive.
    /// - The body of a 401 whose challenge was cancelled (`Basic`): it arrives with an empty body.
    ///
    /// ``init(configuration:)`` keeps both bodies, and is the one to use unless you need a particular `URLSession`.
    public init(session: URLSession) {
        self.session = session
        self.owned = nil
    }

    /// Sends `request` once and returns the body and the response, whatever its status; a 3xx is never followed.
    public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        // A cancelled task sends nothing: the data task would otherwise reach the server before being cancelled.
        try Task.checkCancellation()
        let data: Data
        let response: URLResponse?
        do {
            if let owned {
                (data, response) = try await owned.send(request)
            } else {
                (data, response) = try await ForeignSessionSend.send(request, through: session)
            }
        } catch {
            // A cancelled data task reports `URLError.cancelled`; the caller asked for cancellation, so say that.
            if Task.isCancelled { throw CancellationError() }
            throw error
        }
        if Task.isCancelled { throw CancellationError() }
        guard let httpResponse = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
        return (data, httpResponse)
    }
}

/// How the transport answers an authentication challenge, and whether it then delivers the 401 itself.
///
/// On Linux (swift-corelibs-foundation), every challenge is an HTTP one (Basic, Digest, NTLM, Negotiate: TLS
/// challenges do not exist there), and a challenge answered with `.performDefaultHandling` and no credential hangs
/// the task for good (issue #5456, fixed upstream in #5457 but not in Swift 6.3.1); cancelling the challenge ends the
/// task with `URLError.cancelled`, after the whole 401 has been received, so the transport delivers that 401 instead.
/// On Apple platforms the challenge comes before the body and default handling without a credential completes the
/// task with the 401 and its body, as it always has.
private var challengeDisposition: URLSession.AuthChallengeDisposition {
    #if canImport(FoundationNetworking)
        .cancelAuthenticationChallenge
    #else
        .performDefaultHandling
    #endif
}

/// The transport's own `URLSession`, invalidated when the last transport holding it is released.
///
/// The session retains its delegate until it is invalidated, and the delegate holds nothing back, so there is no
/// cycle: releasing this object invalidates the session, which then lets its delegate go once its tasks finish.
private final class OwnedSession: Sendable {
    let session: URLSession
    private let delegate: TransportDelegate

    init(configuration: URLSessionConfiguration) {
        let delegate = TransportDelegate()
        self.delegate = delegate
        // A serial queue, so that one task's callbacks arrive in order, on a dispatch queue of its own: on Linux
        // that makes each callback's hop cheaper than the session's default queue does (Docs/Performance.md, 6).
        // `underlyingQueue` is `unowned(unsafe)`: the delegate keeps the dispatch queue alive, and the session keeps
        // the delegate until its invalidation has been delivered on that queue.
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.underlyingQueue = delegate.queue
        session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: queue)
    }

    deinit {
        session.finishTasksAndInvalidate()
    }

    /// Runs one data task for `request`; its outcome arrives through the delegate.
    func send(_ request: URLRequest) async throws -> (Data, URLResponse?) {
        let task = session.dataTask(with: request)
        let id = task.taskIdentifier
        // Opened before the task can run or be cancelled, so that every callback finds its exchange.
        delegate.open(id)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                if delegate.attach(continuation, to: id) { task.resume() }
            }
        } onCancel: {
            // Also fine before `resume()`: a suspended task that is cancelled completes with `URLError.cancelled`
            // and never starts.
            task.cancel()
        }
    }
}

/// The delegate of the transport's own session: collects each task's body, refuses redirects, answers HTTP
/// challenges with the 401, and ends each send exactly once when its task completes.
private final class TransportDelegate: NSObject, URLSessionDataDelegate, Sendable {
    fileprivate typealias Continuation = CheckedContinuation<(Data, URLResponse?), any Error>

    /// One task's progress, from `open` to its removal when the send is resumed.
    private struct Exchange: Sendable {
        var continuation: Continuation?
        var body = Data()
        /// Whether the transport cancelled an HTTP authentication challenge: the `URLError.cancelled` that follows
        /// then means "here is the 401".
        var cancelledChallenge = false
        /// The outcome, when the task completed before the send attached its continuation (it was cancelled early).
        var outcome: Result<(Data, URLResponse?), any Error>?
    }

    private let exchanges = Locked([Int: Exchange]())

    /// The dispatch queue under the session's delegate queue, owned here (see `OwnedSession.init`).
    let queue = DispatchQueue(label: "URLSessionTransport")

    /// Starts tracking the task `id`, before it is resumed or can be cancelled.
    func open(_ id: Int) {
        exchanges.withLock { $0[id] = Exchange() }
    }

    /// Attaches the send's continuation to the task `id`; returns whether to resume the task, or resumes the
    /// continuation itself if the task has already completed.
    func attach(_ continuation: Continuation, to id: Int) -> Bool {
        let early = exchanges.withLock { exchanges -> Result<(Data, URLResponse?), any Error>? in
            if let outcome = exchanges[id]?.outcome {
                exchanges[id] = nil
                return outcome
            }
            exchanges[id]?.continuation = continuation
            return nil
        }
        guard let early else { return true }
        continuation.resume(with: early)
        return false
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        exchanges.withLock { $0[dataTask.taskIdentifier]?.body.append(data) }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        // The session follows redirects, not the transport: the 3xx completes the task as its response.
        completionHandler(nil)
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        let disposition = challengeDisposition
        if disposition == .cancelAuthenticationChallenge {
            exchanges.withLock { $0[task.taskIdentifier]?.cancelledChallenge = true }
        }
        completionHandler(disposition, nil)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let id = task.taskIdentifier
        let response = task.response
        let ended = exchanges.withLock { exchanges -> (Continuation, Result<(Data, URLResponse?), any Error>)? in
            guard let exchange = exchanges[id] else { return nil }
            let outcome: Result<(Data, URLResponse?), any Error>
            if let error, !(exchange.cancelledChallenge && response is HTTPURLResponse) {
                outcome = .failure(error)
            } else {
                outcome = .success((exchange.body, response))
            }
            guard let continuation = exchange.continuation else {
                // Cancelled before the send attached: `attach` finds the outcome and ends the send.
                exchanges[id]?.outcome = outcome
                return nil
            }
            exchanges[id] = nil
            return (continuation, outcome)
        }
        guard let (continuation, outcome) = ended else { return }
        continuation.resume(with: outcome)
    }
}

/// One send through a session the caller brought: a data task with a completion handler, and a delegate of its own
/// that refuses redirects and answers HTTP challenges.
private final class ForeignSessionSend: NSObject, URLSessionTaskDelegate, Sendable {
    private struct State: Sendable {
        var task: URLSessionTask?
        var cancelled = false
        var cancelledChallenge = false
    }

    private let state = Locked(State())

    static func send(_ request: URLRequest, through session: URLSession) async throws -> (Data, URLResponse?) {
        let send = ForeignSessionSend()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                // `URLSession` calls the completion handler exactly once, also for a task cancelled before it ran.
                let task = session.dataTask(with: request) { data, response, error in
                    let challengedResponse = send.finish()
                    if let error {
                        // A cancelled challenge: the completion carries the error alone, the task has the 401.
                        if let challengedResponse {
                            continuation.resume(returning: (Data(), challengedResponse))
                        } else {
                            continuation.resume(throwing: error)
                        }
                    } else {
                        continuation.resume(returning: (data ?? Data(), response))
                    }
                }
                task.delegate = send
                send.start(task)
            }
        } onCancel: {
            send.cancel()
        }
    }

    /// Resumes `task`, or cancels it if the calling task was cancelled meanwhile.
    private func start(_ task: URLSessionTask) {
        let cancelled = state.withLock { state -> Bool in
            state.task = task
            return state.cancelled
        }
        task.resume()
        if cancelled { task.cancel() }
    }

    private func cancel() {
        let task = state.withLock { state -> URLSessionTask? in
            state.cancelled = true
            return state.task
        }
        task?.cancel()
    }

    /// Lets go of the task (which retains this delegate); returns its HTTP response if the transport cancelled a
    /// challenge.
    private func finish() -> HTTPURLResponse? {
        let (task, cancelledChallenge) = state.withLock { state in
            defer { state.task = nil }
            return (state.task, state.cancelledChallenge)
        }
        return cancelledChallenge ? task?.response as? HTTPURLResponse : nil
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        let disposition = challengeDisposition
        if disposition == .cancelAuthenticationChallenge {
            state.withLock { $0.cancelledChallenge = true }
        }
        completionHandler(disposition, nil)
    }
}
