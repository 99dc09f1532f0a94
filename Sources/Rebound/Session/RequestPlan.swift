import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What stays the same across the attempts of one request, in one box, so that the frames that carry a request's run
/// from await to await hold a reference instead of all of it.
final class RequestPlan: Sendable {
    let session: Session
    /// The request as the caller gave it (see ``OriginalRequest``).
    let original: OriginalRequest
    let label: String?
    /// The session's interceptor followed by the request's, as one: each attempt makes one call to adapt and at most
    /// one to retry, whose frames hold one interceptor rather than two.
    let chain: (any RequestInterceptor)?
    let validator: any ResponseValidator
    /// The observers and gates the session and the request were given, in that order.
    let roles: ChainRoles
    /// The roles parts register through the contexts they are handed; `nil` without a chain, which has no parts.
    let registered: RegisteredRoles?
    let deadline: Duration?
    let attemptTimeout: Duration?
    /// Whether attempts race a time limit: with a deadline or an attempt timeout.
    let isRaced: Bool
    let redirectHandler: any RedirectHandler
    let requestID = RequestIDs.next()

    /// Out of line: its temporaries would otherwise stay in the frame of `Session.send` for the whole request.
    @inline(never)
    init(
        session: Session, original: OriginalRequest, label: String?, requestInterceptor: (any RequestInterceptor)?,
        requestRoles: ChainRoles, validator: any ResponseValidator, deadline: Duration?, attemptTimeout: Duration?,
        redirectHandler: any RedirectHandler, unshared: consuming URLRequest? = nil
    ) {
        self.session = session
        self.original = original
        self.label = label
        switch (session.interceptor, requestInterceptor) {
        case (let sessions?, let requests?): self.chain = SessionThenRequest(session: sessions, request: requests)
        case (let sessions, nil): self.chain = sessions
        case (nil, let requests): self.chain = requests
        }
        self.validator = validator
        self.deadline = deadline
        self.attemptTimeout = attemptTimeout
        self.isRaced = deadline != nil || attemptTimeout != nil
        self.redirectHandler = redirectHandler
        self.roles = session.roles.followed(by: requestRoles)
        self.registered = chain == nil ? nil : RegisteredRoles(besides: roles, unshared: unshared)
    }

    /// The request as the caller gave it, built anew each time when it is kept as parts.
    var originalRequest: URLRequest { original.request }

    /// The registrations that hold the observers parts registered so far, in order (told after the session's and
    /// the request's); none when no observer registered.
    var registeredObservers: [RegisteredRoles.Registration] { registered?.withObservers ?? [] }

    /// The gates registered so far that the chain does not hold: asked after the chain's.
    var registeredGates: [any RetryGate] { registered?.gates ?? [] }
}

/// A session's interceptor followed by a request's: adapts with the session's, then the request's; asks the session's
/// retriers, then the request's, and the first answer other than `doNotRetry` wins.
private struct SessionThenRequest: RequestInterceptor {
    let session: any RequestInterceptor
    let request: any RequestInterceptor

    func adapt(_ urlRequest: consuming URLRequest, context: RequestContext) async throws -> URLRequest {
        let adapted = try await session.adapt(urlRequest, context: context)
        return try await request.adapt(adapted, context: context)
    }

    func retry(_ retryRequest: RetryRequest, dueTo error: ReboundError) async -> RetryResult {
        let result = await session.retry(retryRequest, dueTo: error)
        guard case .doNotRetry = result else { return result }
        return await request.retry(retryRequest, dueTo: error)
    }
}
