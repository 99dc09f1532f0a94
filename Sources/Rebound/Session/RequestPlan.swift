import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What stays the same across a request's attempts: its settings, fixed when it starts, the parts it brought of its
/// own, and the registrations its parts make through their contexts. Shared by the request's machine, its driver and
/// every attempt, hedges too.
///
/// What the request does not set for itself (its chain, validator, redirect handler, observers and gates) is read from
/// the session when used rather than copied here: most requests set none of it.
final class RequestPlan: Sendable {
    let session: Session
    /// The request as the caller gave it (see ``OriginalRequest``).
    let original: OriginalRequest
    let label: String?
    /// What the request brought of its own (chain, validator, redirect handler, observers and gates); `nil` for
    /// none, the common case.
    private let own: RequestParts?
    /// The roles parts register through the contexts they are handed; `nil` when no part may register or read the
    /// deadline through one: no part of the chain (``ChainBox/mayRegister``), and no gate, validator or redirect handler
    /// (``Session/handsOutContexts(gates:validation:redirectHandler:)``).
    let registered: RegisteredRoles?
    let deadline: Duration?
    /// The request's deadline and its one timer, from when the plan is made; `nil` without a deadline.
    let deadlineTimer: DeadlineTimer?
    let attemptTimeout: Duration?
    /// The hedging settings in effect, if they ever let a second attempt be in flight; `nil` otherwise.
    let hedging: Hedging?
    let requestID = RequestIDs.next()

    /// The plan of a request sent through `session`, with what the request did not set of its own (each left empty or
    /// `nil`) resolved against the session's; makes its registrations if a part may register through its contexts.
    /// The parts the request may bring are borrowed: the plan copies only those it keeps, and most requests bring none.
    init(
        session: Session, original: consuming OriginalRequest, label: String? = nil,
        adapters: borrowing [any RequestAdapter] = [], retriers: borrowing [any RequestRetrier] = [],
        interceptor: borrowing (any RequestInterceptor)? = nil, observers: borrowing [any AttemptObserver] = [],
        gates: borrowing [any RetryGate] = [], validator: borrowing (any ResponseValidator)? = nil,
        deadline: Duration? = nil, attemptTimeout: Duration? = nil,
        redirectHandler: borrowing (any RedirectHandler)? = nil, hedging: borrowing Hedging? = nil
    ) {
        if let attemptTimeout { Session.check(attemptTimeout: attemptTimeout) }
        // Most requests bring nothing of their own: then none of the existentials above is touched (compared with
        // `nil` only, which copies nothing).
        let own: RequestParts? =
            if adapters.isEmpty, retriers.isEmpty, interceptor == nil, observers.isEmpty, gates.isEmpty,
                validator == nil, redirectHandler == nil
            {
                nil
            } else {
                RequestParts(
                    session: session,
                    requestInterceptor: Session.chain(adapters: adapters, retriers: retriers, interceptor: interceptor),
                    requestRoles: observers.isEmpty && gates.isEmpty
                        ? nil : ChainRoles(observers: copy observers, gates: copy gates),
                    validator: copy validator, redirectHandler: copy redirectHandler)
            }
        let deadline = deadline ?? session.deadline
        self.session = session
        self.original = consume original
        self.label = label
        self.own = own
        self.deadline = deadline
        self.attemptTimeout = attemptTimeout ?? session.attemptTimeout
        self.hedging = (copy hedging ?? session.hedging).flatMap { $0.hedges ? $0 : nil }
        let deadlineTimer = deadline.map { DeadlineTimer(end: session.clock.now() + $0, clock: session.clock) }
        self.deadlineTimer = deadlineTimer
        // Registrations are kept where a part may register or read the time left before the deadline (a pacer that
        // would wait) through what it is handed: a part of the chain, or a gate, validator or redirect handler.
        let keepsRegistrations =
            (own?.chain ?? session.chain)?.mayRegister == true || (own?.handsOutContexts ?? session.handsOutContexts)
        self.registered =
            keepsRegistrations ? RegisteredRoles(besides: own?.roles ?? session.roles, deadline: deadlineTimer) : nil
    }

