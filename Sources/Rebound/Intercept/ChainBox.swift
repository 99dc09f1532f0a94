import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A chain held by reference: a request calls its interceptor, a `let` of a class, in place instead of copying the
/// existential, and knows once whether it adapts in place.
final class ChainBox: Sendable {
    let interceptor: any RequestInterceptor
    /// What adapts in place when the chain never suspends (an ``Interceptor`` of such parts: see ``AdaptsInPlace``),
    /// called without an asynchronous call; `nil` otherwise.
    let adaptInPlace: Adapter.ModifyNowHandler?
    /// The most retries the chain's retriers make, when each says (see ``RetryRules``); `nil` otherwise. Found once,
    /// for ``RequestContext/maximumAttempts``.
    let maximumRetries: Int?
    /// The signals the chain's retry policies read beside `Retry-After` (see ``RetryRules``): read where the session
    /// hears a response as they do, for the deadline's rule and the hedges. Found once.
    let serverSignals: RetryAfter.Signals

    convenience init(_ interceptor: any RequestInterceptor) {
        self.init(interceptor: interceptor, adaptInPlace: (interceptor as? any AdaptsInPlace)?.adaptInPlace)
    }

    /// The session's chain followed by a request's own, whose in-place adaptation is known without a look at the
    /// session's type.
    convenience init(session: ChainBox, thenRequest request: any RequestInterceptor) {
        let chain = SessionThenRequest(session: session, request: request)
        self.init(interceptor: chain, adaptInPlace: chain.adaptInPlace)
    }

    private init(interceptor: any RequestInterceptor, adaptInPlace: Adapter.ModifyNowHandler?) {
        self.interceptor = interceptor
        self.adaptInPlace = adaptInPlace
        let rules = interceptor as? any RetryRules
        self.maximumRetries = rules?.maximumRetries
        self.serverSignals = rules?.serverSignals ?? []
    }

    func adapt(_ request: consuming URLRequest, context: RequestContext) async throws -> URLRequest {
        try await interceptor.adapt(consume request, context: context)
    }

    /// The methods the chain's retry policies retry, `nil` when none says (see ``RetryRules``): read before a
    /// hedge, and before a retry of a request that hedging may repeat.
    var retriedMethods: Set<HTTPMethod>? { (interceptor as? any RetryRules)?.retriedMethods }

}

/// A session's interceptor followed by a request's: adapts with the session's, then the request's; asks the session's
/// retriers, then the request's, and the first answer that does not pass on (`RetryResult.passesOn`) wins.
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

    func retry(_ retryRequest: RetryRequest, dueTo error: ReboundError) async -> RetryResult {
        let result = await session.retry(retryRequest, dueTo: error)
        guard result.passesOn else { return result }
        return result.then(await request.retry(retryRequest, dueTo: error))
    }

    /// The methods either chain's retry policies retry.
    var retriedMethods: Set<HTTPMethod>? { Self.union(of: [session, request]) }

    /// The signals either chain's retry policies read.
    var serverSignals: RetryAfter.Signals { Self.signals(of: [session, request]) }
    /// The most retries either chain makes, when each says.
    var maximumRetries: Int? { Self.maximumRetries(of: [session, request]) }
}
