import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The state of one logical request as it goes through the pipeline, attempt after attempt.
struct RequestRun: Sendable {
    let session: Session
    let originalRequest: URLRequest
    let label: String?
    let requestInterceptor: (any RequestInterceptor)?
    let validator: ResponseValidator
    let roles: ChainRoles
    let deadline: Duration?
    let requestID = RequestIDs.next()

    private var attempts: [Attempt] = []
    private var lastSentRequest: URLRequest?
    /// The request adapters start from: the caller's, until a retrier answers `retryWithRequest`.
    private var base: URLRequest
    private var start: Duration = .zero

    init(
        session: Session, originalRequest: URLRequest, label: String?, requestInterceptor: (any RequestInterceptor)?,
        validator: ResponseValidator, deadline: Duration?
    ) {
        self.session = session
        self.originalRequest = originalRequest
        self.base = originalRequest
        self.label = label
        self.requestInterceptor = requestInterceptor
        self.validator = validator
        self.deadline = deadline
        self.roles =
            requestInterceptor == nil ? session.roles : session.roles.followed(by: ChainRoles(of: requestInterceptor))
    }

    /// What one attempt came to.
    private enum Outcome: Sendable {
        case success(URLRequest, HTTPURLResponse, Data)
        case failure(ReboundError.Reason, sent: URLRequest?, response: HTTPURLResponse?, data: Data?)
        case cancelled(sent: URLRequest?)
        /// The deadline came while the attempt was in flight.
        case timedOut
    }

    /// How an attempt ended, when it did not end the request: its response, or its failure for the retriers.
    private enum AttemptEnd {
        case finished(Response)
        case failed(FailedAttempt)
    }

    /// A failed attempt's particulars, in one box, so that the frame that holds them while the retriers decide stays
    /// small.
    private final class FailedAttempt: Sendable {
        let reason: ReboundError.Reason
        let sent: URLRequest?
        let response: HTTPURLResponse?
        let data: Data?

        init(_ reason: ReboundError.Reason, sent: URLRequest?, response: HTTPURLResponse?, data: Data?) {
            self.reason = reason
            self.sent = sent
            self.response = response
            self.data = data
        }
    }

    mutating func execute() async throws -> Response {
        start = session.clock.now()
        while true {
            // The attempt and the decision after a failure run one after the other in frames of their own, and the
            // backoff is slept here, in this small frame: a task keeps the memory of its deepest frames until it
            // ends, so a request waiting in backoff costs the larger of the two, not their sum.
            switch try await attemptOnce() {
            case .finished(let response):
                return response
            case .failed(let failed):
                let delay = try await afterFailure(failed)
                guard delay > .zero else { continue }
                do {
                    try await session.clock.sleep(delay)
                } catch {
                    // Clocks throw from `sleep` only when the sleeping task is cancelled.
                    throw CancellationError()
                }
            }
        }
    }

    /// Makes one attempt and records it; throws when it ends the request (cancellation, the deadline).
    private mutating func attemptOnce() async throws -> AttemptEnd {
        if Task.isCancelled { throw CancellationError() }
        let number = attempts.count + 1
        let attemptStart = session.clock.now()
        // Without a deadline, no race and no frame for one: a waiting request's memory is its frames' high-water mark.
        let outcome: Outcome
        if let deadline {
            outcome = await attempt(number: number, racing: deadline)
        } else {
            outcome = await attempt(number: number)
        }
        let duration = session.clock.now() - attemptStart

        switch outcome {
        case .cancelled(let sent):
            let attempt = Attempt(number: number, request: sent, response: nil, failure: nil, duration: duration)
            if !roles.observers.isEmpty { await report(cut: attempt, data: nil, decision: .cancelled) }
            throw CancellationError()

        case .timedOut:
            let reason = ReboundError.Reason.transportFailed(error: URLError(.timedOut))
            attempts.append(Attempt(number: number, request: nil, response: nil, failure: reason, duration: duration))
            let error = deadlineExceeded(after: reason, response: nil, data: nil)
            if !roles.observers.isEmpty {
                await report(data: nil, decision: .failed(error))
            }
            throw error

        case .success(let sent, let response, let data):
            attempts.append(
                Attempt(number: number, request: sent, response: response, failure: nil, duration: duration))
            if !roles.observers.isEmpty { await report(data: data, decision: .succeeded) }
            return .finished(
                Response(
                    data: data, httpResponse: response, request: sent, originalRequest: originalRequest,
                    attempts: attempts))

        case .failure(let reason, let sent, let response, let data):
            if let sent { lastSentRequest = sent }
            attempts.append(
                Attempt(number: number, request: sent, response: response, failure: reason, duration: duration))
            return .failed(FailedAttempt(reason, sent: sent, response: response, data: data))
        }
    }

