/// Has the last word on a retry the retriers decided on: a retry budget that stops retry storms, for example.
///
/// Conform an interceptor to this protocol and put it in a session's or a request's chain: after a retrier answers
/// with a retry, and once the delay is known to end before the request's deadline, the session asks every gate in
/// chain order (the session's first). The first that returns an error denies the retry: the request ends at once
/// with ``ReboundError/Reason/retryAborted(error:original:)``, which keeps that error and the attempt's own failure.
/// Gates are not asked about requests that are not retried.
///
/// Gates run on the request's task, synchronously; keep them quick. A gate that grants a retry is told how it went
/// through the ``AttemptObserver`` hook, if it is one.
public protocol RetryGate: Sendable {
    /// Returns `nil` to let the retry happen after `delay`, or the error that explains why it must not.
    func admitRetry(_ request: RetryRequest, dueTo error: ReboundError, after delay: Duration) -> (any Error)?
}
