import Foundation

/// One thing a ``LoggingRetrier`` reports: a failed attempt and what happens next, or how a request ended.
///
/// Every field is already redacted; ``message`` is the same information as one readable line.
public struct RetryLogEvent: Sendable {
    /// How important an event is; the names are swift-log's, so `Logger.Level(rawValue: event.level.rawValue)` maps it.
    public enum Level: String, Sendable, Comparable, CaseIterable {
        /// Not used by Rebound; for sinks that log everything.
        case trace
        /// A first-attempt success or a cancellation.
        case debug
        /// A success after retries.
        case info
        /// A failed attempt that is retried.
        case notice
        /// Not used by Rebound; for sinks that filter by level.
        case warning
        /// A failed attempt that ends the request.
        case error
        /// Not used by Rebound; for sinks that filter by level.
        case critical

        /// Orders levels from ``trace`` to ``critical``.
        public static func < (lhs: Level, rhs: Level) -> Bool {
            lhs.rank < rhs.rank
        }

        private var rank: Int {
            switch self {
            case .trace: 0
            case .debug: 1
            case .info: 2
            case .notice: 3
            case .warning: 4
            case .error: 5
            case .critical: 6
            }
        }
    }

    /// How important the event is.
    public let level: Level
    /// The request's identifier, shared by all its attempts.
    public let requestID: UUID
    /// The request's label; `nil` if none.
    public let label: String?
    /// The attempt's number, starting at 1.
    public let attempt: Int
    /// Which hedge of its round the attempt was: `0` for an attempt the request made on its own, `1`, `2`, … for the
    /// hedges started beside it (see ``Hedging``).
    public let hedge: Int
    /// The HTTP method.
    public let method: String
    /// The URL, with its query values and any user-info redacted (as the logger's ``LoggingRetrier/redaction`` says).
    public let url: String
    /// The request's header fields, secrets redacted, sorted by name.
    public let requestHeaders: [(name: String, value: String)]
    /// The attempt's status code; `nil` if it got no response.
    public let statusCode: Int?
    /// Why the attempt failed; `nil` if it succeeded or was cancelled.
    public let failure: String?
    /// What the session does next.
    public let decision: AttemptDecision
    /// Why a failed request ended, when not with its attempt's own failure: the error a retrier or a gate stopped it
    /// with (its description), or the deadline; `nil` otherwise, and for every other decision.
    public let endReason: String?
    /// The rule that ended a failed request (``ReboundError/stopReason``), for a metrics dimension or log metadata;
    /// `nil` for every other decision.
    public let stopReason: StopReason?
    /// What the wrapped retrier answered about this attempt (``RetryResult/description``), when the logger wraps one
    /// and it was asked; `nil` otherwise. The decision may differ: another retrier, a gate or the deadline had a say.
    public let wrappedAnswer: String?
    /// The state of the circuit breaker that ended the request, when one did: it refused the attempt, refused its
    /// retry, or opened while the request waited to retry (``CircuitBreaker/State/open``,
    /// ``CircuitBreaker/State/forcedOpen``, or ``CircuitBreaker/State/halfOpen`` with its trial calls taken); `nil`
    /// otherwise.
    public let breakerState: CircuitBreaker.State?
    /// The redirects the attempt followed, in order, one line each such as
    /// `GET https://a.example/x → 302 → GET https://b.example/y` (URLs redacted as ``url`` is); empty when it followed
    /// none, or when the logger heard of the request only after the attempt (see ``LoggingRetrier``). ``url`` is the
    /// last hop's.
    public let redirects: [String]
    /// The refusals that parts in shadow mode would have made, told with this attempt
    /// (``AttemptOutcome/shadowRefusals``); empty for most events. An event that carries one is logged at
    /// ``Level/notice`` at least, and its message names each.
    public let shadowRefusals: [ShadowRefusal]
    /// The name of the ``EndpointGroup`` that sent the attempt to ``endpoint``; `nil` when no group routed it.
    public let endpointGroup: String?
    /// The endpoint a group sent the attempt to (``AttemptOutcome/endpoint``); `nil` when no group routed it.
    public let endpoint: EndpointGroup.Endpoint?
    /// How long this attempt took.
    public let attemptDuration: Duration
    /// The time spent on the request so far, from the start of its first attempt.
    public let elapsed: Duration
    /// The event as one readable line, for example
    /// `[1a2b3c4d] GET https://api.example.com/items?token=<redacted>: attempt 1 failed with status 503; retry in 1 s (12 ms so far)`.
    public let message: String
}
