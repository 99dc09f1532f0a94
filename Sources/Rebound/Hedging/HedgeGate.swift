import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A part of the library's own that is asked before the session starts a hedge: a budget spends from the host's
/// retries, a breaker refuses unless it is closed, a throttle draws as for a request, and a part that holds room for
/// attempts (a concurrency limiter's places, a pacer's quota, a rate limiter's tokens) refuses unless it has room now.
///
/// Internal: the parts register for it through the request's context from `adapt`, as they do for their other roles,
/// so that whatever forwards `adapt` keeps it; a gate of the user's own is asked about retries only.
protocol HedgeGate: AnyObject, Sendable {
    /// Returns `nil` to let attempt `attempt` of request `requestID` start as a hedge, or why it must not; `request` is
    /// what the hedge is judged as (`HedgeRound.Hedge.judged`, at the endpoint a group picks), `failed`
    /// the failure whose retry the hedge is, when a failure the retriers would retry starts it (a budget charges a
    /// hedge after a 401 no more than such a retry), `roles` the request's registrations (a part that spends for a
    /// hedge registers there to hear whether it was sent).
    func admitHedge(
        _ request: URLRequest, of requestID: UUID, attempt: Int, after failed: Attempt?, roles: RegisteredRoles
    ) -> (any Error)?
}

extension AttemptAccountant {
    /// A part that settles its attempts lets every hedge start unless it says otherwise.
    func admitHedge(
        _ request: URLRequest, of requestID: UUID, attempt: Int, after failed: Attempt?, roles: RegisteredRoles
    ) -> (any Error)? {
        nil
    }
}

/// Why a hedge was not sent: after its adapters ran, its request may not be sent twice at once (a POST without an
/// idempotency key), though the request the round judged it by could be; the round goes on as though it had not
/// started.
struct HedgeNotRepeatable: NonRetryableError, CustomStringConvertible {
    var description: String { "the hedge's request, as adapted, may not be repeated" }
}