    /// The session's interceptor followed by the request's, as one: each attempt makes at most one call to adapt (none
    /// for a chain of retriers only), and a failed attempt's question goes to its retriers one by one.
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

    /// The validator in effect: the request's, or the session's.
    var validation: Validator { own?.validation ?? session.validation }

    /// The request as the caller gave it, built anew each time when it is kept as parts.
    var originalRequest: URLRequest { original.request }

    /// The registrations that hold the observers parts registered so far, in order (told after the session's and
    /// the request's); none when no observer registered.
    var registeredObservers: RegisteredRoles.Registrations { registered?.withObservers ?? .none }

    /// What parts hold and noted of the request's attempts, in the same record as its registrations; `nil` when it
    /// keeps none.
    var ledger: RequestLedger? { registered.map { $0.ledger } }  // See `RequestContext.ledger`.

    /// The gates registered so far that the chain does not hold: asked after the chain's.
    var registeredGates: [any RetryGate] { registered?.gates ?? [] }

    /// Whether the request has any gate to ask before a retry: given to the session or the request, or registered so
    /// far.
    var hasGates: Bool { hasGivenGates || registered?.hasGates == true }

    /// Whether a gate may be asked about a retry of the request: one was given to the session or the request, or the
    /// request keeps registrations, through which a part may register one. Fixed for the request's life: the request's
    /// machine reads it, and no lock.
    var mayHaveGates: Bool { hasGivenGates || registered != nil }

    /// Whether a gate was given to the session or the request.
    private var hasGivenGates: Bool {
        if let roles = own?.roles { !roles.gates.isEmpty } else { !session.roles.gates.isEmpty }
    }

    /// The most attempts the chain's own retriers allow (1 + their largest retry limit, when each says it), or the
    /// hedging settings' if larger: retries and hedges together stay within those of a request that may be repeated,
    /// and a request that may not is never hedged. `nil` when a retrier does not say.
    var maximumAttempts: Int? {
        guard let retries = chain?.maximumRetries else { return nil }
        return Swift.max(retries + 1, hedging?.maximumAttempts ?? 1)
    }

    /// The delay `head` asks for on a 429 or 503, held at no maximum, as the chain's retry policies read it
    /// (`retry-after-ms` before `Retry-After` when they read it): the one reader of a delay a response asks for, which
    /// the deadline's rule uses, and the hedges held at a maximum (``quietAsked(by:)``).
    func askedDelay(by head: ResponseHead) -> Duration? {
        RetryAfter.asked(by: head, reading: chain?.serverSignals ?? [])
    }

    /// The quiet `head` asks of its host on a 429 or 503, as ``askedDelay(by:)`` reads it, held at the longest delay
    /// the chain's retry policies honour (``RetryAfter/defaultMaximumDelay``, 60 s, when none says): no hedge of a
    /// round goes to that host before it ends, nor the retry after the round.
    func quietAsked(by head: ResponseHead) -> Duration? {
        askedDelay(by: head).map { Swift.min($0, chain?.longestAskedDelay ?? RetryAfter.defaultMaximumDelay) }
    }

    /// Whether a request may be sent more than once at a time: a method the chain's retry policies retry (those
    /// ``RetryPolicy`` retries by default when none says), or an `Idempotency-Key` that is not empty; never a stream
    /// body.
    func mayBeRepeated(_ request: URLRequest) -> Bool {
        guard request.httpBodyStream == nil, !original.hasBodyStream else { return false }
        return request.isRepeatable(methods: chain?.retriedMethods ?? RetryPolicy.defaultRetryableHTTPMethods)
    }

