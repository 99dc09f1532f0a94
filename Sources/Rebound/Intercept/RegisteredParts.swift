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
    /// Settles `attempt` of request `requestID`, if this part let it through; `roles` are the request's registrations,
    /// which hold the permits a breaker gave; `outcome` builds the attempt's ``AttemptOutcome``, for a part that needs
    /// more than the attempt (the same instance for every part).
    func settle(_ attempt: Attempt, of requestID: UUID, roles: RegisteredRoles, outcome: () -> AttemptOutcome)
    /// Forgets whatever it keeps for the request that ended; not called for a request that succeeded at its first
    /// attempt, so a part may keep something for a request only once it granted it a retry.
    func requestEnded(_ requestID: UUID)
}

/// A part that admits an attempt under its host's key in `adapt`, and admits it again under the host it is sent to when
/// a later adapter moved it: after the adapters and before sending, the session asks it about each attempt it admitted
/// (``RegisteredRoles/admitted(by:attempt:under:at:)``), so that what it draws or counts is the sent host's, whatever
/// the adapters' order. A refusal that needs no I/O still comes first, in `adapt`.
protocol HostAdmission: AnyObject, Sendable {
    /// The key the part admits `request` under; `nil` for a request it lets through untouched.
    func admissionKey(for request: URLRequest) -> String?
    /// Gives back, uncounted, what the part took when it admitted `context`'s attempt under `admitted`, and admits the
    /// attempt under `key` instead, waiting or throwing as its `adapt` would; with no key (a host the part lets through
    /// untouched), only gives back.
    func readmit(_ context: RequestContext, from admitted: String, to key: String?) async throws
}

/// The observers and gates an ``Interceptor`` was given, in one box that registers as a whole.
final class RoleGroup: Sendable {
    let roles: ChainRoles

    init(_ roles: ChainRoles) {
        self.roles = roles
    }
}

// What a request's registrations hold for the parts, besides the registrations themselves.
extension RegisteredRoles {
    /// A permit a breaker gave an attempt it let through, held with the request until the attempt is settled: the
    /// breaker keeps nothing for an attempt in flight, and a permit of a request that ended goes with it.
    struct HeldPermit: Sendable {
        let holder: ObjectIdentifier
        let attempt: Int
        let permit: CircuitBreakerMachine.Permit

        /// Whether this is the permit `holder` gave `attempt`.
        func isFor(_ holder: ObjectIdentifier, attempt: Int) -> Bool {
            self.holder == holder && self.attempt == attempt
        }
    }

    /// A credential a scope (an ``AuthenticationInterceptor``) applied to an attempt, which a move of that attempt to
    /// another origin takes off again, whatever credential the scope holds by then.
    struct AppliedCredential: Sendable {
        let scope: ObjectIdentifier
        let attempt: Int
        let credential: any Sendable

        /// The scope among `scopes` that applied the credential, if it is one of them.
        func scope(among scopes: [any CredentialScope]) -> (any CredentialScope)? {
            scopes.first { ObjectIdentifier($0) == scope }
        }
    }

    /// What a part in shadow mode no longer sees of the request after a refusal it would have made: the request from
    /// then on (`attempt` is `nil`), or one hedge. `part` is the part's identity in shadow mode: the breaker, or the
    /// registry whose breaker it is (enforced, a refusal by any of its breakers would end the request).
    struct Shadowed: Sendable {
        let part: ObjectIdentifier
        let attempt: Int?
    }

    /// An attempt a part admitted under a host's key, as the part saw it at `url`, before the session sends it.
    struct Admission: Sendable {
        let part: any HostAdmission
        let attempt: Int
        let key: String
        let url: URL?
    }

    /// What the parts and the observers hear of an attempt the session settles.
    struct Settlement {
        /// The parts that settle their own attempts, in the order they registered: a snapshot, which registrations
        /// made later do not change, and reading it allocates nothing.
        let accountants: InlineList<any AttemptAccountant>
        /// Whether any observer registered so far.
        let hasObservers: Bool
        /// The refusals of parts in shadow mode not told yet, to tell with the attempt's outcome.
        let untold: ArraySlice<ShadowRefusal>
    }
}
