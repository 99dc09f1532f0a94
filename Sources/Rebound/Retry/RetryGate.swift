/// Has the last word on a retry the retriers decided on: a retry budget that stops retry storms, for example.
///
/// A gate joins a request in `gates:` (a session's, a request's or an ``Interceptor``'s), or by registering through the
/// context it is handed (``RequestContext/admitRetries(through:)``), as ``RetryBudget`` and ``CircuitBreaker`` do from
/// `adapt`; conforming alone does not make a part of the chain a gate. After a retrier answers with a retry, and once
/// the delay is known to end before the request's deadline, the session asks every gate: those given to the session,
/// then the request's, then those registered, in the order they registered. The first that returns an error denies the retry: the request ends at once
/// with ``ReboundError/Reason/retryAborted(error:original:)``, which keeps that error and the attempt's own failure.
/// Gates are not asked about requests that are not retried.
///
/// Gates run on the request's task, synchronously; keep them quick. A gate that grants a retry is told how it went
/// through the ``AttemptObserver`` hook, if it registered as one too.
public protocol RetryGate: Sendable {
    /// Returns `nil` to let the retry happen after `delay`, or the error that explains why it must not.
    func admitRetry(_ request: RetryRequest, dueTo error: ReboundError, after delay: Duration) -> (any Error)?
}