    /// Whether `head` asks for no retry with an `x-should-retry: false` that the chain's retry policies read: then no
    /// new hedge of the round starts.
    func asksNoRetry(_ head: ResponseHead) -> Bool {
        RetryAfter.asksNoRetry(head, reading: chain?.serverSignals ?? [])
    }
}

// MARK: - One attempt: adapt, send, follow redirects, validate

// The steps of an attempt change nothing of the request's state: they belong to the plan, which every attempt shares,
// hedges too.
extension RequestPlan {
    /// Runs one attempt within `limit` (``RequestTime/Limits/limit(of:now:)``); the attempt is cancelled when its time
    /// runs out, and the request goes on at once even if the attempt ignores cancellation (its result is then dropped).
    /// `onSend` hears the request handed to the transport (a hedged round's attempts report it); a hedge
    /// (`repeatedOnly`) is sent only if its adapted request may be repeated.
    @inline(never)
    func attempt(
        _ base: consuming URLRequest, number: Int, within limit: TimeLimit,
        onSend: (@Sendable (Handoff) -> Void)? = nil, repeatedOnly: Bool = false
    ) async -> AttemptResult {
        if limit.duration <= .zero { return .deadlineReached }
        // What the attempt handed to the transport before its time ran out: a sent attempt is recorded as sent (a
        // budget charges it, a breaker times it), though its result is dropped.
        let sending = Locked<Handoff?>(nil)
        let base = consume base
        let kind: AttemptResult.Kind
        let run: @Sendable () async -> AttemptResult = {
            await self.attempt(base, number: number, sending: sending, onSend: onSend, repeatedOnly: repeatedOnly)
        }
        switch await within(limit, run) {
        case .finished(let result): return result
        case .limitReached:
            kind = if case .deadline = limit { .deadlineReached } else { AttemptResult.attemptTimeoutReached.kind }
        case .cancelled: kind = .cancelled
        }
        let sent = sending.withLock { $0 }
        return AttemptResult(kind, sent: sent?.request, sentAt: sent?.at)
    }

    /// Runs `work` within `limit`: the one way a request awaits a step under a time limit. Under the deadline, the
    /// step races the request's one timer (``DeadlineTimer``); under an attempt timeout, a timer of its own on the
    /// session's clock. The request resumes at the limit (or at its own cancellation) even if `work` ignores
    /// cancellation.
    func within<Value: Sendable>(_ limit: TimeLimit, _ work: @escaping @Sendable () async -> Value) async
        -> RaceOutcome<Value>
    {
        guard limit.duration > .zero else { return .limitReached }
        if case .deadline = limit, let deadlineTimer { return await Race.run(until: deadlineTimer, work) }
        return await Race.run(limit.duration, clock: session.clock, work)
    }

