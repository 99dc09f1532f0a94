import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A part that is asked about retries once it registered through a request's context, before the chain's retriers.
protocol RegisteredRetrier: AnyObject, Sendable {
    /// Answers whether to retry, as a ``RequestRetrier`` would.
    func retry(_ request: RetryRequest, dueTo error: ReboundError) async -> RetryResult
}

/// A part that let an attempt through and must settle it when the attempt ends (a breaker's permit): told at once,
/// synchronously, after the decision and before the observers, without the observers' machinery; also the request's
/// gate unless the lists hold it as one.
protocol AttemptAccountant: RetryGate, HedgeGate, AnyObject, Sendable {
    /// Settles `attempt` of request `requestID`, if this part let it through; `ledger` is the request's, which holds
    /// the permits a breaker gave and what parts in shadow mode no longer see; `outcome` builds the attempt's
    /// ``AttemptOutcome``, for a part that needs more than the attempt (the same instance for every part).
    func settle(_ attempt: Attempt, of requestID: UUID, ledger: RequestLedger, outcome: () -> AttemptOutcome)
    /// Forgets whatever it keeps for the request that ended; not called for a request that succeeded at its first
    /// attempt, so a part may keep something for a request only once it granted it a retry.
    func requestEnded(_ requestID: UUID)
    /// Settles `attempt` now if the part gave it a trial (a half-open breaker's), as the retry's gates would later:
    /// asked before a retrier waits for something that may need the same host (a credential's refresh), which the
    /// trial's place is then free for. `outcome` builds the attempt's ``AttemptOutcome``, as for ``settle``.
    func settleTrial(_ attempt: Attempt, of requestID: UUID, ledger: RequestLedger, outcome: () -> AttemptOutcome)
}

extension AttemptAccountant {
    func settleTrial(_ attempt: Attempt, of requestID: UUID, ledger: RequestLedger, outcome: () -> AttemptOutcome) {}
}

/// A part that admits an attempt under its host's key in `adapt`, and admits it again under the host it is sent to when
/// a later adapter moved it: after the adapters and before sending, the session asks it about each attempt it admitted
/// (``RequestLedger/admitted(by:attempt:under:at:)``), so that what it draws or counts is the sent host's, whatever
/// the adapters' order. A refusal that needs no I/O still comes first, in `adapt`.
protocol HostAdmission: AnyObject, Sendable {
    /// The key the part admits `request` under; `nil` for a request it lets through untouched.
    func admissionKey(for request: URLRequest) -> String?
    /// Gives back, uncounted, what the part took when it admitted `context`'s attempt under `admitted`, and admits the
    /// attempt under `key` instead, waiting or throwing as its `adapt` would; with no key (a host the part lets through
    /// untouched), only gives back.
    func readmit(_ context: RequestContext, from admitted: String, to key: String?) async throws
    /// `context`'s attempt, which the part admitted, got its answer (`response`, after any redirects, or a failure
    /// without one): a part that holds something only while the attempt is in flight gives it back now, before the
    /// retriers decide what follows. The attempt is settled later, as every attempt is.
    func attemptEnded(_ context: RequestContext, response: ResponseHead?)
    /// Whether the part holds something for an attempt only while it is in flight, to give back in
    /// ``attemptEnded(_:response:)``.
    var holdsWhileInFlight: Bool { get }
    /// Gives back, uncounted, what the part took when it admitted `context`'s attempt under `key` that another request
    /// may need while the attempt waits in a later adapter (a limiter's place, a breaker's trial: the request a
    /// credential's refresh sends to the same host); returns whether it gave anything back, which
    /// ``admitAgain(_:under:admittedUnder:)`` then takes again.
    func giveWay(_ context: RequestContext, admittedUnder key: String) -> Bool
    /// Takes again, under `key` (the host the attempt goes to now), what the part gave back when `context`'s attempt
    /// gave way under `admitted`, waiting or throwing as its `adapt` would (a limiter's queue whatever its size, under
    /// the same key).
    func admitAgain(_ context: RequestContext, under key: String, admittedUnder admitted: String) async throws
}

extension HostAdmission {
    func attemptEnded(_ context: RequestContext, response: ResponseHead?) {}
    var holdsWhileInFlight: Bool { false }
    func giveWay(_ context: RequestContext, admittedUnder key: String) -> Bool { false }
    func admitAgain(_ context: RequestContext, under key: String, admittedUnder admitted: String) async throws {}
}

/// The observers and gates an ``Interceptor`` was given, in one box that registers as a whole.
final class RoleGroup: Sendable {
    let roles: ChainRoles

    init(_ roles: ChainRoles) {
        self.roles = roles
    }
}

/// One attempt of one request: the key of what a part keeps for an attempt it let through until the attempt is
/// settled (a concurrency limiter's place, given back with the attempt's answer and settled with it).
struct AttemptKey: Hashable, Sendable {
    let requestID: UUID
    let attempt: Int
}
