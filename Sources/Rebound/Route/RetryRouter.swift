import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A part that picks where each attempt of a request goes among several endpoints (an ``EndpointGroup``): asked where
/// a retry will go before the retriers (so that a delay the failed endpoint asked for holds no retry to another host)
/// and where a hedge will go before the hedge gates, so that a per-host gate (a breaker) judges either by the endpoint
/// it is sent to rather than the one that failed.
///
/// Internal: a group registers for it through the request's context from `adapt`.
protocol RetryRouter: AnyObject, Sendable {
    /// The request the retry after `request`'s last attempt will be sent as, under the endpoint picked for it (which the
    /// retry's attempt then takes, if it is still in rotation); `nil` when the part does not route the request, or the
    /// pick is where the failed attempt went. Asked again about the same attempt, the same pick.
    func destination(ofRetry request: RetryRequest) -> URLRequest?

    /// The request hedge `number` of request `requestID` will be sent as, `sent` being what the round judges the hedge
    /// as before its adapters run (`HedgeRound.Hedge.judged`), under the endpoint picked for it (which
    /// the hedge's attempt then takes, if it is still in rotation); `nil` when the part does not route the request.
    func destination(ofHedge sent: URLRequest, number: Int, of requestID: UUID) -> URLRequest?

    /// Forgets the endpoint picked for hedge `number` of request `requestID`, which a gate refused: it never starts.
    func hedgeRefused(_ number: Int, of requestID: UUID)

    /// The group and the endpoint `sent`, an attempt's adapted request, went to; `nil` when it is under none of the
    /// part's endpoints.
    func placement(of sent: URLRequest) -> EndpointGroup.Placement?
}

extension EndpointGroup {
    /// An endpoint of a named group, as an attempt's outcome names where it went.
    struct Placement: Sendable {
        let group: String
        let endpoint: Endpoint
    }
}
