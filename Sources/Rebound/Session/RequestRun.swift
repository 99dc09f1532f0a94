import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The state of one logical request as it goes through the pipeline, attempt after attempt.
struct RequestRun {
    let session: Session
    let originalRequest: URLRequest
    let label: String?
    let requestInterceptor: (any RequestInterceptor)?
    let validator: ResponseValidator
    let roles: ChainRoles
    let requestID = RequestIDs.next()

    private var attempts: [Attempt] = []
    private var lastSentRequest: URLRequest?
    private var start: Duration = .zero

    init(
        session: Session, originalRequest: URLRequest, label: String?, requestInterceptor: (any RequestInterceptor)?,
        validator: ResponseValidator
    ) {
        self.session = session
        self.originalRequest = originalRequest
        self.label = label
        self.requestInterceptor = requestInterceptor
        self.validator = validator
        self.roles =
            requestInterceptor == nil ? session.roles : session.roles.followed(by: ChainRoles(of: requestInterceptor))
    }

    /// What one attempt came to.
    private enum Outcome {
        case success(URLRequest, HTTPURLResponse, Data)
        case failure(ReboundError.Reason, sent: URLRequest?, response: HTTPURLResponse?, data: Data?)
        case cancelled(sent: URLRequest?)
    }

    mutating func execute() async throws -> Response {
        start = session.clock.now()
        while true {
            if Task.isCancelled { throw CancellationError() }
            let number = attempts.count + 1
            let attemptStart = session.clock.now()
            let outcome = await attempt(number: number)
            let duration = session.clock.now() - attemptStart

            switch outcome {
            case .cancelled(let sent):
                let attempt = Attempt(number: number, request: sent, response: nil, failure: nil, duration: duration)
                await report(attempt, data: nil, decision: .cancelled)
                throw CancellationError()

            case .success(let sent, let response, let data):
                attempts.append(
                    Attempt(number: number, request: sent, response: response, failure: nil, duration: duration))
                await report(attempts[attempts.count - 1], data: data, decision: .succeeded)
                return Response(
                    data: data, httpResponse: response, request: sent, originalRequest: originalRequest,
                    attempts: attempts)

            case .failure(let reason, let sent, let response, let data):
                if let sent { lastSentRequest = sent }
                attempts.append(
                    Attempt(number: number, request: sent, response: response, failure: reason, duration: duration))
                let error = ReboundError(
                    reason: reason, originalRequest: originalRequest, lastRequest: lastSentRequest,
                    response: response, data: data, attempts: attempts)
                // A non-retryable failure (an open breaker, say) is not offered to the retriers at all.
                let result: RetryResult
                if reason.isNonRetryable {
                    result = .doNotRetry
                } else {
                    let retryRequest = RetryRequest(
                        requestID: requestID, label: label, originalRequest: originalRequest, lastRequest: sent,
                        response: response, data: data, attempts: attempts)
                    result = await retryResult(for: retryRequest, dueTo: error)
                }
                // A retrier may take its time; a request cancelled meanwhile ends as cancelled, whatever it answered.
                if Task.isCancelled {
                    await report(attempts[attempts.count - 1], data: data, decision: .cancelled)
                    throw CancellationError()
                }

                switch result {
                case .doNotRetry:
                    await report(attempts[attempts.count - 1], data: data, decision: .failed(error))
                    throw error
                case .doNotRetryWithError(let retrierError):
                    let aborted = ReboundError(
                        reason: .retryAborted(error: retrierError, original: reason),
                        originalRequest: originalRequest, lastRequest: lastSentRequest, response: response,
                        data: data, attempts: attempts)
                    await report(attempts[attempts.count - 1], data: data, decision: .failed(aborted))
                    throw aborted
                case .retry, .retryWithDelay:
                    let delay = result.delay ?? .zero
                    attempts[attempts.count - 1].retryDelay = delay
                    await report(attempts[attempts.count - 1], data: data, decision: .retry(after: delay))
                    if delay > .zero {
                        do {
                            try await session.clock.sleep(delay)
                        } catch {
                            // Clocks throw from `sleep` only when the sleeping task is cancelled.
                            throw CancellationError()
                        }
                    }
                }
            }
        }
    }

    /// Tells the chain's observers how an attempt ended; free when the chain has none.
    private func report(_ attempt: Attempt, data: Data?, decision: AttemptOutcome.Decision) async {
        guard !roles.observers.isEmpty else { return }
        let outcome = AttemptOutcome(
            requestID: requestID, label: label, originalRequest: originalRequest, attempt: attempt, data: data,
            elapsed: session.clock.now() - start, decision: decision)
        for observer in roles.observers {
            await observer.attemptDidFinish(outcome)
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

    /// Runs the session's adapters, then the request's, on the original request.
    private func adapt(context: RequestContext) async throws -> URLRequest {
        var request = originalRequest
        if let interceptor = session.interceptor {
            request = try await interceptor.adapt(request, context: context)
        }
        if let requestInterceptor {
            request = try await requestInterceptor.adapt(request, context: context)
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
