/// Learns how every attempt ended and how each request ended: a circuit breaker, a retry budget or a logger that must
/// see successes too.
///
/// **How an observer joins.** Two ways, and no other: nothing is found by looking at a part's type.
/// - Given explicitly, in a session's or a request's `observers:` (``Session``): it hears every request, from before
///   its first attempt to its end, whatever else happens.
/// - Registered by a class instance through the context it is handed (``RequestContext/observe(_:)``, from `adapt`, or
///   ``RetryRequest/context`` from `retry`): it hears the request from that attempt on, to its end. This is how a
///   breaker, a budget or a logger in the chain observes, and it keeps working behind any wrapper that forwards the
///   call. An ``Interceptor``'s own `observers:` join this way, when the interceptor adapts the request.
///
/// **When it is called.** ``attemptDidFinish(_:)`` once for every attempt the session starts, after the attempt's fate
/// is settled and before the session acts on it: after the retriers answered and before the backoff sleep, or just
/// before the response is returned or the error thrown. An attempt cut short by cancellation is reported too
/// (``AttemptDecision/cancelled``), so that a permit an adapter handed out (a half-open breaker's trial call) is
/// always given back. Then ``requestDidFinish(_:)`` once when the request ends, on every path: success, failure,
/// deadline, or cancellation at any point, a backoff sleep included. Within an attempt, ``attemptWasRedirected(_:)``
/// once for every redirect it follows, before the next hop is sent; a redirect not followed is the attempt's response.
///
/// **Order and cost.** Observers are called one after another on the request's task: those found in the session's
/// chain first, then the request's, in chain order, then those registered through a context, in the order they
/// registered. The session waits for each, and a request's deadline does not cut a hook short (every observer hears
/// every outcome), so keep the hooks quick. A chain without observers pays nothing. A class instance given or
/// registered more than once is told once.
public protocol AttemptObserver: Sendable {
    /// Called once with the outcome of each attempt, including cancelled ones; does nothing by default.
    func attemptDidFinish(_ outcome: AttemptOutcome) async

    /// Called once when the request ends, with how it ended; does nothing by default.
    func requestDidFinish(_ outcome: RequestOutcome) async

    /// Called for each redirect an attempt follows, before the next hop is sent; does nothing by default.
    func attemptWasRedirected(_ hop: RedirectHop) async
}

extension AttemptObserver {
    /// Does nothing.
    public func attemptDidFinish(_ outcome: AttemptOutcome) async {}

    /// Does nothing.
    public func requestDidFinish(_ outcome: RequestOutcome) async {}

    /// Does nothing.
    public func attemptWasRedirected(_ hop: RedirectHop) async {}
}
