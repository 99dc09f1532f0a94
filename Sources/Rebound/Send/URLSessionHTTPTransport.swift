import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Sends requests with Foundation's `URLSession` (FoundationNetworking on Linux); the default transport.
///
/// It sends each request once and returns what the server answered, whatever the status: a redirect (3xx) comes back
/// as is, with its `Location` header, and is never followed here (the ``Session`` follows redirects), and a 401 comes
/// back as a 401, so that ``AuthenticationInterceptor`` can refresh and retry.
///
/// Each send is a data task with a completion handler and a small delegate of its own (the task's `delegate`), which
/// refuses redirects and answers authentication challenges; it is asked nothing about an ordinary response. The
/// transport does not call `URLSession.data(for:)`: on Linux (Swift 6.3.1) cancelling a task that waits in it can
/// deadlock against its completion, and stall the process (Docs/Performance.md, section 6).
///
/// `URLSessionHTTPTransport()` sends through a `URLSession` of its own. On Linux its delegate queue runs each
/// completion at once, on `URLSession`'s own queue, as `data(for:)` does, so an ordinary request costs what
/// `data(for:)` costs.
/// That session lives as long as the transport (and its copies): it is invalidated once the last copy is released
/// and its tasks have finished. Create one transport and reuse it, so that its connections are kept alive between
/// requests. If you use its ``session`` directly, a completion handler you give it (`getAllTasks`, say) runs on that
/// queue too, and must not call back into the session synchronously: cancel tasks from another queue.
///
/// `URLSessionHTTPTransport(session:)` sends the same way through a session you bring; each completion then hops to
/// that session's delegate queue, a thread wake-up per request on Linux (Docs/Performance.md, section 6).
///
/// What a data task with a completion handler cannot give on Linux, where swift-corelibs-foundation (Swift 6.3.1)
/// completes it with an empty body in two cases; the status and headers always arrive:
/// - the body of a 301, 302, 303, 305, 307 or 308 that is not followed (a 300 or 304 keeps its body);
/// - the body of a 401 whose challenge swift-corelibs-foundation raises and the transport cancels (a `Basic`
///   challenge; `Bearer`, `Digest` and `Negotiate` 401s arrive whole). On Linux every challenge is cancelled, because
///   answering it by default hangs the task (swift-corelibs-foundation issue #5456).
///
/// On Apple platforms both bodies arrive, and a challenge gets `URLSession`'s default handling, which delivers the
/// 401 unless the configuration's `urlCredentialStorage` holds a credential for that protection space: set it to
/// `nil` to rule that out.
///
/// Cancelling the calling task cancels the data task at once and the send ends with `CancellationError` (a task that
/// is already cancelled sends nothing). Other errors are the `URLError`s that `URLSession` reports, codes unchanged but
/// one: on Linux, a reply whose status line libcurl cannot read arrives as `.unsupportedURL`, which the transport
/// reports as `.badServerResponse` for an http(s) URL, as Apple platforms do.
/// Sends may run concurrently from any number of tasks.
///
/// **Cancellation on Linux.** swift-corelibs-foundation (Swift 6.3.1) looks every new task up in its session's
/// `URLCache` on another queue before it starts it; a task cancelled during that lookup can have its cancel delivered
/// after it finished and left its session, which traps the process ("Trying to access a behaviour for a task that in
/// not in the registry"). Hedging cancels the attempts that lose, often at that moment. So on Linux the transport's own
/// session has no `URLCache` (``init(configuration:)`` uses a copy of the configuration without one); a session given
/// to ``init(session:)`` should have none either (`configuration.urlCache = nil`) if its requests are hedged or
/// cancelled. On Apple platforms neither applies.
///
/// **A trap on Linux that no transport setting avoids.** swift-corelibs-foundation (Swift 6.3.1) traps ("Transfer
/// completed, but there's no response", a bug fixed upstream) when a connection closes after a request was
/// sent and part of a response head arrived: seen against a loopback server that trickles its head byte by byte while
/// the attempt times out, then closes. Against servers that may answer that slowly, prefer the AsyncHTTPClient
/// transport on Linux (`AsyncHTTPClientHTTPTransport`, with the `AsyncHTTPClient` trait).
public struct URLSessionHTTPTransport: HTTPTransport {
    /// The session requests go through: the transport's own, or the one given to ``init(session:)``.
    public let session: URLSession

    /// Invalidates the transport's own session when the last copy is released; `nil` for a session the caller
    /// brought. A send borrows the transport for its whole call, so the session outlives every send.
    private let owned: OwnedSession?

    /// Creates a transport with a `URLSession` of its own, made with `configuration` (`.default` by default).
    ///
    /// The session follows no redirect, and an authentication challenge reaches the caller as its 401 (see above).
    /// On Linux it has no `URLCache`, whatever `configuration` says (see above). It is invalidated when the last copy
    /// of the transport is released, after its tasks finish.
    public init(configuration: URLSessionConfiguration = .default) {
        let owned = OwnedSession(configuration: configuration)
        self.owned = owned
        self.session = owned.session
    }

