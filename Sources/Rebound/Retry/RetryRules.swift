/// A retrier that says which rules it retries by: the methods it retries (and any request with an `Idempotency-Key`),
/// which hedging reads so that a request is hedged only when the chain would retry it; and the server's signals it
/// reads beside `Retry-After`, which the session reads so that the deadline's rule and the hedges hear a response as
/// the chain's policies do.
///
/// Internal: ``RetryPolicy`` and ``ConnectionLostRetryPolicy`` say their rules, and the parts that hold retriers
/// (``Interceptor``, ``LoggingRetrier``) say those of the parts they hold. A retrier of the user's own says nothing,
/// and a chain in which no part says anything hedges the requests ``RetryPolicy`` retries by default and reads no
/// signal but `Retry-After`.
protocol RetryRules {
    /// The methods this part retries; `nil` when it says nothing about methods.
    var retriedMethods: Set<HTTPMethod>? { get }
    /// The signals this part reads beside `Retry-After`; none when it says nothing.
    var serverSignals: RetryAfter.Signals { get }
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
}

extension RetryPolicy: RetryRules {
    /// ``retryableHTTPMethods``.
    var retriedMethods: Set<HTTPMethod>? { retryableHTTPMethods }
    /// The signals of ``retryAfter``.
    var serverSignals: RetryAfter.Signals { retryAfter.signals }
}

extension ConnectionLostRetryPolicy: RetryRules {
    /// The methods of the policy it retries with.
    var retriedMethods: Set<HTTPMethod>? { policy.retryableHTTPMethods }
    /// None: it retries a lost connection, which has no response to read.
    var serverSignals: RetryAfter.Signals { [] }
}

extension Interceptor: RetryRules {
    /// The methods its retriers retry, those of the interceptors it holds included.
    var retriedMethods: Set<HTTPMethod>? { Self.union(of: retriers) }
    /// The signals its retriers read.
    var serverSignals: RetryAfter.Signals { Self.signals(of: retriers) }
}

extension LoggingRetrier: RetryRules {
    /// The methods of the retrier it wraps.
    var retriedMethods: Set<HTTPMethod>? { wrapped.flatMap { Self.union(of: [$0]) } }
    /// The signals the retrier it wraps reads.
    var serverSignals: RetryAfter.Signals { wrapped.map { Self.signals(of: [$0]) } ?? [] }
}