    /// Asks the retriers about a failed attempt, decides, and tells the observers; returns the delay before the
    /// retry, or throws the error the request ends with.
    ///
    /// Two awaits at most (the retriers, the observers), a synchronous decision between them, and only references
    /// live across them: a small frame, because a waiting request's memory is the high-water mark of its frames.
    private mutating func afterFailure(_ failed: FailedAttempt) async throws -> Duration {
        let error = failure(failed.reason, response: failed.response, data: failed.data)
        let retryRequest = RetryRequest(
            requestID: requestID, label: label, originalRequest: originalRequest, lastRequest: failed.sent,
            response: failed.response, data: failed.data, attempts: attempts)
        // A non-retryable failure (an open breaker, say) is not offered to the retriers at all.
        let result = failed.reason.isNonRetryable ? .doNotRetry : await retryResult(for: retryRequest, dueTo: error)
        // A retrier may take its time; a request cancelled meanwhile ends as cancelled, whatever it answered.
        if Task.isCancelled {
            if !roles.observers.isEmpty { await report(data: failed.data, decision: .cancelled) }
            throw CancellationError()
        }
        let next = decide(after: result, for: retryRequest, dueTo: error)
        if !roles.observers.isEmpty { await report(data: failed.data, decision: next.decision) }
        switch next {
        case .retry(let delay): return delay
        case .fail(let final): throw final
        }
    }

    /// What follows a failed attempt once the retriers have answered.
    private enum Next {
        case retry(after: Duration)
        case fail(ReboundError)

        var decision: AttemptOutcome.Decision {
            switch self {
            case .retry(let delay): .retry(after: delay)
            case .fail(let error): .failed(error)
            }
        }
    }

    /// Decides what follows the retriers' answer to a failed attempt: a retry after its delay, unless the deadline
    /// comes first or a gate denies it, or the failure the request ends with. Records the retry in the attempt.
    private mutating func decide(after result: RetryResult, for request: RetryRequest, dueTo error: ReboundError)
        -> Next
    {
        let reason = error.reason
        guard let delay = result.delay else {
            let aborted = result.error.map {
                failure(.retryAborted(error: $0, original: reason), response: error.response, data: error.data)
            }
            return .fail(aborted ?? error)
        }
        // Backoff never sleeps past the deadline: a delay that would end after it ends the request now.
        if let deadline, session.clock.now() + delay - start > deadline {
            return .fail(deadlineExceeded(after: reason, response: error.response, data: error.data))
        }
        for gate in roles.gates {
            if let denial = gate.admitRetry(request, dueTo: error, after: delay) {
                return .fail(
                    failure(.retryAborted(error: denial, original: reason), response: error.response, data: error.data))
            }
        }
        attempts[attempts.count - 1].retryDelay = delay
        if let request = result.request { base = request }
        return .retry(after: delay)
    }

    private func failure(_ reason: ReboundError.Reason, response: HTTPURLResponse?, data: Data?) -> ReboundError {
        ReboundError(
            reason: reason, originalRequest: originalRequest, lastRequest: lastSentRequest, response: response,
            data: data, attempts: attempts)
    }