    /// Creates a transport that sends through `session`, which the caller keeps and invalidates.
    ///
    /// Each request runs as described above; the session's own delegate is not asked about redirects or challenges,
    /// and each completion hops to the session's delegate queue. Prefer ``init(configuration:)`` unless you need a
    /// particular `URLSession`.
    public init(session: URLSession) {
        self.session = session
        self.owned = nil
    }

    /// The `URLError` codes after which no byte of the request reached the server: the host was not found
    /// (`cannotFindHost`, `dnsLookupFailed`), could not be connected to (`cannotConnectToHost`, a refused connection
    /// included), the device has no network (`notConnectedToInternet`, `dataNotAllowed`, `internationalRoamingOff`,
    /// `callIsActive`), or the TLS handshake failed, which comes before the request is written
    /// (`secureConnectionFailed`, the `serverCertificate…` and `clientCertificate…` codes,
    /// `appTransportSecurityRequiresSecureConnection`). A lost connection (`networkConnectionLost`) or a timeout
    /// (`timedOut`) may come after the request was written, and is not among them.
    ///
    /// With `enablesEarlyData` (Apple platforms, HTTP/3), `URLSession` may send a GET or a HEAD as early data before its
    /// handshake ends; no other method is sent so. On Linux a failed TLS handshake arrives as another code, and
    /// libcurl's own resend of a request on a new connection after a dead kept-alive one can end in
    /// `cannotConnectToHost` although the request went out on the dead connection.
    public static let failureCodesBeforeSending: Set<URLError.Code> = [
        .cannotFindHost, .dnsLookupFailed, .cannotConnectToHost, .notConnectedToInternet, .dataNotAllowed,
        .internationalRoamingOff, .callIsActive, .secureConnectionFailed, .serverCertificateHasBadDate,
        .serverCertificateUntrusted, .serverCertificateHasUnknownRoot, .serverCertificateNotYetValid,
        .clientCertificateRejected, .clientCertificateRequired, .appTransportSecurityRequiresSecureConnection,
    ]

    /// Whether `error` is a `URLError` whose code is one of ``failureCodesBeforeSending``.
    public func failedBeforeSending(_ error: any Error) -> Bool {
        (error as? URLError).map { Self.failureCodesBeforeSending.contains($0.code) } ?? false
    }

