import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a request keeps across its attempts, in one box, so that the frames that carry a request's run from await to
/// await hold a reference instead of all of it: its settings, fixed when it starts, and the registrations its parts
/// make through their contexts.
///
/// What the request does not set for itself (its chain, validator, redirect handler, observers and gates) is read from
/// the session when used rather than copied here: most requests set none of it, and each existential copied into a
/// request's plan (the session's, or the caller's empty parameters) is a call through a value witness, run cold
/// between two round trips (Docs/Performance.md, "What a request costs, and why").
final class RequestPlan: Sendable {
    let session: Session
    /// The request as the caller gave it (see ``OriginalRequest``).
    let original: OriginalRequest
    let label: String?
    /// What the request brought of its own (chain, validator, redirect handler, observers and gates); `nil` for
    /// none, the common case: one reference, which the plan stores and releases without a call through a value
    /// witness, where the parts' optional references and existential would each be copied and destroyed.
    private let own: RequestParts?
    /// The roles parts register through the contexts they are handed; `nil` without a chain, which has no parts.
    let registered: RegisteredRoles?
    let deadline: Duration?
    let attemptTimeout: Duration?
    /// Whether attempts race a time limit: with a deadline or an attempt timeout.
    let isRaced: Bool
    /// The hedging settings in effect, if they ever let a second attempt be in flight; `nil` otherwise.
    let hedging: Hedging?
    let requestID = RequestIDs.next()

    /// The plan of a request with nothing of its own besides its label and time limits, the common case: nothing the
    /// caller passed as an existential is copied (each such copy is a call through a value witness, run cold between
    /// two round trips).
    convenience init(
        session: Session, original: consuming OriginalRequest, label: String?, deadline: Duration?,
        attemptTimeout: Duration?, hedging: Hedging?
    ) {
        self.init(
            session: session, original: consume original, label: label, own: nil, deadline: deadline,
            attemptTimeout: attemptTimeout, hedging: hedging)
    }

    /// The plan of a request with parts of its own: each of `requestInterceptor`, `requestRoles`, `validator` and
    /// `redirectHandler` is the request's own, `nil` for the session's.
    convenience init(
        session: Session, original: consuming OriginalRequest, label: String?,
        requestInterceptor: (any RequestInterceptor)?, requestRoles: ChainRoles?, validator: (any ResponseValidator)?,
        deadline: Duration?, attemptTimeout: Duration?, redirectHandler: (any RedirectHandler)?, hedging: Hedging?
    ) {
        let chain: ChainBox? =
            if let requestInterceptor {
                session.chain.map { ChainBox(session: $0, thenRequest: requestInterceptor) }
                    ?? ChainBox(requestInterceptor)
            } else {
                nil
            }
        let own = RequestParts(
            chain: chain, validator: validator, redirectHandler: redirectHandler,
            roles: requestRoles.map { session.roles.followed(by: $0) })
        self.init(
            session: session, original: consume original, label: label, own: own, deadline: deadline,
            attemptTimeout: attemptTimeout, hedging: hedging)
    }

    /// Stores the request's own parts (`nil` for the session's) and makes its registrations if it has a chain.
    private init(
        session: Session, original: consuming OriginalRequest, label: String?, own: RequestParts?,
        deadline: Duration?, attemptTimeout: Duration?, hedging: Hedging?
    ) {
        self.session = session
        self.original = consume original
        self.label = label
        self.own = own
        self.deadline = deadline
        self.attemptTimeout = attemptTimeout
        self.isRaced = deadline != nil || attemptTimeout != nil
        self.hedging = hedging.flatMap { $0.hedges ? $0 : nil }
        let hasChain = own?.chain != nil || session.chain != nil
        // Parts that would wait (a pacer) read the time left before the deadline from the registrations.
        self.registered =
            hasChain
            ? RegisteredRoles(
                besides: own?.roles ?? session.roles,
                deadline: deadline.map { (session.clock.now() + $0, session.clock.now) }) : nil
    }

    /// The session's interceptor followed by the request's, as one: each attempt makes one call to adapt and at most
    /// one to retry, whose frames hold one interceptor rather than two.
    var chain: ChainBox? { own?.chain ?? session.chain }

