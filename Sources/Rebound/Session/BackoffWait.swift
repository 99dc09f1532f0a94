/// A request's backoff sleeps, which a gate that granted the retry can end early: a circuit breaker that opens while the
/// request waits ends the wait at once with its error, so that no caller sleeps a backoff only to be refused.
///
/// One per request a breaker let through, made by the request's machine when its retriers are first asked (a request
/// that no breaker let through never makes one), and slept once per retry. The sleeps are numbered: a gate that grants
/// a retry keeps the wait with the number of the sleep it granted (``nextSleep``), and can end that sleep only, before
/// it begins or while it lasts. A sleep slept to its end cannot be ended any more: the request is on its way to its
/// retry, which the breaker admitted when the sleep ended (see ``CircuitBreaker/admitRetry(_:dueTo:after:)``); and a
/// grant whose sleep is over ends nothing of a later retry's.
final class BackoffWait: Sendable {
    private enum Phase: Sendable {
        /// No sleep under way: before the first, or after a sleep its request's cancellation woke.
        case idle
        /// The request sleeps; the task that sleeps on the clock is attached once started (`nil` until then).
        case sleeping(CheckedContinuation<Ending, Never>, Task<Void, Never>?)
        /// Ended, before the request slept or while it slept: the request ends with the error.
        case ended(any Error)
        /// The last sleep was slept to its end: the request goes on to its retry.
        case slept
    }

    private struct State: Sendable {
        var phase = Phase.idle
        /// How many sleeps the request has begun: the number of the sleep under way or last slept.
        var begun = 0
    }

    /// What ending a granted sleep found.
    enum EndResult {
        /// The sleep is ended; `wake` resumes the sleeping request with the error, if it slept.
        case ended(wake: (() -> Void)?)
        /// The request slept the whole sleep and is on its way to its retry: nothing was ended.
        case alreadySlept
        /// Nothing of this grant's is left to end: its sleep was ended already (by another gate that granted the same
        /// retry), or it is over and a later retry was granted or is slept.
        case passed
    }

    /// How a backoff sleep ended.
    enum Ending: Sendable {
        case slept
        case cancelled
        case ended(any Error)
    }

    private let state = Locked(State())

    /// The number of the sleep a retry granted now is slept in.
    var nextSleep: Int { state.withLock { $0.begun + 1 } }

    /// Whether the request slept sleep `number` to its end and has not begun another.
    func hasSlept(_ number: Int) -> Bool {
        state.withLock { state in
            guard case .slept = state.phase else { return false }
            return state.begun == number
        }
    }

    /// Ends sleep `number` with `error`: under way, or before it begins; unless the request slept it to its end already
    /// or it is over.
    ///
    /// Decided under the wait's lock, which the caller may hold its own lock around: the request to wake is resumed
    /// by the result's `wake`, which the caller calls once it holds no lock.
    func end(with error: any Error, sleep number: Int) -> EndResult {
        state.withLock { state in
            switch state.phase {
            case .sleeping(let continuation, let sleeper):
                guard state.begun == number else { return .passed }
                state.phase = .ended(error)
                return .ended {
                    sleeper?.cancel()
                    continuation.resume(returning: .ended(error))
                }
            case .slept where state.begun == number:
                return .alreadySlept
            case .ended:
                // Ended already (by another gate that granted the same retry): the first error stays.
                return state.begun + 1 == number ? .ended(wake: nil) : .passed
            case .idle, .slept:
                guard state.begun + 1 == number else { return .passed }
                state.phase = .ended(error)
                return .ended(wake: nil)
            }
        }
    }

    /// What ``end(with:sleep:)`` would find of sleep `number` now, without ending anything (its wake-up is `nil`): what a
    /// breaker in shadow mode asks when it opens.
    func probe(sleep number: Int) -> EndResult {
        state.withLock { state in
            switch state.phase {
            case .sleeping: state.begun == number ? .ended(wake: nil) : .passed
            case .slept where state.begun == number: .alreadySlept
            case .ended, .idle, .slept: state.begun + 1 == number ? .ended(wake: nil) : .passed
            }
        }
    }

    /// Sleeps `delay` on `clock` unless ended first or the calling task is cancelled.
    ///
    /// The wait is stored before the task that sleeps is started, so that a sleep which ends at once (a tiny delay, a
    /// busy machine, a test clock advanced meanwhile) always finds the request to wake: started first, its wake-up
    /// could come before the wait was stored and be lost, and the request would wait for ever.
    func sleep(for delay: Duration, on clock: SessionClock) async -> Ending {
        if case .ended(let error) = state.withLock({ $0.phase }) { return .ended(error) }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Ending, Never>) in
                let early: Ending? = state.withLock { state in
                    switch state.phase {
                    case .ended(let error):
                        return .ended(error)
                    case .idle, .sleeping, .slept:
                        state.phase = .sleeping(continuation, nil)
                        state.begun += 1
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
                    guard case .sleeping(let stored, nil) = state.phase else { return false }
                    state.phase = .sleeping(stored, sleeper)
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
            guard case .sleeping(let continuation, let sleeper) = state.phase else { return nil }
            // Slept to its end, the sleep can no longer be ended: the request is on its way to its retry.
            if case .slept = ending { state.phase = .slept } else { state.phase = .idle }
            return (continuation, sleeper)
        }
        guard let (continuation, sleeper) = resumed else { return }
        if case .cancelled = ending { sleeper?.cancel() }
        continuation.resume(returning: ending)
    }
}