    /// Sends `request` once and returns the body and the response's head, which wraps the `HTTPURLResponse`
    /// `URLSession` made; the call the session makes.
    public func exchange(_ request: URLRequest) async throws -> (Data, ResponseHead) {
        // A cancelled task sends nothing: the data task would otherwise reach the server before being cancelled.
        try Task.checkCancellation()
        let data: Data
        let response: URLResponse?
        do {
            (data, response) = try await DataTaskSend.send(request, through: session)
        } catch {
            // A cancelled data task reports `URLError.cancelled`; the caller asked for cancellation, so say that.
            if Task.isCancelled { throw CancellationError() }
            #if canImport(FoundationNetworking)
                // libcurl reports a status line it cannot read ("Unsupported response code in HTTP response") as an
                // unsupported protocol, which FoundationNetworking turns into `.unsupportedURL`. For an http(s) URL
                // that is the server's reply, not the URL: say so as Apple platforms do, so that policies classify a
                // reply that is not HTTP the same way on both.
                if let urlError = error as? URLError, urlError.code == .unsupportedURL,
                    let scheme = request.url?.scheme?.lowercased(), scheme == "http" || scheme == "https"
                {
                    throw URLError(.badServerResponse, userInfo: urlError.userInfo)
                }
            #endif
            throw error
        }
        if Task.isCancelled { throw CancellationError() }
        guard let httpResponse = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
        return (data, ResponseHead(httpResponse))
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

/// The transport's own `URLSession`, invalidated when the last transport holding it is released, after its tasks
/// finish.
private final class OwnedSession: Sendable {
    let session: URLSession

    init(configuration: URLSessionConfiguration) {
        #if canImport(FoundationNetworking)
            // No response cache (a copy, so the caller's configuration is left as it was): swift-corelibs-foundation
            // looks a new task up in it on another queue, and a cancel that arrives meanwhile can be delivered after
            // the task finished and left its session, which traps the process (see `URLSessionHTTPTransport`).
            let configuration = (configuration.copy() as? URLSessionConfiguration) ?? .default
            configuration.urlCache = nil
            // Each completion runs at once on the session's own queue, as `data(for:)` runs its own (see
            // `InlineDelegateQueue`).
            let delegateQueue = InlineDelegateQueue()
        #else
            let delegateQueue = OperationQueue()
        #endif
        delegateQueue.maxConcurrentOperationCount = 1
        session = URLSession(configuration: configuration, delegate: nil, delegateQueue: delegateQueue)
    }

    deinit {
        session.finishTasksAndInvalidate()
    }
}

#if canImport(FoundationNetworking)
    /// The delegate queue of the transport's own session on Linux: runs each operation at once, on the thread that
    /// adds it, which for `URLSession` is its own serial work queue, so callbacks keep their order.
    ///
    /// swift-corelibs-foundation hops every completion handler through the delegate queue, a thread wake-up per
    /// request (Docs/Performance.md, section 6); `data(for:)` runs its completion inline instead, but cannot be used
    /// (see `URLSessionHTTPTransport`). Whatever runs here must not wait for the session's queue: `DataTaskSend`
    /// cancels tasks and answers challenges from another queue for that reason.
    ///
    /// `@unchecked Sendable` restates `OperationQueue`'s own conformance, which Swift requires a subclass to do. The
    /// invariant: this subclass adds no stored state, and runs each block on the caller's thread, so the only state
    /// involved is `OperationQueue`'s, which Foundation synchronises.
    private final class InlineDelegateQueue: OperationQueue, @unchecked Sendable {
        override func addOperation(_ block: @escaping @Sendable () -> Void) {
            block()
        }
    }
#endif

/// One send: a data task with a completion handler, and a delegate of its own that refuses redirects and answers HTTP
/// challenges.
///
/// The send owns its data task's cancellation: it cancels the task at most once, not once its completion has run (a
/// completion that lands while the cancel is on its way still meets it, which `URLSession` ignores for a finished
/// task), and a send cancelled before its task runs never resumes that task, which is cancelled unstarted and whose
/// completion reports the cancellation.
private final class DataTaskSend: NSObject, URLSessionTaskDelegate, Sendable {
    /// Where the send is, changed only under the lock by the pure transitions below.
    private enum Phase: Sendable {
        /// The data task is being made.
        case preparing
        /// Cancelled before its data task was made: the task is never resumed.
        case cancelledEarly
        /// The data task runs.
        case running(URLSessionTask)
        /// A cancel is on its way to the running task.
        case cancelling(URLSessionTask)
        /// The completion handler ran: nothing may touch the task any more.
        case finished

        /// The data task was made: resume it, or cancel it unstarted if the send was cancelled meanwhile.
        mutating func made(_ task: URLSessionTask) -> Bool {
            switch self {
            case .preparing:
                self = .running(task)
                return true
            case .cancelledEarly:
                self = .cancelling(task)
                return false
            case .running, .cancelling, .finished:
                assertionFailure("a send makes one data task")
                return false
            }
        }

        /// The calling task was cancelled: returns the running task to cancel, if there is one.
        mutating func cancel() -> URLSessionTask? {
            switch self {
            case .preparing:
                self = .cancelledEarly
                return nil
            case .running(let task):
                self = .cancelling(task)
                return task
            case .cancelledEarly, .cancelling, .finished:
                return nil
            }
        }

        /// The task a cancel on its way may still reach: none once the task finished.
        var taskToCancel: URLSessionTask? {
            if case .cancelling(let task) = self { return task }
            return nil
        }

        /// The completion handler ran; returns the task it ran for, if the send still knew it.
        mutating func finish() -> URLSessionTask? {
            defer { self = .finished }
            switch self {
            case .running(let task), .cancelling(let task): return task
            case .preparing, .cancelledEarly, .finished: return nil
            }
        }
    }

    private struct State: Sendable {
        var phase = Phase.preparing
        var cancelledChallenge = false
    }

    private let state = Locked(State())

    static func send(_ request: URLRequest, through session: URLSession) async throws -> (Data, URLResponse?) {
        let send = DataTaskSend()
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
                if send.state.withLock({ $0.phase.made(task) }) {
                    task.resume()
                } else {
                    // Cancelled before it ran: the task never starts, and its completion reports the cancellation.
                    task.cancel()
                }
            }
        } onCancel: {
            send.cancel()
        }
    }

    private func cancel() {
        guard state.withLock({ $0.phase.cancel() }) != nil else { return }
        // From another queue: `cancel()` waits for the session's queue, where the completion may be running (the own
        // session's delegate queue is inline), and that completion waits for this send's lock. Asked again there: the
        // task may have finished meanwhile, and a finished task is never cancelled.
        DispatchQueue.global().async { [self] in
            state.withLock { $0.phase.taskToCancel }?.cancel()
        }
    }

    /// Lets go of the task (which retains this delegate); returns its HTTP response if the transport cancelled a
    /// challenge.
    private func finish() -> HTTPURLResponse? {
        let (task, cancelledChallenge) = state.withLock { state in
            (state.phase.finish(), state.cancelledChallenge)
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
        // Cancelling the challenge cancels the task, which waits for the session's queue, where this may be running.
        DispatchQueue.global().async { completionHandler(disposition, nil) }
    }
}