    /// The deadline error after `reason`.
    private func deadlineExceeded(after reason: ReboundError.Reason, response: HTTPURLResponse?, data: Data?)
        -> ReboundError
    {
        failure(.deadlineExceeded(deadline: deadline ?? .zero, last: reason), response: response, data: data)
    }

    /// Tells the chain's observers how an attempt ended; callers skip the call when the chain has none, so that
    /// neither its time nor its frame is paid for.
    ///
    /// The attempt is the last recorded one, or `cut`, an attempt cancelled before it could be recorded. (Reading it
    /// here rather than taking it as an argument keeps a copy of an `Attempt` out of the caller's frame per call.)
    private func report(cut: Attempt? = nil, data: Data?, decision: AttemptOutcome.Decision) async {
        guard let attempt = cut ?? attempts.last else { return }
        let outcome = AttemptOutcome(
            requestID: requestID, label: label, originalRequest: originalRequest, attempt: attempt, data: data,
            elapsed: session.clock.now() - start, decision: decision)
        for observer in roles.observers {
            await observer.attemptDidFinish(outcome)
        }
    }

    /// Runs one attempt racing the time left before `deadline`, and cancels it when the time runs out.
    private func attempt(number: Int, racing deadline: Duration) async -> Outcome {
        let remaining = deadline - (session.clock.now() - start)
        guard remaining > .zero else { return .timedOut }
        let run = self
        let clock = session.clock
        return await withTaskGroup(of: Outcome?.self) { group in
            group.addTask { await run.attempt(number: number) }
            group.addTask {
                // `nil` once the time is up; a cancelled sleep (the attempt finished first) is never read.
                try? await clock.sleep(remaining)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            if let first { return first }
            return Task.isCancelled ? .cancelled(sent: nil) : .timedOut
        }
    }

    /// Adapts, sends, validates and inspects once.
    private func attempt(number: Int) async -> Outcome {
        let context = RequestContext(requestID: requestID, attempt: number, label: label)
        let adapted: URLRequest
        do {
            adapted = try await adapt(context: context)
        } catch {
            if error is CancellationError || Task.isCancelled { return .cancelled(sent: nil) }
            return .failure(.adaptationFailed(error: error), sent: nil, response: nil, data: nil)
        }

        let data: Data
        let response: HTTPURLResponse
        do {
            (data, response) = try await session.transport.send(adapted)
        } catch {
            if error is CancellationError || Task.isCancelled { return .cancelled(sent: adapted) }
            return .failure(.transportFailed(error: error), sent: adapted, response: nil, data: nil)
        }

        if let reason = validator.validate(response, data: data) {
            return .failure(reason, sent: adapted, response: response, data: data)
        }
        for inspector in roles.inspectors {
            do {
                try inspector.inspect(response, data: data, context: context)
            } catch {
                return .failure(.validationFailed(error: error), sent: adapted, response: response, data: data)
            }
        }
        return .success(adapted, response, data)
    }

    /// Runs the session's adapters, then the request's, on the request of this attempt.
    private func adapt(context: RequestContext) async throws -> URLRequest {
        var request = base
        if let interceptor = session.interceptor {
            request = try await interceptor.adapt(consume request, context: context)
        }
        if let requestInterceptor {
            request = try await requestInterceptor.adapt(consume request, context: context)
        }
        return request
    }

    /// Asks the session's retriers, then the request's; the first answer other than `doNotRetry` wins.
    private func retryResult(for request: RetryRequest, dueTo error: ReboundError) async -> RetryResult {
        if let interceptor = session.interceptor {
            let result = await interceptor.retry(request, dueTo: error)
            if case .doNotRetry = result {} else { return result }
        }
        if let requestInterceptor {
            return await requestInterceptor.retry(request, dueTo: error)
        }
        return .doNotRetry
    }
}