    /// The redirect handler in effect: the request's, or the session's.
    var redirectHandler: any RedirectHandler { own?.redirectHandler ?? session.redirectHandler }

    /// The observers and gates the session and the request were given, in that order.
    var roles: ChainRoles { own?.roles ?? session.roles }

    /// Whether the session or the request was given any observer (read after every attempt, without copying the
    /// roles).
    var listsObservers: Bool {
        if let roles = own?.roles { return !roles.observers.isEmpty }
        return !session.roles.observers.isEmpty
    }

    /// What the validator in effect (the request's, or the session's) says of a response, called in place.
    func reason(for response: ResponseHead, data: Data, context: RequestContext) -> ReboundError.Reason? {
        if let own, let validation = own.validation { return validation.check(response, data, context) }
        return session.reason(for: response, data: data, context: context)
    }

    /// The request as the caller gave it, built anew each time when it is kept as parts.
    var originalRequest: URLRequest { original.request }

    /// The registrations that hold the observers parts registered so far, in order (told after the session's and
    /// the request's); none when no observer registered.
    var registeredObservers: RegisteredRoles.Registrations { registered?.withObservers ?? .none }

    /// The gates registered so far that the chain does not hold: asked after the chain's.
    var registeredGates: [any RetryGate] { registered?.gates ?? [] }
}

/// What a request brought of its own, each `nil` for the session's.
final class RequestParts: Sendable {
    /// The session's interceptor followed by the request's own, as one.
    let chain: ChainBox?
    /// The request's validator, resolved once (see `Validator.resolving(_:)`).
    let validation: Validator?
    let redirectHandler: (any RedirectHandler)?
    /// The session's observers and gates followed by the request's own.
    let roles: ChainRoles?

    init(
        chain: ChainBox?, validator: (any ResponseValidator)?, redirectHandler: (any RedirectHandler)?,
        roles: ChainRoles?
    ) {
        self.chain = chain
        self.validation = validator.map(Validator.resolving)
        self.redirectHandler = redirectHandler
        self.roles = roles
    }
}

/// The state of one logical request as it goes through the pipeline, attempt after attempt.
///
/// Two words only: an attempt comes to an ``AttemptResult`` (what happened: success, failure and why, cancelled, cut
/// short by the deadline), and the run turns it into an ``AttemptDecision`` (what follows: succeeded, retry after a
/// delay, failed, cancelled), which the observers are told and `execute()` acts on. The error a failed request ends
/// with is kept in `failure`.
///
/// Memory: a task keeps the memory of its deepest async frames (its task allocator's slabs) until it ends, so a
/// request waiting in backoff costs the high-water mark of the frames below. They carry references and small enums
/// across their awaits (the plan, an attempt's result and a retry request are each one box).
///
/// The methods the request's async frames call on the run are `mutating`, also `response(to:)`, `settle(_:decision:)`,
/// `ending()` and the observers' steps, which change nothing: a non-mutating call copies the run into the calling
/// async frame, which `ReboundAllocations/WaitingInBackoff` counts (about 1 KB more per waiting request).
/// Docs/Performance.md, section 4, tells how to read the frames' sizes.
struct RequestRun {
    let plan: RequestPlan
    var attempts: [Attempt] = []
    var lastSentRequest: URLRequest?
    /// The request adapters start from once a retrier answered `retryWithRequest`; `nil`: the caller's.
    var base: URLRequest?
    /// When the request started, on the session's clock: read when the run is made, just before it executes.
    var start: Duration
    /// The error the request ends with, once a decision is ``AttemptDecision/failed``.
    var failure: ReboundError?
    /// The request the session made for the first attempt's adapters to change in place, until that attempt takes it
    /// (see ``nextBase()``); `nil` if it made none.
    var unshared: URLRequest?
    /// The body of the failed attempt whose retry waits in a backoff a gate can end (see ``BackoffWait``): the error
    /// the request ends with if the gate ends the wait carries it, as every other failure's error does.
    var bodyBeforeBackoff: Data?
    /// The request's backoff wait, which a breaker that grants a retry keeps so that its opening ends the wait: made
    /// when the retriers are first asked about a request a breaker let through; `nil` for every other request, whose
    /// backoff is a plain sleep on the clock.
    var backoffWait: BackoffWait?

