import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// After a failed attempt: ask the retriers, then decide what follows (a retry after its delay, or the error the
// request ends with).
extension RequestRun {
    /// Asks the retriers about a failed attempt and decides what follows.
    @inline(never)
    mutating func afterFailure(_ failed: AttemptResult) async -> AttemptDecision {
        let question = question(about: failed)
        // A hedged round asked already.
        if let answer = failed.answer { return decide(after: answer, for: question.request, dueTo: question.error) }
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
        } else if let retriers = plan.registered?.retriers, !retriers.isEmpty {
            // The chain is asked from this frame, not through `RequestPlan.retryResult(for:dueTo:)`: one frame level
            // less on the deepest path of a failed attempt keeps a request waiting in backoff in two task-allocator
            // slabs (Docs/Performance.md, section 4).
            result = await plan.retryResult(asking: retriers, for: question.request, dueTo: question.error)
        } else {
            result = await plan.chain?.retry(question.request, dueTo: question.error) ?? .doNotRetry
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
    @inline(never)
    mutating func question(about failed: AttemptResult) -> Question {
        guard case .failure(let reason) = failed.kind else { preconditionFailure("only failures are asked about") }
        let error = failure(reason, response: failed.response, data: failed.data)
        let request = RetryRequest(
            requestID: plan.requestID, label: plan.label, original: plan.original, lastRequest: failed.sent,
            responseHead: failed.response, data: failed.data, attempts: attempts,
            roles: plan.registered)
        return Question(request: request, error: error, isOffered: !reason.isNonRetryable)
    }

    /// Decides what follows the retriers' answer to a failed attempt: a retry after its delay, unless the deadline
    /// comes first or a gate denies it, or the failure the request ends with. Records the retry in the attempt.
    @inline(never)
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
        // Backoff never sleeps past the deadline: a delay that would end after it ends the request now.
        if let deadline = plan.deadline, plan.session.clock.now() + delay - start > deadline {
            return fail(with: deadlineExceeded(after: reason, response: error.responseHead, data: error.data))
        }
        for gate in plan.roles.gates + plan.registeredGates {
            if let denial = gate.admitRetry(request, dueTo: error, after: delay) {
                return fail(
                    with: failure(
                        .retryAborted(error: denial, original: reason), response: error.responseHead, data: error.data))
            }
        }
        attempts[attempts.count - 1].retryDelay = delay
        if let request = result.request { base = request }
        plan.registered?.keepBodyIfWaiting(error.data)
        return .retry(after: delay)
    }

    /// The error a request ends with when a gate that granted its retry ended the backoff (a breaker that opened):
    /// the gate's error beside the last attempt's failure, as if the gate had denied the retry.
    @inline(never)
    mutating func endedInBackoff(by error: any Error) -> ReboundError {
        guard let last = attempts.last, let reason = last.failure else {
            preconditionFailure("a retry follows a failure")
        }
        let body = plan.registered?.bodyBeforeBackoff
        _ = fail(with: failure(.retryAborted(error: error, original: reason), response: last.responseHead, data: body))
        return ending()
    }

    /// The decision when the deadline came while the retriers were deciding about `error`.
    @inline(never)
    mutating func decidedTooLate(_ error: ReboundError) -> AttemptDecision {
        fail(with: deadlineExceeded(after: error.reason, response: error.responseHead, data: error.data))
    }

    /// The decision after an attempt the deadline cut short.
    @inline(never)
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

    mutating func failure(_ reason: ReboundError.Reason, response: ResponseHead?, data: Data?)
        -> ReboundError
    {
        ReboundError(
            reason: reason, original: plan.original, lastRequest: lastSentRequest,
            responseHead: response, data: data, attempts: attempts)
    }

    /// The deadline error after `reason`.
    mutating func deadlineExceeded(
        after reason: ReboundError.Reason, response: ResponseHead? = nil, data: Data? = nil
    ) -> ReboundError {
        failure(.deadlineExceeded(deadline: plan.deadline ?? .zero, last: reason), response: response, data: data)
    }
}
