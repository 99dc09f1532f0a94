/// The rule that ended a failed request: why no further attempt was made after its last one.
///
/// Read it in ``ReboundError/stopReason``, ``RequestOutcome/stopReason`` and ``RetryLogEvent/stopReason``; ``name``
/// is a short name from a closed set, for a metrics dimension. The error's description and ``LoggingRetrier``'s last
/// line name the rule too.
///
/// ```swift
/// do {
///     _ = try await session.send(request)
/// } catch let error as ReboundError where error.stopReason == .repeatedFailure {
///     print("stopped early: the last two attempts failed the same way")
/// }
/// ```
///
/// A minor release may add a case: switch over it with `@unknown default` (<doc:APIStabilityGuide>).
public enum StopReason: Sendable, Hashable, CustomStringConvertible {
    /// No retrier retried the failure: its method, status code or error is not one the chain retries, or the chain
    /// has no retrier.
    case notRetried
    /// The retries allowed were used: a retrier's limit (``RetryPolicy/retryLimit``, say), or the hedging settings'
    /// ``Hedging/maximumAttempts``.
    case retryLimit
    /// The last two attempts, or hedged rounds, failed the same way (``RetryPolicy/stopsAfterRepeatedFailure``, on in
    /// ``Resilience``'s policy).
    case repeatedFailure
    /// The server asked with `Retry-After` (on a 429 or 503; or with `retry-after-ms`, where the chain's retry policies
    /// read it) for a wait that ends after the request's deadline.
    case retryAfterPastDeadline
    /// The server asked for no retry with `x-should-retry: false`, which the retry policy reads
    /// (``RetryAfter/Signals/shouldRetry``).
    case serverAskedNoRetry
    /// The request's deadline came: during an attempt, while the retriers decided, or before a backoff delay that would
    /// have ended after it.
    case deadline
    /// A ``RetryBudget`` refused the retry.
    case retryBudget
    /// An open circuit breaker refused the attempt or its retry, or opened while the request waited to retry.
    case circuitOpen
    /// A ``RateLimitPacer`` found the host's quota spent for longer than it waits.
    case rateLimited
    /// An ``AdaptiveThrottle`` rejected the attempt or its retry.
    case throttled
    /// A ``ConcurrencyLimiter`` had no place for the attempt in time.
    case concurrencyLimit
    /// The request's body is a stream, which a retry cannot send again (``StreamBodyNotReplayable``).
    case bodyNotReplayable
    /// A retrier or a gate ended the request with an error of its own (``RetryResult/doNotRetryWithError(_:)``):
    /// ``ReboundError/retrierError`` is that error.
    case retrierError

    /// The reason's name, from a closed set for metrics dimensions and log metadata: the case's name, such as
    /// `repeatedFailure` or `retryBudget`.
    public var name: String {
        switch self {
        case .notRetried: "notRetried"
        case .retryLimit: "retryLimit"
        case .repeatedFailure: "repeatedFailure"
        case .retryAfterPastDeadline: "retryAfterPastDeadline"
        case .serverAskedNoRetry: "serverAskedNoRetry"
        case .deadline: "deadline"
        case .retryBudget: "retryBudget"
        case .circuitOpen: "circuitOpen"
        case .rateLimited: "rateLimited"
        case .throttled: "throttled"
        case .concurrencyLimit: "concurrencyLimit"
        case .bodyNotReplayable: "bodyNotReplayable"
        case .retrierError: "retrierError"
        }
    }

    /// The rule in words, for the error's description and the log: for example `not retried` or
    /// `the last two attempts failed the same way`.
    public var description: String {
        switch self {
        case .notRetried: "not retried"
        case .retryLimit: "retry limit reached"
        case .repeatedFailure: "the last two attempts failed the same way"
        case .retryAfterPastDeadline: "Retry-After asks for a wait past the deadline"
        case .serverAskedNoRetry: "the server asked for no retry"
        case .deadline: "deadline exceeded"
        case .retryBudget: "retry budget exhausted"
        case .circuitOpen: "circuit open"
        case .rateLimited: "rate limit quota spent"
        case .throttled: "throttled"
        case .concurrencyLimit: "concurrency limit reached"
        case .bodyNotReplayable: "the body is a stream, which cannot be sent again"
        case .retrierError: "stopped by a retrier's error"
        }
    }

    /// Whether the rule is a retrier's own (a retry limit, a repeated failure, the server's `x-should-retry: false`),
    /// which a description names after "not retried"; the deadline's and the gates' rules are named by the error's
    /// reason already.
    var isRetriersOwn: Bool { self == .retryLimit || self == .repeatedFailure || self == .serverAskedNoRetry }

    /// The rule whose refusal `error` is, if a part of Rebound's refused with it: a breaker, a budget, a pacer, a
    /// throttle, a limiter, or a stream body that cannot be sent again.
    init?(refusal error: any Error) {
        switch error {
        case is CircuitBreakerOpenError: self = .circuitOpen
        case is RetryBudgetExhausted: self = .retryBudget
        case is RateLimitQuotaSpent: self = .rateLimited
        case is AdaptiveThrottleRejection: self = .throttled
        case is ConcurrencyLimitExceeded: self = .concurrencyLimit
        case is StreamBodyNotReplayable: self = .bodyNotReplayable
        default: return nil
        }
    }

    /// The rule whose refusal failed an attempt with `reason` (an open breaker, a throttle's rejection in an adapter),
    /// if one did.
    init?(failure reason: ReboundError.Reason) {
        switch reason {
        case .circuitOpen: self = .circuitOpen
        case .adaptationFailed(let error): self.init(refusal: error)
        default: return nil
        }
    }
}
