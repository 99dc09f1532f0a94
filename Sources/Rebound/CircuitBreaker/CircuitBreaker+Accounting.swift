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
// (`admitHedge(_:of:attempt:roles:)`, beside the breaker's rule for retries).
extension CircuitBreaker: AttemptAccountant {
    func settle(_ attempt: Attempt, of requestID: UUID, ledger: RequestLedger, outcome: () -> AttemptOutcome) {
        finish(attempt, ledger: ledger, outcome: outcome)
    }

    func requestEnded(_ requestID: UUID) {
        forgetWait(of: requestID)
    }
}