    init(_ plan: RequestPlan, unshared: consuming URLRequest? = nil) {
        self.plan = plan
        self.start = plan.session.clock.now()
        self.unshared = unshared
    }

    /// How an attempt the deadline cut short is recorded.
    static let deadlineCutShort = ReboundError.Reason.transportFailed(error: URLError(.timedOut))

    /// Runs the request to its end and tells the observers how it ended, on every path: attempt, decide what follows,
    /// tell the observers, act.
    ///
    /// The steps follow in this file, in the order a request meets them: one attempt (adapt, send, follow redirects,
    /// validate), the decision after a failure (the retriers, the deadline, the gates), the backoff, and what the
    /// observers hear. A hedged round, in place of one attempt, is in `RequestRun+Hedging.swift`.
    ///
    /// Inlined into `Session.send`: a frame of its own would be one more for a waiting request to keep (about 1 KB for
    /// the realistic chain, `ReboundAllocations/WaitingInBackoffRealisticChain`).
    @inline(__always)
    mutating func execute() async throws -> Response {
        do {
            while true {
                if Task.isCancelled { throw CancellationError() }
                let result = await attemptOnce()
                let decision = await decision(after: result)
                let observed = settle(result, decision: decision)
                // Nothing that observes, no call.
                if observed { await report(result, decision: decision) }
                switch decision {
                case .succeeded:
                    if observed { await finish(.succeeded) }
                    if attempts.count > 1 { plan.endAccounts() }
                    return response(to: result)
                case .cancelled:
                    throw CancellationError()
                case .failed:
                    throw ending()
                case .retry(let delay):
                    try await backOff(for: delay)
                }
            }
        } catch {
            // A `ReboundError` is the one `fail(with:)` kept; nothing else is thrown but cancellation. Only the decision
            // crosses the await, not the error.
            let decision: AttemptDecision = error is ReboundError ? .failed : .cancelled
            if plan.hasObservers { await finish(decision) }
            plan.endAccounts()
            if decision == .failed { throw ending() }
            throw CancellationError()
        }
    }

    /// What follows an attempt: for a failure, what the retriers, the gates and the deadline say.
    mutating func decision(after result: AttemptResult) async -> AttemptDecision {
        switch result.kind {
        case .success: .succeeded
        case .cancelled: .cancelled
        case .deadlineReached: deadlineReachedInAttempt()
        case .failure: await afterFailure(result)
        }
    }

    /// Makes one attempt and records it; a request to hedge makes a hedged round instead (``hedgedAttempts(_:)``).
    mutating func attemptOnce() async -> AttemptResult {
        if let hedging = plan.hedging, !plan.original.hasBodyStream { return await hedgedAttempts(hedging) }
        let number = attempts.count + 1
        // The first attempt starts with the request, whose start was just read.
        let attemptStart = number == 1 ? start : plan.session.clock.now()
        // Without a deadline or an attempt timeout, nothing to race.
        let result: AttemptResult
        if plan.isRaced {
            result = await plan.attempt(nextBase(), number: number, startedAfter: attemptStart - start)
        } else {
            result = await plan.attempt(nextBase(), number: number)
        }
        record(result, number: number, since: attemptStart)
        return result
    }

    /// The request the next attempt's adapters start from: for the first attempt, a request equal to the caller's with
    /// storage of its own if the session made one (`unshared`), so that an adapter setting a header changes it in place
    /// (the caller's request shares its storage, and Foundation copies shared storage on the first change, on Linux a
    /// whole copy that normalizes the method again); otherwise `base`, or the caller's request when no retrier
    /// replaced it. Returned owned, so that the unshared request's only reference travels to the adapters.
    mutating func nextBase() -> URLRequest {
        if let request = unshared.take() { return request }
        return base ?? plan.originalRequest
    }

