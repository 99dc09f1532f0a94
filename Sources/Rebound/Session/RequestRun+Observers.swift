import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// What the observers are told: each attempt's outcome, and the request's end.
extension RequestRun {
    /// Whether any observer is to be told: one the session or the request was given, or one that registered so far.
    @inline(never)
    mutating func hasObservers() -> Bool {
        plan.listsObservers || plan.registered?.hasObservers == true
    }

    /// Has the parts that let the last recorded attempt through settle it (``AttemptAccountant``), at once and in
    /// order, before any observer hears of it; returns whether any observer is to be told of it (one lock for both).
    @inline(never)
    mutating func settle(_ result: AttemptResult, decision: AttemptDecision) -> Bool {
        guard let roles = plan.registered else { return plan.listsObservers }
        let (accountants, registeredObservers) = roles.accountantsAndObservers
        if !accountants.isEmpty, let attempt = attempts.last {
            // Built once, and only for a part that asks for it (a breaker with a `classify` of its own).
            var built: AttemptOutcome?
            let requestID = plan.requestID
            for part in accountants {
                part.settle(attempt, of: requestID, roles: roles) {
                    if let built { return built }
                    let outcome = outcome(of: attempt, data: result.data, decision: decision)
                    built = outcome
                    return outcome
                }
            }
        }
        return registeredObservers || plan.listsObservers
    }

    /// Tells the parts that settle their attempts that the request ended. (Not called for a success at the first
    /// attempt: a part keeps something for a request only once it granted it a retry.)
    @inline(never)
    mutating func endAccounts() {
        guard let accountants = plan.registered?.accountantsAndObservers.accountants, !accountants.isEmpty else {
            return
        }
        for part in accountants { part.requestEnded(plan.requestID) }
    }

    /// Tells the observers how the last recorded attempt ended.
    @inline(never)
    mutating func report(_ result: AttemptResult, decision: AttemptDecision) async {
        let registered = plan.registeredObservers
        guard let outcome = outcome(data: result.data, decision: decision) else { return }
        for observer in plan.roles.observers {
            await observer.attemptDidFinish(outcome)
        }
        for registration in registered {
            guard case .observer(let observer) = registration.entry else { continue }
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
        for registration in registered {
            guard case .observer(let observer) = registration.entry else { continue }
            await observer.requestDidFinish(outcome)
        }
    }

    /// What the observers are told of the request's end.
    @inline(never)
    mutating func requestOutcome(_ decision: AttemptDecision) -> RequestOutcome {
        RequestOutcome(
            requestID: plan.requestID, label: plan.label, original: plan.original, attempts: attempts,
            elapsed: plan.session.clock.now() - start, decision: decision, error: decision == .failed ? failure : nil)
    }

    /// What the observers are told of the last recorded attempt.
    @inline(never)
    mutating func outcome(data: Data?, decision: AttemptDecision) -> AttemptOutcome? {
        guard let attempt = attempts.last else { return nil }
        return outcome(of: attempt, data: data, decision: decision)
    }

    /// What the observers are told of `attempt`, the last recorded.
    @inline(never)
    mutating func outcome(of attempt: Attempt, data: Data?, decision: AttemptDecision) -> AttemptOutcome {
        AttemptOutcome(
            requestID: plan.requestID, label: plan.label, original: plan.original, attempt: attempt,
            data: data, elapsed: plan.session.clock.now() - start, decision: decision,
            error: decision == .failed ? failure : nil)
    }
}