    /// Adapts `base`, sends and validates once; notes in `sending`, and tells `onSend`, the request it hands to the
    /// transport and when. A hedge (`repeatedOnly`) whose adapted request may not be repeated (a POST its adapters gave
    /// no idempotency key) is not sent: the round judged it by another request than the one it sends.
    func attempt(
        _ base: consuming URLRequest, number: Int, sending: Locked<Handoff?>? = nil,
        onSend: (@Sendable (Handoff) -> Void)? = nil, repeatedOnly: Bool = false
    ) async -> AttemptResult {
        let context = RequestContext(
            requestID: requestID, attempt: number, label: label, roles: registered, maximumAttempts: maximumAttempts)
        let adapted: URLRequest
        // The parts that hold something for the attempt only while it is in flight (a concurrency limiter's place).
        var holding = InlineList<any HostAdmission>.none
        do {
            // Through the combined chain (the session's adapters, then the request's), in place if it never suspends;
            // none, no call.
            if let chain, chain.adapts {
                if let adaptInPlace = chain.adaptInPlace {
                    var request = consume base
                    try adaptInPlace(&request, context)
                    adapted = request
                } else {
                    adapted = try await chain.adapt(consume base, context: context)
                }
                // A part that admitted the attempt (in its `adapt`, the one place a part admits) under a host that a
                // later adapter changed admits it again, under the host it is sent to.
                if let registered {
                    for admission in registered.ledger.takeAdmissions(of: number) {
                        if admission.part.holdsWhileInFlight { holding.append(admission.part) }
                        guard adapted.url != admission.url else { continue }
                        // `nil`: the part lets the new host through untouched, and only gives back what it took.
                        let key = admission.part.admissionKey(for: adapted)
                        guard key != admission.key else { continue }
                        try await admission.part.readmit(context, from: admission.key, to: key)
                    }
                }
                if repeatedOnly, !mayBeRepeated(adapted) { throw HedgeNotRepeatable() }
            } else {
                // Nothing adapts it: the hedge is the request the round judged.
                adapted = base
            }
        } catch {
            // Admissions not yet checked are dropped: the attempt is not sent, and what it holds while in flight goes
            // back now, before the retriers decide about the failure.
            for admission in ledger?.takeAdmissions(of: number) ?? .none where admission.part.holdsWhileInFlight {
                holding.append(admission.part)
            }
            for part in holding { part.attemptEnded(context, response: nil) }
            return Self.failed(.adaptationFailed(error: error), sent: nil)
        }
        // From here the attempt is on the wire: its time there (``Attempt/timeOnWire``) counts from now.
        let sentAt = session.clock.now()
        if let sending { sending.withLock { $0 = Handoff(request: adapted, at: sentAt) } }
        if let onSend { onSend(Handoff(request: adapted, at: sentAt)) }
        let result: AttemptResult
        do {
            let (data, response) = try await session.transport.exchange(adapted)
            result =
                if response.isRedirect {
                    await followRedirects(
                        from: adapted, sentAt: sentAt, response: response, data: data, context: context)
                } else {
                    check(response, data: data, sent: adapted, sentAt: sentAt, context: context)
                }
        } catch {
            result = Self.failed(
                .transportFailed(error: error), sent: adapted, sentAt: sentAt,
                beforeSending: session.transport.failedBeforeSending(error))
        }
        // The attempt is no longer in flight: a concurrency limiter's place goes back now, not once the retriers decided.
        for part in holding { part.attemptEnded(context, response: result.response) }
        return result
    }

    /// The result of an attempt that threw before it had a response: cancelled, if the error or the task says so;
    /// `beforeSending` when the transport said that no byte of it reached the server.
    static func failed(
        _ reason: ReboundError.Reason, sent: URLRequest?, firstHop: URLRequest? = nil, sentAt: Duration? = nil,
        beforeSending: Bool = false
    ) -> AttemptResult {
        switch reason {
        case .adaptationFailed(let open as CircuitBreakerOpenError):
            return AttemptResult(.failure(.circuitOpen(open)))
        case .adaptationFailed(let error) where error is CancellationError,
            .transportFailed(let error) where error is CancellationError:
            return AttemptResult(.cancelled, sent: sent, firstHop: firstHop, sentAt: sentAt)
        default:
            return AttemptResult(
                Task.isCancelled ? .cancelled : .failure(reason), sent: sent, firstHop: firstHop,
                failedBeforeSending: beforeSending, sentAt: sentAt)
        }
    }

    /// Validates a response: with the validator in effect, then with those the chain's parts registered.
    /// `firstHop` is the adapted request when `sent` is the last hop of its redirects.
    func check(
        _ response: ResponseHead, data: Data, sent: URLRequest, firstHop: URLRequest? = nil, sentAt: Duration,
        context: RequestContext
    ) -> AttemptResult {
        func result(_ kind: AttemptResult.Kind) -> AttemptResult {
            AttemptResult(kind, sent: sent, firstHop: firstHop, response: response, data: data, sentAt: sentAt)
        }
        if let reason = validation.check(response, data, context) { return result(.failure(reason)) }
        if let registered, registered.hasValidators {
            for registration in registered.withValidators {
                guard case .validator(let validator) = registration.entry else { continue }
                if let reason = validator.reason(for: response, data: data, context: context) {
                    return result(.failure(reason))
                }
            }
        }
        return result(.success)
    }
}

