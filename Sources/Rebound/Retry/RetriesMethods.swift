/// A retrier that retries requests of some methods only (and any request with an `Idempotency-Key`), and says which:
/// what hedging reads, so that a request is hedged only when the chain would retry it.
///
/// Internal: ``RetryPolicy`` and ``ConnectionLostRetryPolicy`` say their methods, and the parts that hold retriers
/// (``Interceptor``, ``LoggingRetrier``) say those of the parts they hold. A retrier of the user's own says nothing,
/// and a chain in which no part says anything hedges the requests ``RetryPolicy`` retries by default.
protocol RetriesMethods {
    /// The methods this part retries; `nil` when it says nothing about methods.
    var retriedMethods: Set<HTTPMethod>? { get }
}

extension RetriesMethods {
    /// The union of the methods `parts` retry, among those that say; `nil` when none says.
    static func union(of parts: [Any]) -> Set<HTTPMethod>? {
        parts.reduce(nil) { union, part in
            guard let methods = (part as? any RetriesMethods)?.retriedMethods else { return union }
            return (union ?? []).union(methods)
        }
    }
}

extension RetryPolicy: RetriesMethods {
    /// ``retryableHTTPMethods``.
    var retriedMethods: Set<HTTPMethod>? { retryableHTTPMethods }
}

extension ConnectionLostRetryPolicy: RetriesMethods {
    /// The methods of the policy it retries with.
    var retriedMethods: Set<HTTPMethod>? { policy.retryableHTTPMethods }
}

extension Interceptor: RetriesMethods {
    /// The methods its retriers retry, those of the interceptors it holds included.
    var retriedMethods: Set<HTTPMethod>? { Self.union(of: retriers) }
}

extension LoggingRetrier: RetriesMethods {
    /// The methods of the retrier it wraps.
    var retriedMethods: Set<HTTPMethod>? { wrapped.flatMap { Self.union(of: [$0]) } }
}
