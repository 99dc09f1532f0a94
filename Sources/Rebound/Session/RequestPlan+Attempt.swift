import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// The steps of an attempt that do not change the run's state take the plan (a reference) rather than the run, so
// that no copy of the run is kept in the frames that call them.
extension RequestPlan {
    /// Runs one attempt, started `elapsed` into the request, racing the deadline's time left and the attempt timeout,
    /// whichever comes first; the attempt is cancelled when its time runs out, and the run goes on at once even if the
    /// attempt ignores cancellation (its result is then dropped).
    /// `onSend` hears the request handed to the transport (a hedged round's attempts report it).
    @inline(never)
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

    /// `request` adapted in place by `adaptInPlace`; out of line, so that the request being changed stays out of the
    /// attempt's async frame.
    @inline(never)
    static func adapt(
        _ request: consuming URLRequest, inPlace adaptInPlace: Adapter.ModifyNowHandler, context: RequestContext
    ) throws -> URLRequest {
        var request = request
        try adaptInPlace(&request, context)
        return request
    }

    /// The result of an attempt that threw before it had a response: cancelled, if the error or the task says so.
    @inline(never)
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
    @inline(never)
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