    /// Records an attempt, the `hedge`-th of its round.
    mutating func record(_ result: AttemptResult, number: Int, since attemptStart: Duration, hedge: Int = 0) {
        let duration = plan.session.clock.now() - attemptStart
        let failure: ReboundError.Reason? =
            switch result.kind {
            case .failure(let reason): reason
            case .deadlineReached: Self.deadlineCutShort
            // A cancelled attempt is recorded too, for the observers; the request ends with `CancellationError`.
            case .success, .cancelled: nil
            }
        if case .failure = result.kind, let sent = result.sent { lastSentRequest = sent }
        let attempt = Attempt(
            number: number, request: result.sent, firstHop: result.firstHop, responseHead: result.response,
            failure: failure, duration: duration, hedge: hedge)
        // The first attempt makes an array of one, as a literal does: appending to an empty array takes a slower,
        // colder path (a generic copy and a metadata lookup).
        if attempts.isEmpty {
            attempts = [attempt]
        } else {
            attempts.append(attempt)
        }
    }

    /// The response of a successful attempt.
    mutating func response(to result: AttemptResult) -> Response {
        guard let sent = result.sent, let response = result.response else {
            preconditionFailure("a successful attempt has a request and a response")
        }
        return Response(
            data: result.data ?? Data(), head: response, request: sent,
            original: plan.original, attempts: attempts)
    }
}

// MARK: - One attempt: adapt, send, follow redirects, validate

// The steps of an attempt change nothing of the run's: they belong to the plan, which every attempt shares, hedges
// too.
extension RequestPlan {
    /// Runs one attempt, started `elapsed` into the request, racing the deadline's time left and the attempt timeout,
    /// whichever comes first; the attempt is cancelled when its time runs out, and the run goes on at once even if the
    /// attempt ignores cancellation (its result is then dropped).
    /// `onSend` hears the request handed to the transport (a hedged round's attempts report it).
    func attempt(
        _ base: consuming URLRequest, number: Int, startedAfter elapsed: Duration,
        onSend: (@Sendable (URLRequest) -> Void)? = nil
    ) async -> AttemptResult {
        let remaining = deadline.map { $0 - elapsed }
        if let remaining, remaining <= .zero { return .deadlineReached }
        // The attempt timeout applies when it comes before the deadline.
        let timeout = attemptTimeout.flatMap { timeout in remaining.map { timeout < $0 } ?? true ? timeout : nil }
        guard let limit = timeout ?? remaining else {
            return await attempt(consume base, number: number, onSend: onSend)
        }
        // What the attempt handed to the transport before its time ran out: a sent attempt is recorded as sent (a
        // budget charges it), though its result is dropped.
        let sending = Locked<URLRequest?>(nil)
        let base = consume base
        switch await Race.run(
            limit, clock: session.clock, { await self.attempt(base, number: number, sending: sending, onSend: onSend) })
        {
        case .finished(let result): return result
        case .limitReached:
            let sent = sending.withLock { $0 }
            if timeout == nil { return sent.map { AttemptResult(.deadlineReached, sent: $0) } ?? .deadlineReached }
            return sent.map { AttemptResult(AttemptResult.attemptTimeoutReached.kind, sent: $0) }
                ?? .attemptTimeoutReached
        case .cancelled: return .cancelledBeforeSending
        }
    }

    /// Adapts `base`, sends and validates once; notes in `sending`, and tells `onSend`, the request it hands to the
    /// transport.
    func attempt(
        _ base: consuming URLRequest, number: Int, sending: Locked<URLRequest?>? = nil,
        onSend: (@Sendable (URLRequest) -> Void)? = nil
    ) async -> AttemptResult {
        let context = RequestContext(requestID: requestID, attempt: number, label: label, roles: registered)
        let adapted: URLRequest
        do {
            // Through the combined chain (the session's adapters, then the request's), in place if it never suspends;
            // none, no call.
            if let chain {
                if let adaptInPlace = chain.adaptInPlace {
                    adapted = try Self.adapt(consume base, inPlace: adaptInPlace, context: context)
                } else {
                    adapted = try await chain.adapt(consume base, context: context)
                }
            } else {
                adapted = base
            }
        } catch {
            return Self.failed(.adaptationFailed(error: error), sent: nil)
        }
        if let sending { sending.withLock { $0 = adapted } }
        if let onSend { onSend(adapted) }
        do {
            let (data, response) = try await session.exchange(adapted)
            if Redirection.isRedirect(response.statusCode) {
                return await followRedirects(from: adapted, response: response, data: data, context: context)
            }
            return check(response, data: data, sent: adapted, context: context)
        } catch {
            return Self.failed(.transportFailed(error: error), sent: adapted)
        }
    }