// An attempt's redirects, followed hop by hop by the session itself.
extension RequestPlan {
    /// Follows the redirects of an attempt hop by hop, as the redirect handler decides, and validates the response
    /// the last hop got (a redirect not followed included).
    func followRedirects(
        from sent: URLRequest, sentAt: Duration, response: ResponseHead, data: Data, context: RequestContext
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
                    .transportFailed(error: URLError(.httpTooManyRedirects)), sent: sent, firstHop: firstHop,
                    sentAt: sentAt)
            }
            let next = await nextHop(proposed, after: sent, response: response, context: context, handler: handler)
            guard let next else { break }
            hops += 1
            await tell(
                RedirectHop(
                    requestID: requestID, label: label, attempt: context.attempt, number: hops, request: sent,
                    responseHead: response, next: next))
            if Task.isCancelled {
                return AttemptResult(.cancelled, sent: sent, firstHop: hops > 1 ? firstHop : nil, sentAt: sentAt)
            }
            do {
                (data, response) = try await session.transport.exchange(next)
                sent = next
            } catch {
                // Never "before sending": the first hop reached the server.
                return Self.failed(.transportFailed(error: error), sent: next, firstHop: firstHop, sentAt: sentAt)
            }
        }
        return check(
            response, data: data, sent: sent, firstHop: hops > 0 ? firstHop : nil, sentAt: sentAt, context: context)
    }

    /// The request the handler chooses to send after `sent` was redirected, secured against leaking credentials both
    /// before the handler sees it and after it answered; `nil` to stop.
    func nextHop(
        _ proposed: URLRequest, after sent: URLRequest, response: ResponseHead, context: RequestContext,
        handler: any RedirectHandler
    ) async -> URLRequest? {
        let stripped = handler.strippedHeaders
        let scopes = registered?.scopes ?? []
        let applied = ledger?.credentialsApplied(to: context.attempt) ?? []
        var proposed = proposed
        Redirection.secure(&proposed, after: sent, stripping: stripped, scopes: scopes, applied: applied)
        // A handler that rewrites the hop to something other than http(s) (a file URL, say) stops it.
        guard var next = await handler.redirect(sent, to: proposed, for: response, context: context),
            let scheme = next.url?.scheme?.lowercased(), scheme == "http" || scheme == "https"
        else { return nil }
        Redirection.secure(&next, after: sent, stripping: stripped, scopes: scopes, applied: applied)
        return next
    }
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
    /// Whether a gate, the validator or the redirect handler in effect is handed contexts through which it may
    /// register or read the deadline (see ``Session/handsOutContexts(gates:validation:redirectHandler:)``).
    let handsOutContexts: Bool

    /// Parts of a request's own for `session`: each of `requestInterceptor`, `requestRoles`, `validator` and
    /// `redirectHandler` is the request's own, `nil` for the session's.
    init(
        session: Session, requestInterceptor: (any RequestInterceptor)?, requestRoles: ChainRoles?,
        validator: (any ResponseValidator)?, redirectHandler: (any RedirectHandler)?
    ) {
        self.chain =
            if let requestInterceptor {
                session.chain.map { ChainBox(session: $0, thenRequest: requestInterceptor) }
                    ?? ChainBox(requestInterceptor)
            } else {
                nil
            }
        self.validation = validator.map(Validator.resolving)
        self.redirectHandler = redirectHandler
        self.roles = requestRoles.map { session.roles.followed(by: $0) }
        self.handsOutContexts = Session.handsOutContexts(
            gates: (roles ?? session.roles).gates, validation: validation ?? session.validation,
            redirectHandler: redirectHandler ?? session.redirectHandler)
    }
}
