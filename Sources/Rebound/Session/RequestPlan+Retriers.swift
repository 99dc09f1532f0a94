import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// Asking the retriers about a failed attempt.
extension RequestPlan {
    /// Asks the retriers about `question`, racing the time left; `nil` when the time ran out or the task was cancelled
    /// first.
    @inline(never)
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
        // Out of line, so that a chain without registered retriers never makes the loop's frame.
        if let retriers = registered?.retriers, !retriers.isEmpty {
            return await retryResult(asking: retriers, for: request, dueTo: error)
        }
        return await chain?.retry(request, dueTo: error) ?? .doNotRetry
    }

    /// Asks `retriers`, then the chain; the first answer other than `doNotRetry` wins.
    @inline(never)
    func retryResult(
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
