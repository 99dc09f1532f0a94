import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What stays the same across the attempts of one request, in one box, so that the frames that carry a request's run
/// from await to await hold a reference instead of all of it.
final class RequestPlan: Sendable {
    let session: Session
    let originalRequest: URLRequest
    let label: String?
    /// The session's interceptor followed by the request's, as one: each attempt makes one call to adapt and at most
    /// one to retry, whose frames hold one interceptor rather than two.
    let chain: (any RequestInterceptor)?
    let validator: any ResponseValidator
    /// The observers and gates the session and the request were given, in that order.
    let roles: ChainRoles
    /// The roles parts register through the contexts they are handed; `nil` without a chain, which has no parts.
    let registered: RegisteredRoles?
    let deadline: Duration?
    let attemptTimeout: Duration?
    /// Whether attempts race a time limit: with a deadline or an attempt timeout.
    let isRaced: Bool
    let redirectHandler: any RedirectHandler
    let requestID = RequestIDs.next()

    /// Out of line: its temporaries would otherwise stay in the frame of `Session.send` for the whole request.
    @inline(never)
    init(
        session: Session, originalRequest: URLRequest, label: String?, requestInterceptor: (any RequestInterceptor)?,
        requestRoles: ChainRoles, validator: any ResponseValidator, deadline: Duration?, attemptTimeout: Duration?,
        redirectHandler: any RedirectHandler
    ) {
        self.session = session
        self.originalRequest = originalRequest
        self.label = label
        switch (session.interceptor, requestInterceptor) {
        case (let sessions?, let requests?): self.chain = SessionThenRequest(session: sessions, request: requests)
        case (let sessions, nil): self.chain = sessions
        case (nil, let requests): self.chain = requests
        }
        self.validator = validator
        self.deadline = deadline
        self.attemptTimeout = attemptTimeout
        self.isRaced = deadline != nil || attemptTimeout != nil
        self.redirectHandler = redirectHandler
        self.roles = session.roles.followed(by: requestRoles)
        self.registered = chain == nil ? nil : RegisteredRoles(besides: roles)
    }

    /// The observers registered so far that the chain does not hold: told after the chain's.
    var registeredObservers: [any AttemptObserver] { registered?.observers ?? [] }

    /// The gates registered so far that the chain does not hold: asked after the chain's.
    var registeredGates: [any RetryGate] { registered?.gates ?? [] }
}

/// What one attempt came to, in one box: the frames that carry it from await to await hold a reference.
final class AttemptResult: Sendable {
    enum Kind: Sendable {
        case success
        case failure(ReboundError.Reason)
        case cancelled
        /// The deadline came while the attempt was in flight.
        case timedOut
    }

    let kind: Kind
    let sent: URLRequest?
    let response: HTTPURLResponse?
    let data: Data?

    init(_ kind: Kind, sent: URLRequest? = nil, response: HTTPURLResponse? = nil, data: Data? = nil) {
        self.kind = kind
        self.sent = sent
        self.response = response
        self.data = data
    }

    static let timedOut = AttemptResult(.timedOut)
    /// An attempt its attempt timeout ended: a timeout, which retry policies treat like any other.
    static let attemptTimedOut = AttemptResult(.failure(.transportFailed(error: URLError(.timedOut))))
    static let cancelledBeforeSending = AttemptResult(.cancelled)
}

/// The state of one logical request as it goes through the pipeline, attempt after attempt.
///
/// Two words only: an attempt comes to an ``AttemptResult`` (what happened: success, failure and why, cancelled, timed
/// out), and the run turns it into an ``AttemptDecision`` (what follows: succeeded, retry after a delay, failed,
/// cancelled), which the observers are told and `execute()` acts on. The error a failed request ends with is kept in
/// `failure`.
///
/// Memory: a task keeps the memory of its deepest frames (in slabs of about 1 KiB) until it ends, so a request waiting
/// in backoff costs the high-water mark of the pipeline's async frames. Hence the shape: the async functions below only
/// carry references and small enums across their awaits, and everything between awaits happens in synchronous
/// helpers kept out of line (`@inline(never)`), whose temporaries live on the thread's stack instead of the task's.
/// `Benchmarks` section 4 measures it; `Docs/Performance.md` tells how to read the frames' sizes.
///
/// Its methods are all `mutating`, also those that change nothing: a mutating method gets the run by reference, where a
/// non-mutating one gets a copy of it, which an async caller keeps in its frame.
struct RequestRun {
    let plan: RequestPlan
    private var attempts: [Attempt] = []
    private var lastSentRequest: URLRequest?
    /// The request adapters start from: the caller's, until a retrier answers `retryWithRequest`.
    private var base: URLRequest
    private var start: Duration = .zero
    /// The error the request ends with, once a decision is ``AttemptDecision/failed``.
    private var failure: ReboundError?

