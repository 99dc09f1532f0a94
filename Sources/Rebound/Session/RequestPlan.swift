import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What stays the same across a request's attempts: its settings, fixed when it starts, the parts it brought of its
/// own, and the registrations its parts make through their contexts. Shared by the request's machine, its driver and
/// every attempt, hedges too.
///
/// What the request does not set for itself (its chain, validator, redirect handler, observers and gates) is read from
/// the session when used rather than copied here: most requests set none of it.
final class RequestPlan: Sendable {
    let session: Session
    /// The request as the caller gave it (see ``OriginalRequest``).
    let original: OriginalRequest
    let label: String?
    /// What the request brought of its own (chain, validator, redirect handler, observers and gates); `nil` for
    /// none, the common case.
    private let own: RequestParts?
    /// The roles parts register through the contexts they are handed; `nil` without a chain, which has no parts.
    let registered: RegisteredRoles?
    let deadline: Duration?
    let attemptTimeout: Duration?
    /// The hedging settings in effect, if they ever let a second attempt be in flight; `nil` otherwise.
    let hedging: Hedging?
    let requestID = RequestIDs.next()

    /// The plan of a request with nothing of its own besides its label and time limits, the common case.
    convenience init(
        session: Session, original: consuming OriginalRequest, label: String?, deadline: Duration?,
        attemptTimeout: Duration?, hedging: Hedging?
    ) {
        self.init(
            session: session, original: consume original, label: label, own: nil, deadline: deadline,
            attemptTimeout: attemptTimeout, hedging: hedging)
    }

    /// The plan of a request with parts of its own: each of `requestInterceptor`, `requestRoles`, `validator` and
    /// `redirectHandler` is the request's own, `nil` for the session's.
    convenience init(
        session: Session, original: consuming OriginalRequest, label: String?,
        requestInterceptor: (any RequestInterceptor)?, requestRoles: ChainRoles?, validator: (any ResponseValidator)?,
        deadline: Duration?, attemptTimeout: Duration?, redirectHandler: (any RedirectHandler)?, hedging: Hedging?
    ) {
        let chain: ChainBox? =
            if let requestInterceptor {
                session.chain.map { ChainBox(session: $0, thenRequest: requestInterceptor) }
                    ?? ChainBox(requestInterceptor)
            } else {
                nil
            }
        let own = RequestParts(
            chain: chain, validator: validator, redirectHandler: redirectHandler,
            roles: requestRoles.map { session.roles.followed(by: $0) })
        self.init(
            session: session, original: consume original, label: label, own: own, deadline: deadline,
            attemptTimeout: attemptTimeout, hedging: hedging)
    }

    /// Stores the request's own parts (`nil` for the session's) and makes its registrations if it has a chain.
    private init(
        session: Session, original: consuming OriginalRequest, label: String?, own: RequestParts?,
        deadline: Duration?, attemptTimeout: Duration?, hedging: Hedging?
    ) {
        self.session = session
        self.original = consume original
        self.label = label
        self.own = own
        self.deadline = deadline
        self.attemptTimeout = attemptTimeout
        self.hedging = hedging.flatMap { $0.hedges ? $0 : nil }
        let hasChain = own?.chain != nil || session.chain != nil
        // Parts that would wait (a pacer) read the time left before the deadline from the registrations.
        self.registered =
            hasChain
            ? RegisteredRoles(
                besides: own?.roles ?? session.roles,
                deadline: deadline.map { (session.clock.now() + $0, session.clock.now) }) : nil
    }

    /// The session's interceptor followed by the request's, as one: each attempt makes one call to adapt and at most
    /// one to retry.
    var chain: ChainBox? { own?.chain ?? session.chain }

    /// The redirect handler in effect: the request's, or the session's.
    var redirectHandler: any RedirectHandler { own?.redirectHandler ?? session.redirectHandler }

    /// The observers and gates the session and the request were given, in that order.
    var roles: ChainRoles { own?.roles ?? session.roles }

    /// Whether the session or the request was given any observer (read after every attempt, without copying the
    /// roles).
    var listsObservers: Bool {
        if let roles = own?.roles { return !roles.observers.isEmpty }
        return !session.roles.observers.isEmpty
    }

    /// What the validator in effect (the request's, or the session's) says of a response, called in place.
    func reason(for response: ResponseHead, data: Data, context: RequestContext) -> ReboundError.Reason? {
        if let own, let validation = own.validation { return validation.check(response, data, context) }
        return session.reason(for: response, data: data, context: context)
    }

    /// The request as the caller gave it, built anew each time when it is kept as parts.
    var originalRequest: URLRequest { original.request }

    /// The registrations that hold the observers parts registered so far, in order (told after the session's and
    /// the request's); none when no observer registered.
    var registeredObservers: RegisteredRoles.Registrations { registered?.withObservers ?? .none }

    /// The gates registered so far that the chain does not hold: asked after the chain's.
    var registeredGates: [any RetryGate] { registered?.gates ?? [] }
}

/// What a request brought of its own, each `nil` for the session's.
final class RequestParts: Sendable {
    /// The session's interceptor followed by the request's own, as one.
    let chain: ChainBox?
    /// The request's validator, resolved once (see `Validator.resolving(_:)`).
    let validation: Validator?
    let redirectHandler: (any RedirectHandler)?
    /// The session's observers and gates followed by the request's own.
    let roles: ChainRoles?

    init(
        chain: ChainBox?, validator: (any ResponseValidator)?, redirectHandler: (any RedirectHandler)?,
        roles: ChainRoles?
    ) {
        self.chain = chain
        self.validation = validator.map(Validator.resolving)
        self.redirectHandler = redirectHandler
        self.roles = roles
    }
}
