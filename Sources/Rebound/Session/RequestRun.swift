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
    let requestID = RequestIDs.next()

    private var attempts: [Attempt] = []
    private var lastSentRequest: URLRequest?

    init(
        session: Session, originalRequest: URLRequest, label: String?, requestInterceptor: (any RequestInterceptor)?,
        validator: ResponseValidator
    ) {
        self.session = session
        self.originalRequest = originalRequest
        self.label = label
        self.requestInterceptor = requestInterceptor
        self.validator = validator
    }

    /// What one attempt came to.
    private enum Outcome {
        case success(URLRequest, HTTPURLResponse, Data)
        case failure(ReboundError.Reason, sent: URLRequest?, response: HTTPURLResponse?, data: Data?)
    }

    mutating func execute() async throws -> Response {
        while true {
            if Task.isCancelled { throw CancellationError() }
            let number = attempts.count + 1
            let start = session.clock.now()
            let outcome = try await attempt(number: number)
            let duration = session.clock.now() - start

            switch outcome {
            case .success(let sent, let response, let data):
                attempts.append(
                    Attempt(number: number, request: sent, response: response, failure: nil, duration: duration))
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
                let retryRequest = RetryRequest(
                    requestID: requestID, label: label, originalRequest: originalRequest, lastRequest: sent,
                    response: response, data: data, attempts: attempts)
                let result = await retryResult(for: retryRequest, dueTo: error)
                // A retrier may take its time; a request cancelled meanwhile ends as cancelled, whatever it answered.
                if Task.isCancelled { throw CancellationError() }

                switch result {
                case .doNotRetry:
                    throw error
                case .doNotRetryWithError(let retrierError):
                    throw ReboundError(
                        reason: .retryAborted(error: retrierError, original: reason),
                        originalRequest: originalRequest, lastRequest: lastSentRequest, response: response,
                        data: data, attempts: attempts)
                case .retry, .retryWithDelay:
                    let delay = result.delay ?? .zero
                    attempts[attempts.count - 1].retryDelay = delay
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

    /// Adapts, sends and validates once; throws only `CancellationError`.
    private func attempt(number: Int) async throws -> Outcome {
        let context = RequestContext(requestID: requestID, attempt: number, label: label)
        let adapted: URLRequest
        do {
            adapted = try await adapt(context: context)
        } catch {
            if error is CancellationError || Task.isCancelled { throw CancellationError() }
            return .failure(.adaptationFailed(error: error), sent: nil, response: nil, data: nil)
        }

        let data: Data
        let response: HTTPURLResponse
        do {
            (data, response) = try await session.transport.send(adapted)
        } catch {
            if error is CancellationError || Task.isCancelled { throw CancellationError() }
            return .failure(.transportFailed(error: error), sent: adapted, response: nil, data: nil)
        }

        if let reason = validator.validate(response, data: data) {
            return .failure(reason, sent: adapted, response: response, data: data)
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
