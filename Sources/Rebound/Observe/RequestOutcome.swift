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
    public var originalRequest: URLRequest { storage.value.originalRequest }
    /// Every attempt made, in order; empty when the request was cancelled or timed out before its first attempt.
    public var attempts: [Attempt] { storage.value.attempts }
    /// The time from the start of the request to its end, on the session's clock.
    public var elapsed: Duration { storage.value.elapsed }
    /// How the request ended: ``AttemptOutcome/Decision/succeeded``, ``AttemptOutcome/Decision/failed(_:)`` with the
    /// error the caller gets, or ``AttemptOutcome/Decision/cancelled``; never a retry.
    public var decision: AttemptOutcome.Decision { storage.value.decision }

    private struct Fields: Sendable {
        let requestID: UUID
        let label: String?
        let originalRequest: URLRequest
        let attempts: [Attempt]
        let elapsed: Duration
        let decision: AttemptOutcome.Decision
    }

    private let storage: Box<Fields>

    /// Creates an outcome; the session creates these, and test code may too.
    public init(
        requestID: UUID = UUID(), label: String? = nil, originalRequest: URLRequest, attempts: [Attempt],
        elapsed: Duration = .zero, decision: AttemptOutcome.Decision
    ) {
        storage = Box(
            Fields(
                requestID: requestID, label: label, originalRequest: originalRequest, attempts: attempts,
                elapsed: elapsed, decision: decision))
    }

    /// The last attempt's response; `nil` if it got none.
    public var response: HTTPURLResponse? { attempts.last?.response }

    /// Whether the request succeeded.
    public var succeeded: Bool {
        if case .succeeded = decision { return true }
        return false
    }

    /// Whether the request was cancelled.
    public var isCancelled: Bool {
        if case .cancelled = decision { return true }
        return false
    }

    /// The error the caller got; `nil` when the request succeeded or was cancelled.
    public var error: ReboundError? {
        if case .failed(let error) = decision { return error }
        return nil
    }
}
