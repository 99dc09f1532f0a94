import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A chain held by reference: a request calls its interceptor, a `let` of a class, in place instead of copying the
/// existential, knows once whether it adapts at all and in place, and asks its retriers one by one.
final class ChainBox: Sendable {
    let interceptor: any RequestInterceptor
    /// Whether the chain adapts a request at all: `false` for an ``Interceptor`` of retriers only (and no observers or
    /// gates to register), whose adaptation would leave every request as it is.
    let adapts: Bool
    /// What adapts in place when the chain never suspends (an ``Interceptor`` of such parts: see ``AdaptsInPlace``),
    /// called without an asynchronous call; `nil` otherwise.
    let adaptInPlace: Adapter.ModifyNowHandler?
    /// The retriers a request asks about a failed attempt, in order, the first answer that does not pass on winning:
    /// an ``Interceptor``'s own, read out of it when it has no observers or gates to register on the way (the request
    /// then asks each as the interceptor would, by the same rules), else the interceptor as one retrier; for the
    /// session's chain followed by a request's, the session's retriers then the request's.
    let retriers: [any RequestRetrier]
    /// The most retries the chain's retriers make, when each says (see ``RetryRules``); `nil` otherwise. Found once,
    /// for ``RequestContext/maximumAttempts``.
    let maximumRetries: Int?
    /// The signals the chain's retry policies read beside `Retry-After` (see ``RetryRules``): read where the session
    /// hears a response as they do, for the deadline's rule and the hedges. Found once.
    let serverSignals: RetryAfter.Signals
    /// The longest delay a `Retry-After` makes the chain's retry policies wait, when one says (see ``RetryRules``):
    /// the longest quiet a response holds a hedged round's attempts to its host for. Found once.
    let longestAskedDelay: Duration?
    /// Whether a part of the chain may register a role through a request's context: `false` for a chain that adapts
    /// nothing and whose retriers never register (``RegistersNoRoles``), whose requests then keep no registrations.
    let mayRegister: Bool

    convenience init(_ interceptor: any RequestInterceptor) {
        let (adapts, retriers) = Self.roles(of: interceptor)
        self.init(
            interceptor: interceptor, adapts: adapts,
            adaptInPlace: (interceptor as? any AdaptsInPlace)?.adaptInPlace, retriers: retriers)
    }

    /// The session's chain followed by a request's own, whose in-place adaptation is known without a look at the
    /// session's type.
    convenience init(session: ChainBox, thenRequest request: any RequestInterceptor) {
        let chain = SessionThenRequest(session: session, request: request)
        let (adapts, retriers) = Self.roles(of: request)
        self.init(
            interceptor: chain, adapts: session.adapts || adapts, adaptInPlace: chain.adaptInPlace,
            retriers: session.retriers + retriers)
    }

    private init(
        interceptor: any RequestInterceptor, adapts: Bool, adaptInPlace: Adapter.ModifyNowHandler?,
        retriers: [any RequestRetrier]
    ) {
        self.interceptor = interceptor
        self.adapts = adapts
        self.adaptInPlace = adaptInPlace
        self.retriers = retriers
        let rules = interceptor as? any RetryRules
        self.maximumRetries = rules?.maximumRetries
        self.serverSignals = rules?.serverSignals ?? []
        self.longestAskedDelay = rules?.longestAskedDelay
        self.mayRegister = adapts || retriers.contains { !($0 is any RegistersNoRoles) }
    }

    /// Whether `interceptor` adapts, and the retriers to ask in its place. A look at the type of the library's own
    /// composite: it changes how the same parts are called, never what runs or in which order.
    private static func roles(of interceptor: any RequestInterceptor) -> (adapts: Bool, retriers: [any RequestRetrier])
    {
        guard let composite = interceptor as? Interceptor, !composite.registersRoles else {
            return (true, [interceptor])
        }
        return (!composite.adapters.isEmpty, composite.retriers)
    }

    func adapt(_ request: consuming URLRequest, context: RequestContext) async throws -> URLRequest {
        try await interceptor.adapt(consume request, context: context)
    }

    /// The methods the chain's retry policies retry, `nil` when none says (see ``RetryRules``): read before a
    /// hedge, and before a retry of a request that hedging may repeat.
    var retriedMethods: Set<HTTPMethod>? { (interceptor as? any RetryRules)?.retriedMethods }

}

/// A retrier that never registers a role through a request's context or its retry request (``RetryPolicy``,
/// ``ConnectionLostRetryPolicy``): a request through a chain of only such retriers, which adapts nothing, keeps no
/// registrations.
protocol RegistersNoRoles: RequestRetrier {}

extension RetryPolicy: RegistersNoRoles {}
extension ConnectionLostRetryPolicy: RegistersNoRoles {}

/// A session's interceptor followed by a request's: adapts with the session's, then the request's. Their retriers are
/// asked through the chain box's ``ChainBox/retriers``, the session's then the request's, never through this whole.
///
/// Adapts in place when both halves do (``AdaptsInPlace``): the session's half is read from its chain box, where it was
/// found once for the session, so a request with an interceptor of its own looks at one type only, its own.
private struct SessionThenRequest: RequestInterceptor, AdaptsInPlace, RetryRules {
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

    /// The methods either chain's retry policies retry.
    var retriedMethods: Set<HTTPMethod>? { Self.union(of: [session, request]) }

    /// The signals either chain's retry policies read.
    var serverSignals: RetryAfter.Signals { Self.signals(of: [session, request]) }
    /// The most retries either chain makes, when each says.
    var maximumRetries: Int? { Self.maximumRetries(of: [session, request]) }
    /// The longest delay a `Retry-After` makes either chain's retry policies wait, among those that say.
    var longestAskedDelay: Duration? { Self.longestAskedDelay(of: [session, request]) }
}