    /// `request` adapted in place by `adaptInPlace`.
    static func adapt(
        _ request: consuming URLRequest, inPlace adaptInPlace: Adapter.ModifyNowHandler, context: RequestContext
    ) throws -> URLRequest {
        var request = request
        try adaptInPlace(&request, context)
        return request
    }

    /// The result of an attempt that threw before it had a response: cancelled, if the error or the task says so.
    static func failed(
        _ reason: ReboundError.Reason, sent: URLRequest?, firstHop: URLRequest? = nil
    ) -> AttemptResult {
        switch reason {
        case .adaptationFailed(let open as CircuitBreakerOpenError):
            return AttemptResult(.failure(.circuitOpen(open)))
        case .adaptationFailed(let error) where error is CancellationError,
            .transportFailed(let error) where error is CancellationError:
            return AttemptResult(.cancelled, sent: sent, firstHop: firstHop)
        default:
            return AttemptResult(Task.isCancelled ? .cancelled : .failure(reason), sent: sent, firstHop: firstHop)
        }
    }

    /// Validates a response: with the validator in effect, then with those the chain's parts registered.
    /// `firstHop` is the adapted request when `sent` is the last hop of its redirects.
    func check(
        _ response: ResponseHead, data: Data, sent: URLRequest, firstHop: URLRequest? = nil, context: RequestContext
    ) -> AttemptResult {
        if let reason = reason(for: response, data: data, context: context) {
            return AttemptResult(.failure(reason), sent: sent, firstHop: firstHop, response: response, data: data)
        }
        for registration in registered?.withValidators ?? .none {
            guard case .validator(let validator) = registration.entry else { continue }
            if let reason = validator.reason(for: response, data: data, context: context) {
                return AttemptResult(.failure(reason), sent: sent, firstHop: firstHop, response: response, data: data)
            }
        }
        return AttemptResult(.success, sent: sent, firstHop: firstHop, response: response, data: data)
    }
}

// An attempt's redirects, followed hop by hop by the session itself.
extension RequestPlan {
    /// Follows the redirects of an attempt hop by hop, as the redirect handler decides, and validates the response
    /// the last hop got (a redirect not followed included).
    func followRedirects(
        from sent: URLRequest, response: ResponseHead, data: Data, context: RequestContext
    ) async -> AttemptResult {
        // The attempt's adapted request: every per-host part admitted and counts the attempt under its host.
        let firstHop = sent
        var sent = sent
        var response = response
        var data = data
        var hops = 0
        let handler = redirectHandler
        while let proposed = Redirection.nextRequest(after: sent, response: response) {
            guard hops < handler.maximumRedirects else {
                return Self.failed(
                    .transportFailed(error: URLError(.httpTooManyRedirects)), sent: sent, firstHop: firstHop)
            }
            let next = await nextHop(proposed, after: sent, response: response, context: context, handler: handler)
            guard let next else { break }
            hops += 1
            await report(
                RedirectHop(
                    requestID: requestID, label: label, attempt: context.attempt, number: hops, request: sent,
                    responseHead: response, next: next))
            if Task.isCancelled { return AttemptResult(.cancelled, sent: sent, firstHop: hops > 1 ? firstHop : nil) }
            do {
                (data, response) = try await session.exchange(next)
                sent = next
            } catch {
                return Self.failed(.transportFailed(error: error), sent: next, firstHop: firstHop)
            }
        }
        return check(response, data: data, sent: sent, firstHop: hops > 0 ? firstHop : nil, context: context)
    }

