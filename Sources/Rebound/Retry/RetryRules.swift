/// A retrier that says which rules it retries by: the methods it retries (and any request with an `Idempotency-Key`),
/// which hedging reads so that a request is hedged only when the chain would retry it; the server's signals it reads
/// beside `Retry-After`, which the session reads so that the deadline's rule and the hedges hear a response as the
/// chain's policies do; and its retry limit, from which ``RequestContext/maximumAttempts`` is told.
///
/// Internal: ``RetryPolicy``, ``ConnectionLostRetryPolicy``, ``OfflineRetrier`` and ``JSONBodyRetrier`` say their
/// rules, and the parts that hold retriers (``Interceptor``, ``LoggingRetrier``) say those of the parts they hold. A
/// retrier of the user's own says nothing, and a chain in which no part says anything hedges the requests
/// ``RetryPolicy`` retries by default, reads no signal but `Retry-After`, and has no known most attempts.
protocol RetryRules {
    /// The methods this part retries; `nil` when it says nothing about methods.
    var retriedMethods: Set<HTTPMethod>? { get }
    /// The signals this part reads beside `Retry-After`; none when it says nothing.
    var serverSignals: RetryAfter.Signals { get }
    /// The most retries this part makes of a request, counted by its retry count; `nil` when it does not say.
    var maximumRetries: Int? { get }
    /// The longest delay a response's `Retry-After` makes this part wait before a retry (its
    /// ``RetryAfter/maximumDelay``; zero when it honours none); `nil` when it does not say.
    var longestAskedDelay: Duration? { get }
}

extension RetryRules {
    /// Nothing: a part that reads no `Retry-After` says nothing of how long it would wait.
    var longestAskedDelay: Duration? { nil }
}

extension RetryRules {
    /// The union of the methods `parts` retry, among those that say; `nil` when none says.
    static func union(of parts: [Any]) -> Set<HTTPMethod>? {
        parts.reduce(nil) { union, part in
            guard let methods = (part as? any RetryRules)?.retriedMethods else { return union }
            return (union ?? []).union(methods)
        }
    }

    /// The signals any of `parts` reads.
    static func signals(of parts: [Any]) -> RetryAfter.Signals {
        parts.reduce([]) { $0.union(($1 as? any RetryRules)?.serverSignals ?? []) }
    }

    /// The longest delay a `Retry-After` makes any of `parts` wait, among those that say; `nil` when none says.
    static func longestAskedDelay(of parts: [Any]) -> Duration? {
        parts.compactMap { ($0 as? any RetryRules)?.longestAskedDelay }.max()
    }

    /// The most retries any of `parts` makes, each bounded by the same retry count; `nil` when one does not say, and
    /// 0 for no part.
    static func maximumRetries(of parts: [Any]) -> Int? {
        var most = 0
        for part in parts {
            guard let limit = (part as? any RetryRules)?.maximumRetries else { return nil }
            most = Swift.max(most, limit)
        }
        return most
    }
}

extension RetryPolicy: RetryRules {
    /// ``retryableHTTPMethods``.
    var retriedMethods: Set<HTTPMethod>? { retryableHTTPMethods }
    /// The signals of ``retryAfter``.
    var serverSignals: RetryAfter.Signals { retryAfter.signals }
    /// ``retryLimit``, and ``unsentRetryLimit``, counted apart.
    var maximumRetries: Int? { retryLimit + unsentRetryLimit }
    /// ``retryAfter``'s maximum delay; none when it honours `Retry-After` on no status (``RetryAfter/ignored``).
    var longestAskedDelay: Duration? { retryAfter.statusCodes.isEmpty ? .zero : retryAfter.maximumDelay }
}

extension ConnectionLostRetryPolicy: RetryRules {
    /// The methods of the policy it retries with.
    var retriedMethods: Set<HTTPMethod>? { policy.retryableHTTPMethods }
    /// None: it retries a lost connection, which has no response to read.
    var serverSignals: RetryAfter.Signals { [] }
    /// The retry limit of the policy it retries with.
    var maximumRetries: Int? { policy.retryLimit }
}

extension OfflineRetrier: RetryRules {
    /// Nothing: it retries a failure of the device's network whatever the method.
    var retriedMethods: Set<HTTPMethod>? { nil }
    /// None: an offline failure has no response to read.
    var serverSignals: RetryAfter.Signals { [] }
    /// ``retryLimit``.
    var maximumRetries: Int? { retryLimit }
}

extension JSONBodyRetrier: RetryRules {
    /// Nothing: it retries what the server's body asks for, whatever the method.
    var retriedMethods: Set<HTTPMethod>? { nil }
    /// None: it reads the body, not the server's fields.
    var serverSignals: RetryAfter.Signals { [] }
    /// ``retryLimit``.
    var maximumRetries: Int? { retryLimit }
}

extension Interceptor: RetryRules {
    /// The methods its retriers retry, those of the interceptors it holds included.
    var retriedMethods: Set<HTTPMethod>? { Self.union(of: retriers) }
    /// The signals its retriers read.
    var serverSignals: RetryAfter.Signals { Self.signals(of: retriers) }
    /// The most retries any of its retriers makes, when each says.
    var maximumRetries: Int? { Self.maximumRetries(of: retriers) }
    /// The longest delay a `Retry-After` makes any of its retriers wait, among those that say.
    var longestAskedDelay: Duration? { Self.longestAskedDelay(of: retriers) }
}

extension LoggingRetrier: RetryRules {
    /// The methods of the retrier it wraps.
    var retriedMethods: Set<HTTPMethod>? { wrapped.flatMap { Self.union(of: [$0]) } }
    /// The signals the retrier it wraps reads.
    var serverSignals: RetryAfter.Signals { wrapped.map { Self.signals(of: [$0]) } ?? [] }
    /// The most retries of the retrier it wraps; none when it wraps none.
    var maximumRetries: Int? { Self.maximumRetries(of: wrapped.map { [$0] } ?? []) }
    /// The longest delay a `Retry-After` makes the retrier it wraps wait, if it says.
    var longestAskedDelay: Duration? { wrapped.flatMap { Self.longestAskedDelay(of: [$0]) } }
}