    init(_ plan: RequestPlan) {
        self.plan = plan
        self.base = plan.originalRequest
    }

    /// How an attempt the deadline cut short is recorded.
    private static let timedOut = ReboundError.Reason.transportFailed(error: URLError(.timedOut))

    /// Runs the request to its end and tells the observers how it ended, on every path: attempt, decide what follows,
    /// tell the observers, act.
    ///
    /// The attempt and the decision after a failure run one after the other in frames of their own, and the backoff
    /// is slept here: a request waiting in backoff costs the larger of the two paths, not their sum. (The loop is not
    /// a function of its own under this one, which would put every frame one level deeper.)
    @inline(__always)
    mutating func execute() async throws -> Response {
        start = plan.session.clock.now()
        do {
            while true {
                if Task.isCancelled { throw CancellationError() }
                let result = await attemptOnce()
                let decision: AttemptDecision
                switch result.kind {
                case .success: decision = .succeeded
                case .cancelled: decision = .cancelled
                case .timedOut: decision = timedOut()
                case .failure: decision = await afterFailure(result)
                }
                await report(result, decision: decision)
                switch decision {
                case .succeeded:
                    await finish(.succeeded)
                    return response(to: result)
                case .cancelled:
                    throw CancellationError()
                case .failed:
                    throw ending()
                case .retry(let delay):
                    guard delay > .zero else { continue }
                    // A breaker that granted the retry ends the wait if it opens meanwhile.
                    if let wait = plan.registered?.backoffWait {
                        switch await wait.sleep(for: delay, on: plan.session.clock) {
                        case .slept: continue
                        case .cancelled: throw CancellationError()
                        case .ended(let error): throw endedInBackoff(by: error)
                        }
                    }
                    do {
                        try await plan.session.clock.sleep(delay)
                    } catch {
                        // Clocks throw from `sleep` only when the sleeping task is cancelled.
                        throw CancellationError()
                    }
                }
            }
        } catch {
            // A `ReboundError` is the one `fail(with:)` kept; nothing else is thrown but cancellation. Only the decision
            // crosses the await, not the error.
            let decision: AttemptDecision = error is ReboundError ? .failed : .cancelled
            await finish(decision)
            if decision == .failed { throw ending() }
            throw CancellationError()
        }
    }

    /// Makes one attempt and records it.
    @inline(never)
    private mutating func attemptOnce() async -> AttemptResult {
        let number = attempts.count + 1
        let attemptStart = plan.session.clock.now()
        // Without a deadline or an attempt timeout, no race and no frame for one.
        let result: AttemptResult
        if plan.isRaced {
            result = await plan.attempt(base, number: number, startedAfter: attemptStart - start)
        } else {
            result = await plan.attempt(base, number: number)
        }
        record(result, number: number, since: attemptStart)
        return result
    }

    /// Records an attempt.
    @inline(never)
    private mutating func record(_ result: AttemptResult, number: Int, since attemptStart: Duration) {
        let duration = plan.session.clock.now() - attemptStart
        let failure: ReboundError.Reason? =
            switch result.kind {
            case .failure(let reason): reason
            case .timedOut: Self.timedOut
            // A cancelled attempt is recorded too, for the observers; the request ends with `CancellationError`.
            case .success, .cancelled: nil
            }
        if case .failure = result.kind, let sent = result.sent { lastSentRequest = sent }
        attempts.append(
            Attempt(
                number: number, request: result.sent, response: result.response, failure: failure,
                duration: duration))
    }

