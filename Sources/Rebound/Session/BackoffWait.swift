/// A request's backoff sleep that a gate which granted the retry can end early: a circuit breaker that opens while the
/// request waits ends the wait at once with its error, so that no caller sleeps a backoff only to be refused.
///
/// One per request a breaker let through, made by the request's run when its retriers are first asked (a request
/// that no breaker let through never makes one). A breaker that grants a retry keeps it until the request's next
/// attempt, its end, or the breaker's opening, whichever comes first.
///
/// A wait slept to its end cannot be ended any more: the request is on its way to its retry, which the breaker admitted
/// when the wait ended (see ``CircuitBreaker/admitRetry(_:dueTo:after:)``).
final class BackoffWait: Sendable {
    private enum State: Sendable {
        /// No wait under way yet: granted, not slept yet.
        case idle
        /// A request sleeps; the task that sleeps on the clock is attached once started (`nil` until then).
        case sleeping(CheckedContinuation<Ending, Never>, Task<Void, Never>?)
        /// Ended before the request slept it, or while it slept: the request ends with the error.
        case ended(any Error)
        /// Slept to its end: the request goes on to its retry.
        case slept
    }

    /// What ending a wait found: the request it woke, which the caller resumes outside its own lock, or a request
    /// that had already slept its wait to the end.
    enum EndResult {
        /// The wait is ended; `wake` resumes the sleeping request with the error, if one slept.
        case ended(wake: (() -> Void)?)
        /// The request had slept the whole wait and is on its way to its retry: nothing was ended.
        case alreadySlept
    }

    /// How a backoff sleep ended.
    enum Ending: Sendable {
        case slept
        case cancelled
        case ended(any Error)
    }

    private let state = Locked(State.idle)

    /// Ends the wait under way, or the next one, with `error`, unless the request has slept it to its end already.
    ///
    /// Decided under the wait's lock, which the caller may hold its own lock around: the request to wake is resumed
    /// by the result's `wake`, which the caller calls once it holds no lock.
    func end(with error: any Error) -> EndResult {
        state.withLock { state in
            switch state {
            case .sleeping(let continuation, let sleeper):
                state = .idle
                return .ended {
                    sleeper?.cancel()
                    continuation.resume(returning: .ended(error))
                }
            case .idle, .ended:
                state = .ended(error)
                return .ended(wake: nil)
            case .slept:
                return .alreadySlept
            }
        }
    }

    /// Sleeps `delay` on `clock` unless ended first or the calling task is cancelled.
    ///
    /// The wait is stored before the task that sleeps is started, so that a sleep which ends at once (a tiny delay, a
    /// busy machine, a test clock advanced meanwhile) always finds the request to wake: started first, its wake-up
    /// could come before the wait was stored and be lost, and the request would wait for ever.
    func sleep(for delay: Duration, on clock: SessionClock) async -> Ending {
        if case .ended(let error) = state.withLock({ $0 }) { return .ended(error) }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Ending, Never>) in
                let early: Ending? = state.withLock { state in
                    switch state {
                    case .ended(let error):
                        state = .idle
                        return .ended(error)
                    case .idle, .sleeping, .slept:
                        state = .sleeping(continuation, nil)
                        return nil
                    }
                }
                if let early {
                    continuation.resume(returning: early)
                    return
                }
                let sleeper = Spawn.task {
                    let slept: Bool
                    do {
                        try await clock.sleep(delay)
                        slept = true
                    } catch {
                        slept = false
                    }
                    self.wake(slept ? .slept : .cancelled)
                }
                // Attached for `end(with:)` and cancellation to cancel; already woken or ended meanwhile (only this
                // request sleeps on this wait, so the stored wait without a sleeper is this one): not needed.
                let attached: Bool = state.withLock { state in
                    guard case .sleeping(let stored, nil) = state else { return false }
                    state = .sleeping(stored, sleeper)
                    return true
                }
                if !attached {
                    sleeper.cancel()
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
        let resumed: (CheckedContinuation<Ending, Never>, Task<Void, Never>?)? = state.withLock { state in
            guard case .sleeping(let continuation, let sleeper) = state else { return nil }
            // Slept to its end, the wait can no longer be ended: the request is on its way to its retry.
            if case .slept = ending { state = .slept } else { state = .idle }
            return (continuation, sleeper)
        }
        guard let (continuation, sleeper) = resumed else { return }
        if case .cancelled = ending { sleeper?.cancel() }
        continuation.resume(returning: ending)
    }
}
