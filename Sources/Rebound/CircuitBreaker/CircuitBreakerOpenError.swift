/// The error of a request that an open circuit breaker stopped before it reached the network.
///
/// It is a ``NonRetryableError``: no retrier is asked about it, so a retry policy cannot hammer an upstream that the
/// breaker is protecting. It does not count as another failure either.
public struct CircuitBreakerOpenError: NonRetryableError, CustomStringConvertible, Sendable {
    /// The key of the breaker that stopped the request (usually the host); `nil` for a breaker without one.
    public let key: String?
    /// The state the breaker was in: ``CircuitBreaker/State/open``, ``CircuitBreaker/State/forcedOpen``, or
    /// ``CircuitBreaker/State/halfOpen`` with every trial call already in flight.
    public let state: CircuitBreaker.State
    /// How long until the breaker lets a trial call through; `nil` when that is not known (forced open, or waiting
    /// for the trial calls in flight).
    public let retryAfter: Duration?

    /// Creates the error; breakers create these, and test code may too.
    public init(key: String?, state: CircuitBreaker.State, retryAfter: Duration?) {
        self.key = key
        self.state = state
        self.retryAfter = retryAfter
    }

    /// For example `circuit breaker for api.example.com is open; it lets a trial call through in 12.5 s`.
    public var description: String {
        let name = key.map { "circuit breaker for \($0)" } ?? "circuit breaker"
        switch (state, retryAfter) {
        case (.forcedOpen, _):
            return "\(name) is forced open; it lets calls through once it is reset or forced closed"
        case (.halfOpen, _):
            return "\(name) is half-open with its trial calls in flight; it decides when they finish"
        case (_, let retryAfter?):
            return "\(name) is open; it lets a trial call through in \(retryAfter.logDescription)"
        case (_, nil):
            return "\(name) is \(state)"
        }
    }
}
