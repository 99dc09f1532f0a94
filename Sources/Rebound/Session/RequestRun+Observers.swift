import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// What the observers are told: each attempt's outcome, and the request's end.
extension RequestRun {
    /// Whether any observer is to be told: one the session or the request was given, or one that registered so far.
    @inline(never)
    mutating func hasObservers() -> Bool {
        !plan.roles.observers.isEmpty || plan.registered?.hasObservers == true
    }

    /// Tells the observers how the last recorded attempt ended.
    @inline(never)
    mutating func report(_ result: AttemptResult, decision: AttemptDecision) async {
        let registered = plan.registeredObservers
        guard let outcome = outcome(data: result.data, decision: decision) else { return }
        for observer in plan.roles.observers {
            await observer.attemptDidFinish(outcome)
        }
        for observer in registered {
            await observer.attemptDidFinish(outcome)
        }
    }

    /// Tells the observers how the request ended.
    @inline(never)
    mutating func finish(_ decision: AttemptDecision) async {
        let registered = plan.registeredObservers
        let outcome = requestOutcome(decision)
        for observer in plan.roles.observers {
            await observer.requestDidFinish(outcome)
        }
        for observer in registered {
            await observer.requestDidFinish(outcome)
        }
    }

    /// What the observers are told of the request's end.
    @inline(never)
    mutating func requestOutcome(_ decision: AttemptDecision) -> RequestOutcome {
        RequestOutcome(
            requestID: plan.requestID, label: plan.label, originalRequest: plan.originalRequest, attempts: attempts,
            elapsed: plan.session.clock.now() - start, decision: decision, error: decision == .failed ? failure : nil)
    }

    /// What the observers are told of the last recorded attempt.
    @inline(never)
    mutating func outcome(data: Data?, decision: AttemptDecision) -> AttemptOutcome? {
        guard let attempt = attempts.last else { return nil }
        return AttemptOutcome(
            requestID: plan.requestID, label: plan.label, originalRequest: plan.originalRequest, attempt: attempt,
            data: data, elapsed: plan.session.clock.now() - start, decision: decision,
            error: decision == .failed ? failure : nil)
    }
}
