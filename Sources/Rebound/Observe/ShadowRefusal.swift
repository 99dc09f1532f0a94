import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Whether a part that refuses requests (a breaker, a registry of them, a retry budget, an adaptive throttle, a
/// concurrency limiter, a rate limit pacer) applies its refusals, or only tells of them.
///
/// A part in ``shadow`` mode decides exactly as it would enforced, and its state moves as if it had refused: a request
/// it would have refused goes on, but the part no longer sees it (it counts none of its later attempts, as it would
/// never have seen them), and a hedge it would have refused starts, unseen by it. It refuses nothing, holds nothing and
/// ends no wait; each refusal it would have made is told to the observers, in ``AttemptOutcome/shadowRefusals`` and
/// ``RequestOutcome/shadowRefusals``. So on traffic whose answers do not depend on it, a shadow part would refuse as
/// many requests as the same part enforced refuses: run it in production before you give it teeth. A part that would
/// make a request wait (a ``ConcurrencyLimiter``'s queue, a ``RateLimitPacer``'s wait for a renewal) makes none wait
/// in shadow mode: it tells the refusal it would have made with no queue or wait.
public enum Enforcement: String, Sendable, Hashable, CustomStringConvertible {
    /// The part refuses as it decides: the default.
    case enforced
    /// The part decides as usual, refuses nothing, and tells each refusal it would have made.
    case shadow

    /// `enforced` or `shadow`.
    public var description: String { rawValue }
}

/// A refusal a part in shadow mode (``Enforcement/shadow``) would have made, told to the observers.
///
/// Its description names the part, the attempt and the rule, for example
/// `CircuitBreaker for api.example.com would refuse attempt 3 (circuitOpen)`: a key, a number and a rule's name, never
/// a URL or a header's value.
public struct ShadowRefusal: Sendable, CustomStringConvertible {
    /// What a part would have refused.
    ///
    /// A minor release may add a case: switch over it with `@unknown default` (<doc:APIStabilityGuide>).
    public enum Stage: String, Sendable, Hashable {
        /// An attempt, as the part admits it: the request would have ended with the part's error.
        case attempt
        /// The retry after ``ShadowRefusal/attempt`` failed, before its backoff or during it: the request would have
        /// ended with the failure and the part's error as the reason.
        case retry
        /// A hedge, attempt ``ShadowRefusal/attempt``: it would not have started, and the request would have gone on
        /// without it.
        case hedge
    }

    /// The request the refusal is about.
    public let requestID: UUID
    /// The label the caller gave the request; `nil` if none.
    public let label: String?
    /// The attempt refused (``Stage/attempt``, ``Stage/hedge``) or the failed attempt whose retry was (``Stage/retry``).
    public let attempt: Int
    /// What would have been refused.
    public let stage: Stage
    /// The rule that would have refused it, as a request it ended would carry it (``StopReason/circuitOpen``,
    /// ``StopReason/retryBudget``, ``StopReason/throttled``, ``StopReason/concurrencyLimit``,
    /// ``StopReason/rateLimited``).
    public let reason: StopReason
    /// The part's type: `CircuitBreaker`, `RetryBudget`, `AdaptiveThrottle`, `ConcurrencyLimiter` or `RateLimitPacer`.
    public let part: String
    /// The part's key for the request, usually its host; `nil` for a part without one.
    public let key: String?
    /// The error the part would have refused with (a ``CircuitBreakerOpenError``, a ``RetryBudgetExhausted``, an
    /// ``AdaptiveThrottleRejection``, a ``ConcurrencyLimitExceeded``, a ``RateLimitQuotaSpent``).
    public let error: any Error

    /// Creates a refusal; the parts create these, and test code may too.
    public init(
        requestID: UUID, label: String? = nil, attempt: Int, stage: Stage, reason: StopReason, part: String,
        key: String? = nil, error: any Error
    ) {
        self.requestID = requestID
        self.label = label
        self.attempt = attempt
        self.stage = stage
        self.reason = reason
        self.part = part
        self.key = key
        self.error = error
    }

    /// The same refusal, of `stage`.
    func with(stage: Stage) -> ShadowRefusal {
        ShadowRefusal(
            requestID: requestID, label: label, attempt: attempt, stage: stage, reason: reason, part: part, key: key,
            error: error)
    }

    /// The same refusal, of a request labelled `label`: the session stamps the request's label on what a part tells.
    func with(label: String?) -> ShadowRefusal {
        ShadowRefusal(
            requestID: requestID, label: label, attempt: attempt, stage: stage, reason: reason, part: part, key: key,
            error: error)
    }

    /// One line for logs: `CircuitBreaker for api.example.com would refuse the retry after attempt 2 (circuitOpen)`.
    public var description: String {
        let name = key.map { "\(part) for \($0)" } ?? part
        let what =
            switch stage {
            case .attempt: "attempt \(attempt)"
            case .retry: "the retry after attempt \(attempt)"
            case .hedge: "hedge attempt \(attempt)"
            }
        return "\(name) would refuse \(what) (\(reason.name))"
    }
}
