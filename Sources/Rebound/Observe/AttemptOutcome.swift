import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How one attempt ended and what the session does next, as told to every ``AttemptObserver``.
public struct AttemptOutcome: Sendable {
    /// An identifier shared by every attempt of one request, and different between requests.
    public var requestID: UUID { storage.value.requestID }
    /// The label the caller gave the request; `nil` if none.
    public var label: String? { storage.value.label }
    /// The request as the caller passed it to the session, before any adapter ran.
    public var originalRequest: URLRequest { storage.value.original.request }
    /// The record of this attempt: what was sent, what came back, why it failed, how long it took.
    ///
    /// For an attempt cut short by cancellation, ``Attempt/failure`` and ``Attempt/response`` are `nil`.
    public var attempt: Attempt { storage.value.attempt }
    /// The body of this attempt's response; `nil` if it got none.
    public var data: Data? { storage.value.data }
    /// The time from the start of the request's first attempt to the end of this one, on the session's clock.
    public var elapsed: Duration { storage.value.elapsed }
    /// What the session does next.
    public var decision: AttemptDecision { storage.value.decision }
    /// The error the request ends with when ``decision`` is ``AttemptDecision/failed``; `nil` otherwise.
    public var error: ReboundError? { storage.value.error }
    /// The refusals that parts in shadow mode (``Enforcement/shadow``) would have made since the request's previous
    /// attempt was told, this attempt's and its retry's among them, in the order they were decided: each is told with
    /// one attempt (but one decided after the request's last attempt was told, which only its end tells), and all
    /// again in the request's ``RequestOutcome/shadowRefusals``. Empty by default.
    public var shadowRefusals: [ShadowRefusal] { storage.value.shadowRefusals }
    /// The endpoint an ``EndpointGroup`` sent this attempt to (the first group that routed the request through its
    /// context); `nil` when none did, or the attempt was not sent.
    public var endpoint: EndpointGroup.Endpoint? { storage.value.endpoint?.endpoint }
    /// The name of the ``EndpointGroup`` that sent this attempt to ``endpoint``; `nil` when none did.
    public var endpointGroup: String? { storage.value.endpoint?.group }

    /// The fields, in one box: an outcome is passed to every observer as one reference.
    private struct Fields: Sendable {
        let requestID: UUID
        let label: String?
        let original: OriginalRequest
        let attempt: Attempt
        let data: Data?
        let elapsed: Duration
        let decision: AttemptDecision
        let error: ReboundError?
        let shadowRefusals: [ShadowRefusal]
        let endpoint: EndpointGroup.Placement?
    }

    private let storage: Box<Fields>

    /// Creates an outcome, by default with a new request ID, no label, no body, the attempt's duration as the time
    /// elapsed, no error and no refusal of a part in shadow mode; the session creates these, and test code may too.
    public init(
        requestID: UUID = UUID(), label: String? = nil, originalRequest: URLRequest, attempt: Attempt,
        data: Data? = nil, elapsed: Duration? = nil, decision: AttemptDecision, error: ReboundError? = nil,
        shadowRefusals: [ShadowRefusal] = []
    ) {
        self.init(
            requestID: requestID, label: label, original: .request(originalRequest), attempt: attempt, data: data,
            elapsed: elapsed, decision: decision, error: error, shadowRefusals: shadowRefusals)
    }

    /// Creates the outcome of an attempt that endpoint group `endpointGroup` sent to `endpoint`, the other parameters
    /// defaulting as ``init(requestID:label:originalRequest:attempt:data:elapsed:decision:error:shadowRefusals:)``'s do;
    /// the session creates these, and test code may too.
    public init(
        requestID: UUID = UUID(), label: String? = nil, originalRequest: URLRequest, attempt: Attempt,
        data: Data? = nil, elapsed: Duration? = nil, decision: AttemptDecision, error: ReboundError? = nil,
        shadowRefusals: [ShadowRefusal] = [], endpoint: EndpointGroup.Endpoint, endpointGroup: String
    ) {
        self.init(
            requestID: requestID, label: label, original: .request(originalRequest), attempt: attempt, data: data,
            elapsed: elapsed, decision: decision, error: error, shadowRefusals: shadowRefusals,
            endpoint: EndpointGroup.Placement(group: endpointGroup, endpoint: endpoint))
    }

    init(
        requestID: UUID, label: String?, original: OriginalRequest, attempt: Attempt, data: Data? = nil,
        elapsed: Duration? = nil, decision: AttemptDecision, error: ReboundError? = nil,
        shadowRefusals: [ShadowRefusal] = [], endpoint: EndpointGroup.Placement? = nil
    ) {
        storage = Box(
            Fields(
                requestID: requestID, label: label, original: original, attempt: attempt, data: data,
                elapsed: elapsed ?? attempt.duration, decision: decision, error: error,
                shadowRefusals: shadowRefusals, endpoint: endpoint))
    }

    /// The caller's request, or what it is made of.
    var original: OriginalRequest { storage.value.original }

    /// The request sent in this attempt, or the original request when an adapter failed before it could be sent.
    public var request: URLRequest { attempt.request ?? originalRequest }

    /// This attempt's response; `nil` if it got none.
    public var response: HTTPURLResponse? { attempt.response }

    /// The status and header fields of this attempt's response; `nil` if it got none.
    public var responseHead: ResponseHead? { attempt.responseHead }

    /// This attempt's status code, if it got a response.
    public var statusCode: Int? { attempt.responseHead?.statusCode }

    /// Why this attempt failed; `nil` if it succeeded or was cut short by cancellation.
    public var failure: ReboundError.Reason? { attempt.failure }

    /// Whether the session was cancelled during this attempt or while its retriers decided.
    public var isCancelled: Bool { decision == .cancelled }
}
