import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What stays the same across the attempts of one request, in one box, so that the frames that carry a request's run
/// from await to await hold a reference instead of all of it.
///
/// What the request does not set for itself (its chain, validator, redirect handler, observers and gates) is read from
/// the session when used rather than copied here: most requests set none of it, and each existential copied into a
/// request's plan (the session's, or the caller's empty parameters) is a call through a value witness, run cold
/// between two round trips (Docs/Performance.md, "What a request costs, and why").
final class RequestPlan: Sendable {
    let session: Session
    /// The request as the caller gave it (see ``OriginalRequest``).
    let original: OriginalRequest
    let label: String?
    /// What the request brought of its own (chain, validator, redirect handler, observers and gates); `nil` for
    /// none, the common case: one reference, which the plan stores and releases without a call through a value
    /// witness, where four optional existentials cost four to copy and four to destroy.
    private let own: RequestParts?
    /// The roles parts register through the contexts they are handed; `nil` without a chain, which has no parts.
    let registered: RegisteredRoles?
    let deadline: Duration?
    let attemptTimeout: Duration?
    /// Whether attempts race a time limit: with a deadline or an attempt timeout.
    let isRaced: Bool
    /// The hedging settings in effect, if they ever let a second attempt be in flight; `nil` otherwise.
    let hedging: Hedging?
    let requestID = RequestIDs.next()

    /// The plan of a request with nothing of its own besides its label and time limits, the common case: nothing the
    /// caller passed as an existential is copied (each such copy is a call through a value witness, run cold between
    /// two round trips). Out of line: its temporaries would otherwise stay in the frame of `Session.send` for the whole
    /// request.
    @inline(never)
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
    @inline(never)
    convenience init(
        session: Session, original: consuming OriginalRequest, label: String?,
        requestInterceptor: (any RequestInterceptor)?, requestRoles: ChainRoles?, validator: (any ResponseValidator)?,
        deadline: Duration?, attemptTimeout: Duration?, redirectHandler: (any RedirectHandler)?, hedging: Hedging?
    ) {
        let chain: ChainBox? =
            if let requestInterceptor {
                session.chain.map { ChainBox(SessionThenRequest(session: $0, request: requestInterceptor)) }
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
        self.isRaced = deadline != nil || attemptTimeout != nil
        self.hedging = hedging.flatMap { $0.hedges ? $0 : nil }
        let hasChain = own?.chain != nil || session.chain != nil
        self.registered =
            hasChain ? RegisteredRoles(besides: own?.roles ?? session.roles) : nil
    }

    /// The session's interceptor followed by the request's, as one: each attempt makes one call to adapt and at most
    /// one to retry, whose frames hold one interceptor rather than two.
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

/// A session's interceptor followed by a request's: adapts with the session's, then the request's; asks the session's
/// retriers, then the request's, and the first answer other than `doNotRetry` wins.
///
/// Adapts in place when both halves do (``AdaptsInPlace``): the session's half is read from its chain box, where it was
/// found once for the session, so a request with an interceptor of its own looks at one type only, its own.
private struct SessionThenRequest: RequestInterceptor, AdaptsInPlace, RetriesMethods {
    let session: any RequestInterceptor
    let request: any RequestInterceptor
    let adaptInPlace: Adapter.ModifyNowHandler?

    init(session: ChainBox, request: any RequestInterceptor) {
        self.session = session.interceptor
        self.request = request
        self.adaptInPlace =
            if let first = session.adaptInPlace, let second = (request as? any AdaptsInPlace)?.adaptInPlace {
                { request, context in
                    try first(&request, context)
                    try second(&request, context)
                }
            } else {
                nil
            }
    }

    func adapt(_ urlRequest: consuming URLRequest, context: RequestContext) async throws -> URLRequest {
        let adapted = try await session.adapt(urlRequest, context: context)
        return try await request.adapt(adapted, context: context)
    }

    func retry(_ retryRequest: RetryRequest, dueTo error: ReboundError) async -> RetryResult {
        let result = await session.retry(retryRequest, dueTo: error)
        guard case .doNotRetry = result else { return result }
        return await request.retry(retryRequest, dueTo: error)
    }

    /// The methods either chain's retry policies retry.
    var retriedMethods: Set<HTTPMethod>? { Self.union(of: [session, request]) }
}

/// A chain held by reference, called through its methods: a request calls the existential in place instead of copying
/// it (a copy is a call to an outlined function per attempt, cold between two round trips).
final class ChainBox: Sendable {
    let interceptor: any RequestInterceptor
    /// What adapts in place when the chain never suspends (an ``Interceptor`` of such parts: see ``AdaptsInPlace``),
    /// called without an asynchronous call; `nil` otherwise.
    let adaptInPlace: Adapter.ModifyNowHandler?

    init(_ interceptor: any RequestInterceptor) {
        self.interceptor = interceptor
        self.adaptInPlace = (interceptor as? any AdaptsInPlace)?.adaptInPlace
    }

    /// The session's chain followed by a request's own, whose in-place adaptation is known without a look at its type.
    fileprivate init(_ chain: SessionThenRequest) {
        self.interceptor = chain
        self.adaptInPlace = chain.adaptInPlace
    }

    func adapt(_ request: consuming URLRequest, context: RequestContext) async throws -> URLRequest {
        try await interceptor.adapt(consume request, context: context)
    }

    func retry(_ request: RetryRequest, dueTo error: ReboundError) async -> RetryResult {
        await interceptor.retry(request, dueTo: error)
    }

    /// The methods the chain's retry policies retry, `nil` when none says (see ``RetriesMethods``): read before a
    /// hedge only.
    var retriedMethods: Set<HTTPMethod>? { (interceptor as? any RetriesMethods)?.retriedMethods }
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