    /// The response of a successful attempt.
    @inline(never)
    private mutating func response(to result: AttemptResult) -> Response {
        guard let sent = result.sent, let response = result.response else {
            preconditionFailure("a successful attempt has a request and a response")
        }
        return Response(
            data: result.data ?? Data(), httpResponse: response, request: sent,
            originalRequest: plan.originalRequest, attempts: attempts)
    }

    /// Asks the retriers about a failed attempt and decides what follows.
    @inline(never)
    private mutating func afterFailure(_ failed: AttemptResult) async -> AttemptDecision {
        let question = question(about: failed)
        // A non-retryable failure (an open breaker, say) is not offered to the retriers at all.
        let result: RetryResult
        if !question.isOffered {
            result = .doNotRetry
        } else if let deadline = plan.deadline {
            // The retriers' decision is bounded by the deadline too, even a retrier that ignores cancellation; out of
            // line, so that a request waiting in backoff does not keep the race's frame.
            guard
                let answer = await plan.retryResult(
                    for: question, racing: deadline - (plan.session.clock.now() - start))
            else { return Task.isCancelled ? .cancelled : decidedTooLate(question.error) }
            result = answer
        } else {
            result = await plan.retryResult(for: question.request, dueTo: question.error)
        }
        // A retrier may take its time; a request cancelled meanwhile ends as cancelled, whatever it answered.
        if Task.isCancelled { return .cancelled }
        return decide(after: result, for: question.request, dueTo: question.error)
    }

    /// What the retriers are asked about a failed attempt, and whether they are asked at all.
    fileprivate struct Question {
        let request: RetryRequest
        let error: ReboundError
        /// `false` for a failure that is never retried (``NonRetryableError``).
        let isOffered: Bool
    }

    /// What the retriers are asked about a failed attempt.
    @inline(never)
    private mutating func question(about failed: AttemptResult) -> Question {
        guard case .failure(let reason) = failed.kind else { preconditionFailure("only failures are asked about") }
        let error = failure(reason, response: failed.response, data: failed.data)
        let request = RetryRequest(
            requestID: plan.requestID, label: plan.label, originalRequest: plan.originalRequest,
            lastRequest: failed.sent, response: failed.response, data: failed.data, attempts: attempts,
            roles: plan.registered)
        return Question(request: request, error: error, isOffered: !reason.isNonRetryable)
    }

    /// Decides what follows the retriers' answer to a failed attempt: a retry after its delay, unless the deadline
    /// comes first or a gate denies it, or the failure the request ends with. Records the retry in the attempt.
    @inline(never)
    private mutating func decide(after result: RetryResult, for request: RetryRequest, dueTo error: ReboundError)
        -> AttemptDecision
    {
        let reason = error.reason
        guard let delay = result.delay else {
            // Stopping with the very failure the retriers were asked about ends the request with it, unwrapped.
            if let given = result.error as? ReboundError, given.isSame(as: error) { return fail(with: error) }
            let aborted = result.error.map {
                failure(.retryAborted(error: $0, original: reason), response: error.response, data: error.data)
            }
            return fail(with: aborted ?? error)
        }
        // A stream in the request adapters start from was consumed by this attempt: a retry would send it empty or
        // half. (A stream an adapter sets is made anew for each attempt; one a retrier hands over is taken as fresh.)
        if result.request == nil, base.httpBodyStream != nil {
            return fail(
                with: failure(
                    .retryAborted(error: StreamBodyNotReplayable(), original: reason), response: error.response,
                    data: error.data))
        }
        // Backoff never sleeps past the deadline: a delay that would end after it ends the request now.
        if let deadline = plan.deadline, plan.session.clock.now() + delay - start > deadline {
            return fail(with: deadlineExceeded(after: reason, response: error.response, data: error.data))
        }
        for gate in plan.roles.gates + plan.registeredGates {
            if let denial = gate.admitRetry(request, dueTo: error, after: delay) {
                return fail(
                    with: failure(
                        .retryAborted(error: denial, original: reason), response: error.response, data: error.data))
            }
        }
        attempts[attempts.count - 1].retryDelay = delay
        if let request = result.request { base = request }
        return .retry(after: delay)
    }

