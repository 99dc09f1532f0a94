/// Learns how every attempt ended: a circuit breaker, a retry budget or a logger that must see successes too.
///
/// Conform any adapter, retrier or interceptor to this protocol and put it in a session's or a request's chain (or
/// pass it to ``Interceptor/init(adapters:retriers:interceptors:observers:)`` as an observer only): the session
/// calls ``attemptDidFinish(_:)`` exactly once for every attempt it starts, with nobody wiring anything by hand.
///
/// **When it is called.** After the attempt's fate is settled and before the session acts on it: after the
/// retriers answered and before the backoff sleep, or just before the response is returned or the error thrown.
/// An attempt cut short by cancellation is reported too (``AttemptOutcome/Decision/cancelled``), so that a permit an
/// adapter handed out (a half-open breaker's trial call) is always given back.
///
/// **Order and cost.** Observers are called one after another on the request's task, the session's interceptor's
/// first, then the request's, in chain order; the session waits for each, so keep the hook quick. A chain without
/// observers pays nothing. An observer that is a class instance listed twice in one ``Interceptor``, or in both the
/// session's and a request's interceptor, is told once.
public protocol AttemptObserver: Sendable {
    /// Called once with the outcome of each attempt, including cancelled ones.
    func attemptDidFinish(_ outcome: AttemptOutcome) async
}
