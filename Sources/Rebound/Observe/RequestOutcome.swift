import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How one request ended, as told to every ``AttemptObserver`` once, on every path.
public struct RequestOutcome: Sendable {
    /// An identifier shared by every attempt of the request.
    public var requestID: UUID { storage.value.requestID }
    /// The label the caller gave the request; `nil` if none.
    public var label: String? { storage.value.label }
    /// The request as the caller passed it to the session, before any adapter ran.
    public var originalRequest: URLRequest { storage.value.original.request }
    /// Every attempt made, in order; empty when the request was cancelled or timed out before its first attempt.
    public var attempts: [Attempt] { storage.value.attempts }
    /// The time from the start of the request to its end, on the session's clock.
    public var elapsed: Duration { storage.value.elapsed }
    /// How the request ended: ``AttemptDecision/succeeded``, ``AttemptDecision/failed`` (with ``error``), or
    /// ``AttemptDecision/cancelled``; never a retry.
    public var decision: AttemptDecision { storage.value.decision }
    /// The error the caller got when ``decision`` is ``AttemptDecision/failed``; `nil` otherwise.
    public var error: ReboundError? { storage.value.error }
    /// The rule that ended a failed request (``ReboundError/stopReason``); `nil` when it succeeded or was cancelled.
    public var stopReason: StopReason? { error?.stopReason }
    /// Every refusal that parts in shadow mode (``Enforcement/shadow``) would have made of the request, in the order
    /// they were decided; empty by default. The first of an attempt or a retry is where the request would have ended
    /// with those parts enforced (a hedge's refusal would have ended that hedge only).
    public var shadowRefusals: [ShadowRefusal] { storage.value.shadowRefusals }
    /// How many of the last ``shadowRefusals`` no attempt's outcome told: decided after the request's last attempt was
    /// told (a breaker that opened during a backoff the request never finished).
    var untoldShadowRefusals: Int { storage.value.untoldShadowRefusals }

    private struct Fields: Sendable {
        let requestID: UUID
        let label: String?
        let original: OriginalRequest
        let attempts: [Attempt]
        let elapsed: Duration
        let decision: AttemptDecision
        let error: ReboundError?
        let shadowRefusals: [ShadowRefusal]
        let untoldShadowRefusals: Int
        let lastEndpoint: EndpointGroup.Placement?
    }

    private let storage: Box<Fields>

    /// Creates an outcome; the session creates these, and test code may too.
    public init(
        requestID: UUID = UUID(), label: String? = nil, originalRequest: URLRequest, attempts: [Attempt],
        elapsed: Duration = .zero, decision: AttemptDecision, error: ReboundError? = nil,
        shadowRefusals: [ShadowRefusal] = []
    ) {
        self.init(
            requestID: requestID, label: label, original: .request(originalRequest), attempts: attempts,
            elapsed: elapsed, decision: decision, error: error, shadowRefusals: shadowRefusals)
    }

    init(
        requestID: UUID, label: String?, original: OriginalRequest, attempts: [Attempt], elapsed: Duration,
        decision: AttemptDecision, error: ReboundError?, shadowRefusals: [ShadowRefusal] = [],
        untoldShadowRefusals: Int = 0, lastEndpoint: EndpointGroup.Placement? = nil
    ) {
        storage = Box(
            Fields(
                requestID: requestID, label: label, original: original, attempts: attempts, elapsed: elapsed,
                decision: decision, error: error, shadowRefusals: shadowRefusals,
                untoldShadowRefusals: untoldShadowRefusals, lastEndpoint: lastEndpoint))
    }

    /// The caller's request, or what it is made of.
    var original: OriginalRequest { storage.value.original }

    /// The endpoint an ``EndpointGroup`` sent the last attempt to, for an outcome of that attempt built from this one;
    /// `nil` when no group routed it.
    var lastEndpoint: EndpointGroup.Placement? { storage.value.lastEndpoint }

    /// The last attempt's response; `nil` if it got none.
    public var response: HTTPURLResponse? { attempts.last?.response }

    /// The status and header fields of the last attempt's response; `nil` if it got none.
    public var responseHead: ResponseHead? { attempts.last?.responseHead }

    /// Whether the request succeeded.
    public var succeeded: Bool { decision == .succeeded }

    /// Whether the request was cancelled.
    public var isCancelled: Bool { decision == .cancelled }
}
