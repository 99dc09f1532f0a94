/// What the session does after an attempt: the one vocabulary of outcomes, log events and logs.
///
/// Observers read it in ``AttemptOutcome/decision`` (after every attempt) and ``RequestOutcome/decision`` (once, at the
/// request's end, never ``retry(after:)``); ``LoggingRetrier`` puts it in every ``RetryLogEvent``. The error a failed
/// request ends with is beside it, in ``AttemptOutcome/error`` and ``RequestOutcome/error``. A retrier's own answer is
/// a ``RetryResult``: the decision is what the whole chain, the deadline and the gates made of the answers.
///
/// A minor release may add a case: switch over it with `@unknown default` (<doc:APIStabilityGuide>).
public enum AttemptDecision: Sendable, Hashable, CustomStringConvertible {
    /// The attempt passed validation; the caller gets its response.
    case succeeded
    /// The attempt failed and the request is retried after the delay.
    case retry(after: Duration)
    /// The attempt failed and the request ends with an error.
    case failed
    /// The request was cancelled: during the attempt, while the retriers decided, or (at the request's end) in a
    /// backoff sleep or before its next attempt.
    case cancelled

    /// The decision's name without its delay, from a closed set for metrics dimensions and log metadata: `succeeded`,
    /// `retry`, `failed` or `cancelled`.
    public var name: String {
        switch self {
        case .succeeded: "succeeded"
        case .retry: "retry"
        case .failed: "failed"
        case .cancelled: "cancelled"
        }
    }

    /// For example `succeeded`, `retry in 500 ms`, `failed`, `cancelled`.
    public var description: String {
        switch self {
        case .succeeded: "succeeded"
        case .retry(let delay): "retry in \(delay.logDescription)"
        case .failed: "failed"
        case .cancelled: "cancelled"
        }
    }
}