    /// The error a request ends with when a gate that granted its retry ended the backoff (a breaker that opened):
    /// the gate's error beside the last attempt's failure, as if the gate had denied the retry.
    @inline(never)
    private mutating func endedInBackoff(by error: any Error) -> ReboundError {
        guard let last = attempts.last, let reason = last.failure else {
            preconditionFailure("a retry follows a failure")
        }
        _ = fail(with: failure(.retryAborted(error: error, original: reason), response: last.response, data: nil))
        return ending()
    }

    /// The decision when the deadline came while the retriers were deciding about `error`.
    @inline(never)
    private mutating func decidedTooLate(_ error: ReboundError) -> AttemptDecision {
        fail(with: deadlineExceeded(after: error.reason, response: error.response, data: error.data))
    }

    /// The decision after an attempt the deadline cut short.
    @inline(never)
    private mutating func timedOut() -> AttemptDecision {
        fail(with: deadlineExceeded(after: Self.timedOut))
    }

    /// Keeps the error the request ends with and returns ``AttemptDecision/failed``.
    private mutating func fail(with error: ReboundError) -> AttemptDecision {
        failure = error
        return .failed
    }

    /// The error kept by ``fail(with:)``.
    private mutating func ending() -> ReboundError {
        guard let failure else { preconditionFailure("a failed decision keeps its error") }
        return failure
    }

    private mutating func failure(_ reason: ReboundError.Reason, response: HTTPURLResponse?, data: Data?)
        -> ReboundError
    {
        ReboundError(
            reason: reason, originalRequest: plan.originalRequest, lastRequest: lastSentRequest, response: response,
            data: data, attempts: attempts)
    }

    /// The deadline error after `reason`.
    private mutating func deadlineExceeded(
        after reason: ReboundError.Reason, response: HTTPURLResponse? = nil, data: Data? = nil
    ) -> ReboundError {
        failure(.deadlineExceeded(deadline: plan.deadline ?? .zero, last: reason), response: response, data: data)
    }

    /// Tells the observers how the last recorded attempt ended.
    @inline(never)
    private mutating func report(_ result: AttemptResult, decision: AttemptDecision) async {
        let registered = plan.registeredObservers
        guard !plan.roles.observers.isEmpty || !registered.isEmpty,
            let outcome = outcome(data: result.data, decision: decision)
        else { return }
        for observer in plan.roles.observers {
            await observer.attemptDidFinish(outcome)
        }
        for observer in registered {
            await observer.attemptDidFinish(outcome)
        }
    }

    /// Tells the observers how the request ended.
    @inline(never)
    private mutating func finish(_ decision: AttemptDecision) async {
        let registered = plan.registeredObservers
        guard !plan.roles.observers.isEmpty || !registered.isEmpty else { return }
        let outcome = requestOutcome(decision)
        for observer in plan.roles.observers {
            await observer.requestDidFinish(outcome)
        }
        for observer in registered {
            await observer.requestDidFinish(outcome)
        }
    }

    /// What the observers are told of the request's end.
    @inline(never)
    private mutating func requestOutcome(_ decision: AttemptDecision) -> RequestOutcome {
        RequestOutcome(
            requestID: plan.requestID, label: plan.label, originalRequest: plan.originalRequest, attempts: attempts,
            elapsed: plan.session.clock.now() - start, decision: decision, error: decision == .failed ? failure : nil)
    }

    /// What the observers are told of the last recorded attempt.
    @inline(never)
    private mutating func outcome(data: Data?, decision: AttemptDecision) -> AttemptOutcome? {
        guard let attempt = attempts.last else { return nil }
        return AttemptOutcome(
            requestID: plan.requestID, label: plan.label, originalRequest: plan.originalRequest, attempt: attempt,
            data: data, elapsed: plan.session.clock.now() - start, decision: decision,
            error: decision == .failed ? failure : nil)
    }
}

