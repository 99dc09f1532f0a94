import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension CircuitBreaker: AdaptsInPlace {
    /// Admits the attempt as ``adapt(_:context:)`` does, leaving the request unchanged.
    var adaptInPlace: Adapter.ModifyNowHandler? {
        { [self] _, context in try admit(context) }
    }
}

// The session tells a breaker how the attempts it let through end directly, without the observers' machinery: it
// settles each at once and forgets the request's wait at its end. It is asked before a hedge as well
// (`admitHedge(_:of:attempt:after:roles:)`, beside the breaker's rule for retries).
extension CircuitBreaker: AttemptAccountant {
    func settle(_ attempt: Attempt, of requestID: UUID, ledger: RequestLedger, outcome: () -> AttemptOutcome) {
        finish(attempt, ledger: ledger, outcome: outcome)
    }

    func requestEnded(_ requestID: UUID) {
        forgetWait(of: requestID)
    }

    /// Counts `attempt` now if this breaker gave it a trial that tells it something: its verdict is known, and the
    /// trial's place goes to the next call, the request a credential's refresh sends to the same host included. A trial
    /// that told it nothing (a `classify` that ignores a 401) stays held, so that the retry is asked for as after any
    /// such trial, and may take a trial again (see ``admitRetry(_:dueTo:after:)``).
    func settleTrial(_ attempt: Attempt, of requestID: UUID, ledger: RequestLedger, outcome: () -> AttemptOutcome) {
        guard ledger.holdsPermit(of: self, for: attempt.number, trialOnly: true) else { return }
        let verdict = configuration.verdict(for: attempt, outcome: outcome)
        guard verdict != .ignored else { return }
        finish(attempt, ledger: ledger, verdict: verdict, outcome: outcome)
    }
}

// A breaker's trial is noted as an admission, so that an attempt that waits in a later adapter (for a credential's
// refresh) gives the trial up meanwhile: the refresh's own request to the same host may need it.
extension CircuitBreaker: HostAdmission {
    /// The breaker's own key (empty without one): it admits every request under it, whatever its host.
    func admissionKey(for request: URLRequest) -> String? {
        key ?? ""
    }

    /// Gives back the permit the attempt holds, if any, and lets the attempt through again, or throws
    /// ``CircuitBreakerOpenError``.
    func readmit(_ context: RequestContext, from admitted: String, to key: String?) async throws {
        giveBack(context)
        if key != nil { try admit(context) }
    }

    /// Gives back, uncounted, the trial this breaker gave `context`'s attempt, if it holds one, while the attempt waits
    /// in a later adapter.
    func giveWay(_ context: RequestContext, admittedUnder key: String) -> Bool {
        giveBack(context, trialOnly: true)
    }

    /// Lets `context`'s attempt, which gave its trial way, through again, or throws ``CircuitBreakerOpenError``.
    func admitAgain(_ context: RequestContext, under key: String, admittedUnder admitted: String) async throws {
        try admit(context)
    }
}
