import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What one attempt came to: how it ended, what it sent and what came back.
final class AttemptResult: Sendable {
    enum Kind: Sendable {
        case success
        case failure(ReboundError.Reason)
        case cancelled
        /// The request's deadline came while the attempt was in flight (or before it started).
        case deadlineReached
    }

    let kind: Kind
    /// The request the attempt sent last: its adapted request, or the last hop of its redirects.
    let sent: URLRequest?
    /// The adapted request, when the attempt followed redirects after it (`sent` is then the last hop); `nil`
    /// otherwise.
    let firstHop: URLRequest?
    let response: ResponseHead?
    let data: Data?
    /// Whether the transport said that no byte of `sent` reached the server (``HTTPTransport/failedBeforeSending(_:)``).
    let failedBeforeSending: Bool
    /// When the attempt handed its adapted request to the transport, on the session's clock; `nil` if it never did.
    let sentAt: Duration?

    init(
        _ kind: Kind, sent: URLRequest? = nil, firstHop: URLRequest? = nil, response: ResponseHead? = nil,
        data: Data? = nil, failedBeforeSending: Bool = false, sentAt: Duration? = nil
    ) {
        self.kind = kind
        self.sent = sent
        self.firstHop = firstHop
        self.response = response
        self.data = data
        self.failedBeforeSending = failedBeforeSending
        self.sentAt = sentAt
    }

    static let deadlineReached = AttemptResult(.deadlineReached)
    /// An attempt its attempt timeout ended: a failure with `URLError(.timedOut)`, which retry policies treat like any
    /// other timeout.
    static let attemptTimeoutReached = AttemptResult(.failure(.transportFailed(error: URLError(.timedOut))))
    static let cancelledBeforeSending = AttemptResult(.cancelled)
}

/// The request an attempt handed to the transport, and when, on the session's clock.
struct Handoff: Sendable {
    let request: URLRequest
    let at: Duration
}

extension AttemptResult {
    /// The request the attempt sent, if it failed: the last such request is the one the request's error names.
    var failedRequest: URLRequest? {
        if case .failure = kind { sent } else { nil }
    }
}