// The steps of an attempt that do not change the run's state take the plan (a reference) rather than the run, so
// that no copy of the run is kept in the frames that call them.
extension RequestPlan {
    /// Runs one attempt, started `elapsed` into the request, racing the deadline's time left and the attempt timeout,
    /// whichever comes first; the attempt is cancelled when its time runs out, and the run goes on at once even if the
    /// attempt ignores cancellation (its result is then dropped).
    @inline(never)
    fileprivate func attempt(_ base: URLRequest, number: Int, startedAfter elapsed: Duration) async -> AttemptResult {
        let remaining = deadline.map { $0 - elapsed }
        if let remaining, remaining <= .zero { return .timedOut }
        // The attempt timeout applies when it comes before the deadline.
        let timeout = attemptTimeout.flatMap { timeout in remaining.map { timeout < $0 } ?? true ? timeout : nil }
        guard let limit = timeout ?? remaining else { return await attempt(base, number: number) }
        // What the attempt handed to the transport before its time ran out: a sent attempt is recorded as sent (a
        // budget charges it), though its result is dropped.
        let sending = Locked<URLRequest?>(nil)
        switch await Race.run(
            limit, clock: session.clock, { await self.attempt(base, number: number, sending: sending) })
        {
        case .finished(let result): return result
        case .timedOut:
            let sent = sending.withLock { $0 }
            if timeout == nil { return sent.map { AttemptResult(.timedOut, sent: $0) } ?? .timedOut }
            return sent.map { AttemptResult(AttemptResult.attemptTimedOut.kind, sent: $0) } ?? .attemptTimedOut
        case .cancelled: return .cancelledBeforeSending
        }
    }

    /// Adapts `base`, sends and validates once; notes in `sending` the request it hands to the transport.
    fileprivate func attempt(_ base: URLRequest, number: Int, sending: Locked<URLRequest?>? = nil) async
        -> AttemptResult
    {
        let context = RequestContext(requestID: requestID, attempt: number, label: label, roles: registered)
        let adapted: URLRequest
        do {
            // Through the combined chain (the session's adapters, then the request's); none, no call.
            if let chain { adapted = try await chain.adapt(base, context: context) } else { adapted = base }
        } catch {
            return Self.failed(.adaptationFailed(error: error), sent: nil)
        }
        if let sending { sending.withLock { $0 = adapted } }
        do {
            let (data, response) = try await session.transport.send(adapted)
            if Redirection.isRedirect(response.statusCode) {
                return await followRedirects(from: adapted, response: response, data: data, context: context)
            }
            return check(response, data: data, sent: adapted, context: context)
        } catch {
            return Self.failed(.transportFailed(error: error), sent: adapted)
        }
    }

    /// Follows the redirects of an attempt hop by hop, as the redirect handler decides, and validates the response
    /// the last hop got (a redirect not followed included). Out of line: requests without redirects never make its
    /// frame.
    @inline(never)
    private func followRedirects(
        from sent: URLRequest, response: HTTPURLResponse, data: Data, context: RequestContext
    ) async -> AttemptResult {
        var sent = sent
        var response = response
        var data = data
        var hops = 0
        let handler = redirectHandler
        while let proposed = Redirection.nextRequest(after: sent, response: response) {
            guard hops < handler.maximumRedirects else {
                return Self.failed(.transportFailed(error: URLError(.httpTooManyRedirects)), sent: sent)
            }
            let next = await nextHop(proposed, after: sent, response: response, context: context, handler: handler)
            guard let next else { break }
            hops += 1
            await report(
                RedirectHop(
                    requestID: requestID, label: label, attempt: context.attempt, number: hops, request: sent,
                    response: response, next: next))
            if Task.isCancelled { return AttemptResult(.cancelled, sent: sent) }
            do {
                (data, response) = try await session.transport.send(next)
                sent = next
            } catch {
                return Self.failed(.transportFailed(error: error), sent: next)
            }
        }
        return check(response, data: data, sent: sent, context: context)
    }

    /// The request the handler chooses to send after `sent` was redirected, secured against leaking credentials both
    /// before the handler sees it and after it answered; `nil` to stop.
    private func nextHop(
        _ proposed: URLRequest, after sent: URLRequest, response: HTTPURLResponse, context: RequestContext,
        handler: any RedirectHandler
    ) async -> URLRequest? {
        let stripped = handler.strippedHeaders
        let scopes = registered?.scopes ?? []
        var proposed = proposed
        Redirection.secure(&proposed, after: sent, stripping: stripped, scopes: scopes)
        // A handler that rewrites the hop to something other than http(s) (a file URL, say) stops it.
        guard var next = await handler.redirect(sent, to: proposed, for: response, context: context),
            let scheme = next.url?.scheme?.lowercased(), scheme == "http" || scheme == "https"
        else { return nil }
        Redirection.secure(&next, after: sent, stripping: stripped, scopes: scopes)
        return next
    }

