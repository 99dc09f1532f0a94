/// A request's backoff sleep that a gate which granted the retry can end early: a circuit breaker that opens while the
/// request waits ends the wait at once with its error, so that no caller sleeps a backoff only to be refused.
///
/// One per request whose retry a breaker granted, made then (a request whose chain has no breaker never makes one). The
/// breaker keeps it until the request's next attempt, its end, or the breaker's opening, whichever comes first.
final class BackoffWait: Sendable {
    private enum State: Sendable {
        case idle
        case sleeping(CheckedContinuation<Ending, Never>, Task<Void, Never>)
        case ended(any Error)
    }

    /// How a backoff sleep ended.
    enum Ending: Sendable {
        case slept
        case cancelled
        case ended(any Error)
    }

    private let state = Locked(State.idle)

    /// Ends the wait under way, or the next one, with `error`.
    func end(with error: any Error) {
        let resumed: CheckedContinuation<Ending, Never>? = state.withLock { state in
            switch state {
            case .sleeping(let continuation, let sleeper):
                sleeper.cancel()
                state = .idle
                return continuation
            case .idle, .ended:
                state = .ended(error)
                return nil
            }
        }
        resumed?.resume(returning: .ended(error))
    }

    /// Sleeps `delay` on `clock` unless ended first or the calling task is cancelled.
    func sleep(for delay: Duration, on clock: SessionClock) async -> Ending {
        if case .ended(let error) = state.withLock({ $0 }) { return .ended(error) }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Ending, Never>) in
                let sleeper = Task {
                    let slept: Bool
                    do {
                        try await clock.sleep(delay)
                        slept = true
                    } catch {
                        slept = false
                    }
                    self.wake(slept ? .slept : .cancelled)
                }
                let early: Ending? = state.withLock { state in
                    switch state {
                    case .ended(let error):
                        state = .idle
                        return .ended(error)
                    case .idle, .sleeping:
                        state = .sleeping(continuation, sleeper)
                        return nil
                    }
                }
                if let early {
                    sleeper.cancel()
                    continuation.resume(returning: early)
                } else if Task.isCancelled {
                    // Cancelled before the wait was stored: the handler found nothing to wake.
                    wake(.cancelled)
                }
            }
        } onCancel: {
            wake(.cancelled)
        }
    }

    /// Resumes the sleeping request, if it still sleeps.
    private func wake(_ ending: Ending) {
        let resumed: (CheckedContinuation<Ending, Never>, Task<Void, Never>)? = state.withLock { state in
            guard case .sleeping(let continuation, let sleeper) = state else { return nil }
            state = .idle
            return (continuation, sleeper)
        }
        guard let (continuation, sleeper) = resumed else { return }
        if case .cancelled = ending { sleeper.cancel() }
        continuation.resume(returning: ending)
    }
}