    /// The request the handler chooses to send after `sent` was redirected, secured against leaking credentials both
    /// before the handler sees it and after it answered; `nil` to stop.
    func nextHop(
        _ proposed: URLRequest, after sent: URLRequest, response: ResponseHead, context: RequestContext,
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
    func report(_ hop: RedirectHop) async {
        for observer in roles.observers {
            await observer.attemptWasRedirected(hop)
        }
        for registration in registeredObservers {
            guard case .observer(let observer) = registration.entry else { continue }
            await observer.attemptWasRedirected(hop)
        }
    }
}

// MARK: - After a failure: ask the retriers, decide

// After a failed attempt: ask the retriers, then decide what follows (a retry after its delay, or the error the
// request ends with).
extension RequestRun {
    /// Asks the retriers about a failed attempt and decides what follows.
    mutating func afterFailure(_ failed: AttemptResult) async -> AttemptDecision {
        let question = question(about: failed)
        // A hedged round asked already.
        if let answer = failed.answer { return decide(after: answer, for: question.request, dueTo: question.error) }
        // A non-retryable failure (an open breaker, say) is not offered to the retriers at all.
        let result: RetryResult
        if !question.isOffered {
            result = .doNotRetry
        } else if let deadline = plan.deadline {
            // The retriers' decision is bounded by the deadline too, even a retrier that ignores cancellation.
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
    struct Question {
        let request: RetryRequest
        let error: ReboundError
        /// `false` for a failure that is never retried (``NonRetryableError``).
        let isOffered: Bool
    }

    /// What the retriers are asked about a failed attempt.
    mutating func question(about failed: AttemptResult) -> Question {
        guard case .failure(let reason) = failed.kind else { preconditionFailure("only failures are asked about") }
        let error = failure(reason, response: failed.response, data: failed.data)
        if backoffWait == nil, plan.registered?.admittedByBreaker == true { backoffWait = BackoffWait() }
        let request = RetryRequest(
            requestID: plan.requestID, label: plan.label, original: plan.original, lastRequest: failed.sent,
            responseHead: failed.response, data: failed.data, attempts: attempts,
            roles: plan.registered, backoffWait: backoffWait)
        return Question(request: request, error: error, isOffered: !reason.isNonRetryable)
    }

    /// Decides what follows the retriers' answer to a failed attempt: a retry after its delay, unless the deadline
    /// comes first or a gate denies it, or the failure the request ends with. Records the retry in the attempt.
    mutating func decide(after result: RetryResult, for request: RetryRequest, dueTo error: ReboundError)
        -> AttemptDecision
    {
        let reason = error.reason
        guard let delay = result.delay else {
            // Stopping with the very failure the retriers were asked about ends the request with it, unwrapped.
            if let given = result.error as? ReboundError, given.isSame(as: error) { return fail(with: error) }
            let aborted = result.error.map {
                failure(.retryAborted(error: $0, original: reason), response: error.responseHead, data: error.data)
            }
            return fail(with: aborted ?? error)
        }
        // Retries and hedges together stay within the hedging settings' attempts.
        if let hedging = plan.hedging, attempts.count >= hedging.maximumAttempts,
            mayBeRepeated(lastSentRequest ?? plan.originalRequest)
        {
            return fail(with: error)
        }
        // A stream in the request adapters start from was consumed by this attempt: a retry would send it empty or
        // half. (A stream an adapter sets is made anew for each attempt; one a retrier hands over is taken as fresh.)
        if result.request == nil, base.map({ $0.httpBodyStream != nil }) ?? plan.original.hasBodyStream {
            return fail(
                with: failure(
                    .retryAborted(error: StreamBodyNotReplayable(), original: reason), response: error.responseHead,
                    data: error.data))
        }
        // Backoff never sleeps past the deadline: a delay that would end after it ends the request now. So does a
        // server's `Retry-After` (on a 429 or 503) that ends after it, whatever delay the retriers chose: a retry
        // before the time the server asked for would meet the same answer, so one rule holds for every chain.
        if let deadline = plan.deadline {
            // A retry to another request (a fallback host) was not asked to wait by this response.
            let asked =
                result.request == nil ? error.responseHead.flatMap(RetryAfter.asked.delay(for:)) ?? .zero : .zero
            if plan.session.clock.now() + Swift.max(delay, asked) - start > deadline {
                return fail(with: deadlineExceeded(after: reason, response: error.responseHead, data: error.data))
            }
        }
        // The gates are told where a retry goes when it does not start from the caller's request (a fallback host), so
        // that a host's breaker decides only about retries to its host.
        let retry = (result.request ?? base).map { request.retrying(to: $0) } ?? request
        for gate in plan.roles.gates + plan.registeredGates {
            if let denial = gate.admitRetry(retry, dueTo: error, after: delay) {
                return fail(
                    with: failure(
                        .retryAborted(error: denial, original: reason), response: error.responseHead, data: error.data))
            }
        }
        attempts[attempts.count - 1].retryDelay = delay
        if let request = result.request { base = request }
        if backoffWait != nil { bodyBeforeBackoff = error.data }
        return .retry(after: delay)
    }

    /// Whether a request may be sent more than once at a time: a method the chain's retry policies retry (those
    /// ``RetryPolicy`` retries by default when none says), or an `Idempotency-Key` that is not empty; never a stream
    /// body.
    func mayBeRepeated(_ request: URLRequest) -> Bool {
        guard request.httpBodyStream == nil, !plan.original.hasBodyStream else { return false }
        return request.isRepeatable(methods: plan.chain?.retriedMethods ?? RetryPolicy.defaultRetryableHTTPMethods)
    }

    /// The error a request ends with when a gate that granted its retry ended the backoff (a breaker that opened):
    /// the gate's error beside the last attempt's failure, as if the gate had denied the retry.
    mutating func endedInBackoff(by error: any Error) -> ReboundError {
        guard let last = attempts.last, let reason = last.failure else {
            preconditionFailure("a retry follows a failure")
        }
        _ = fail(
            with: failure(
                .retryAborted(error: error, original: reason), response: last.responseHead, data: bodyBeforeBackoff))
        return ending()
    }

    /// The decision when the deadline came while the retriers were deciding about `error`.
    mutating func decidedTooLate(_ error: ReboundError) -> AttemptDecision {
        fail(with: deadlineExceeded(after: error.reason, response: error.responseHead, data: error.data))
    }

    /// The decision after an attempt the deadline cut short.
    mutating func deadlineReachedInAttempt() -> AttemptDecision {
        fail(with: deadlineExceeded(after: Self.deadlineCutShort))
    }

    /// Keeps the error the request ends with and returns ``AttemptDecision/failed``.
    mutating func fail(with error: ReboundError) -> AttemptDecision {
        failure = error
        return .failed
    }

    /// The error kept by ``fail(with:)``.
    mutating func ending() -> ReboundError {
        guard let failure else { preconditionFailure("a failed decision keeps its error") }
        return failure
    }

    func failure(_ reason: ReboundError.Reason, response: ResponseHead?, data: Data?)
        -> ReboundError
    {
        ReboundError(
            reason: reason, original: plan.original, lastRequest: lastSentRequest,
            responseHead: response, data: data, attempts: attempts)
    }

    /// The deadline error after `reason`.
    func deadlineExceeded(
        after reason: ReboundError.Reason, response: ResponseHead? = nil, data: Data? = nil
    ) -> ReboundError {
        failure(.deadlineExceeded(deadline: plan.deadline ?? .zero, last: reason), response: response, data: data)
    }
}

// Asking the retriers about a failed attempt.
extension RequestPlan {
    /// Asks the retriers about `question`, racing the time left; `nil` when the time ran out or the task was cancelled
    /// first.
    func retryResult(for question: RequestRun.Question, racing remaining: Duration) async -> RetryResult? {
        let (request, error) = (question.request, question.error)
        switch await Race.run(remaining, clock: session.clock, { await self.retryResult(for: request, dueTo: error) }) {
        case .finished(let answer): return answer
        case .limitReached, .cancelled: return nil
        }
    }

    /// Asks the retriers registered through the context, then the session's, then the request's; the first answer
    /// other than `doNotRetry` wins.
    func retryResult(for request: RetryRequest, dueTo error: ReboundError) async -> RetryResult {
        for retrier in registered?.retriers ?? [] {
            let result = await retrier.retry(request, dueTo: error)
            if case .doNotRetry = result { continue }
            return result
        }
        return await chain?.retry(request, dueTo: error) ?? .doNotRetry
    }
}

// MARK: - The backoff before a retry

extension RequestRun {
    /// Sleeps the backoff before a retry on the session's clock; a breaker that granted the retry ends the wait if it
    /// opens meanwhile.
    ///
    /// Out of line: inlined into `Session.send`, the breaker's wait would stay in that frame for the whole request,
    /// also for requests that never wait (about 1 KB more per waiting request, `ReboundAllocations/WaitingInBackoff`).
    ///
    /// - Throws: `CancellationError` when the task is cancelled, or the ``ReboundError`` the request ends with when a
    ///   breaker ended the wait.
    @inline(never)
    mutating func backOff(for delay: Duration) async throws {
        guard delay > .zero else { return }
        if let wait = backoffWait {
            switch await wait.sleep(for: delay, on: plan.session.clock) {
            case .slept: return
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

// MARK: - What the observers are told

// What the observers are told: each attempt's outcome, and the request's end.
extension RequestRun {
    /// Has the parts that let the last recorded attempt through settle it (``AttemptAccountant``), at once and in
    /// order, before any observer hears of it; returns whether any observer is to be told of it (one lock for both).
    mutating func settle(_ result: AttemptResult, decision: AttemptDecision) -> Bool {
        guard let roles = plan.registered else { return plan.listsObservers }
        let (accountants, registeredObservers) = roles.accountantsAndObservers
        if !accountants.isEmpty, let attempt = attempts.last {
            // Built once, and only for a part that asks for it (a breaker with a `classify` of its own).
            var built: AttemptOutcome?
            let requestID = plan.requestID
            for part in accountants {
                part.settle(attempt, of: requestID, roles: roles) {
                    if let built { return built }
                    let outcome = outcome(of: attempt, data: result.data, decision: decision)
                    built = outcome
                    return outcome
                }
            }
        }
        return registeredObservers || plan.listsObservers
    }

    /// Tells the observers how the last recorded attempt ended: the session's and the request's, then those that
    /// registered.
    mutating func report(_ result: AttemptResult, decision: AttemptDecision) async {
        let registered = plan.registeredObservers
        guard let outcome = outcome(data: result.data, decision: decision) else { return }
        for observer in plan.roles.observers {
            await observer.attemptDidFinish(outcome)
        }
        for registration in registered {
            guard case .observer(let observer) = registration.entry else { continue }
            await observer.attemptDidFinish(outcome)
        }
    }

    /// Tells the observers how the request ended, in the same order.
    mutating func finish(_ decision: AttemptDecision) async {
        let registered = plan.registeredObservers
        let outcome = requestOutcome(decision)
        for observer in plan.roles.observers {
            await observer.requestDidFinish(outcome)
        }
        for registration in registered {
            guard case .observer(let observer) = registration.entry else { continue }
            await observer.requestDidFinish(outcome)
        }
    }

    /// What the observers are told of the request's end.
    func requestOutcome(_ decision: AttemptDecision) -> RequestOutcome {
        RequestOutcome(
            requestID: plan.requestID, label: plan.label, original: plan.original, attempts: attempts,
            elapsed: plan.session.clock.now() - start, decision: decision, error: decision == .failed ? failure : nil)
    }

    /// What the observers are told of the last recorded attempt.
    func outcome(data: Data?, decision: AttemptDecision) -> AttemptOutcome? {
        guard let attempt = attempts.last else { return nil }
        return outcome(of: attempt, data: data, decision: decision)
    }

    /// What the observers are told of `attempt`, the last recorded.
    func outcome(of attempt: Attempt, data: Data?, decision: AttemptDecision) -> AttemptOutcome {
        AttemptOutcome(
            requestID: plan.requestID, label: plan.label, original: plan.original, attempt: attempt,
            data: data, elapsed: plan.session.clock.now() - start, decision: decision,
            error: decision == .failed ? failure : nil)
    }
}

// Whom the request's end concerns.
extension RequestPlan {
    /// Whether any observer is to be told: one the session or the request was given, or one that registered so far.
    var hasObservers: Bool {
        listsObservers || registered?.hasObservers == true
    }

    /// Tells the parts that settle their attempts that the request ended. (Not called for a success at the first
    /// attempt: a part keeps something for a request only once it granted it a retry.)
    func endAccounts() {
        guard let accountants = registered?.accountantsAndObservers.accountants, !accountants.isEmpty else {
            return
        }
        for part in accountants { part.requestEnded(requestID) }
    }
}