    /// Tells the observers about a redirect an attempt follows.
    private func report(_ hop: RedirectHop) async {
        for observer in roles.observers {
            await observer.attemptWasRedirected(hop)
        }
        for observer in registeredObservers {
            await observer.attemptWasRedirected(hop)
        }
    }

    /// The result of an attempt that threw before it had a response: cancelled, if the error or the task says so.
    @inline(never)
    private static func failed(_ reason: ReboundError.Reason, sent: URLRequest?) -> AttemptResult {
        switch reason {
        case .adaptationFailed(let open as CircuitBreakerOpenError):
            return AttemptResult(.failure(.circuitOpen(open)))
        case .adaptationFailed(let error) where error is CancellationError,
            .transportFailed(let error) where error is CancellationError:
            return AttemptResult(.cancelled, sent: sent)
        default:
            return Task.isCancelled
                ? AttemptResult(.cancelled, sent: sent) : AttemptResult(.failure(reason), sent: sent)
        }
    }

    /// Validates a response: with the validator in effect, then with those the chain's parts registered.
    @inline(never)
    private func check(_ response: HTTPURLResponse, data: Data, sent: URLRequest, context: RequestContext)
        -> AttemptResult
    {
        if let reason = validator.reason(for: response, data: data, context: context) {
            return AttemptResult(.failure(reason), sent: sent, response: response, data: data)
        }
        for validator in registered?.validators ?? [] {
            if let reason = validator.reason(for: response, data: data, context: context) {
                return AttemptResult(.failure(reason), sent: sent, response: response, data: data)
            }
        }
        return AttemptResult(.success, sent: sent, response: response, data: data)
    }

    /// Asks the retriers about `question`, racing the time left; `nil` when the time ran out or the task was cancelled
    /// first.
    @inline(never)
    fileprivate func retryResult(for question: RequestRun.Question, racing remaining: Duration) async -> RetryResult? {
        let (request, error) = (question.request, question.error)
        switch await Race.run(remaining, clock: session.clock, { await self.retryResult(for: request, dueTo: error) }) {
        case .finished(let answer): return answer
        case .timedOut, .cancelled: return nil
        }
    }

    /// Asks the retriers registered through the context, then the session's, then the request's; the first answer
    /// other than `doNotRetry` wins.
    fileprivate func retryResult(for request: RetryRequest, dueTo error: ReboundError) async -> RetryResult {
        // Out of line, so that a chain without registered retriers never makes the loop's frame.
        if let retriers = registered?.retriers, !retriers.isEmpty {
            return await retryResult(asking: retriers, for: request, dueTo: error)
        }
        return await chain?.retry(request, dueTo: error) ?? .doNotRetry
    }

    /// Asks `retriers`, then the chain; the first answer other than `doNotRetry` wins.
    @inline(never)
    private func retryResult(
        asking retriers: [any RegisteredRetrier], for request: RetryRequest, dueTo error: ReboundError
    )
        async -> RetryResult
    {
        for retrier in retriers {
            let result = await retrier.retry(request, dueTo: error)
            if case .doNotRetry = result { continue }
            return result
        }
        return await chain?.retry(request, dueTo: error) ?? .doNotRetry
    }
}

/// A session's interceptor followed by a request's: adapts with the session's, then the request's; asks the session's
/// retriers, then the request's, and the first answer other than `doNotRetry` wins.
private struct SessionThenRequest: RequestInterceptor {
    let session: any RequestInterceptor
    let request: any RequestInterceptor

    func adapt(_ urlRequest: consuming URLRequest, context: RequestContext) async throws -> URLRequest {
        let adapted = try await session.adapt(urlRequest, context: context)
        return try await request.adapt(adapted, context: context)
    }

    func retry(_ retryRequest: RetryRequest, dueTo error: ReboundError) async -> RetryResult {
        let result = await session.retry(retryRequest, dueTo: error)
        guard case .doNotRetry = result else { return result }
        return await request.retry(retryRequest, dueTo: error)
    }
}
