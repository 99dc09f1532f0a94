import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Why an attempt failed, as every part that counts attempts reads it: the one account of failures, from the attempt's
/// record alone.
enum AttemptFailure: Equatable, Sendable {
    /// The device has no network at all (``deviceNetworkURLErrorCodes``): what failed never left the device (the
    /// request, or a redirect's hop after it), and the host is not to blame. Breakers, throttles and adaptive limiters do
    /// not count it, and a retry after it costs no budget; whether a retry may send the request again is the retriers'
    /// to say (one whose redirect's hop found no network was sent).
    case deviceNetwork
    /// The request was not handed to the transport: an adapter failed or refused it (an open breaker, a spent quota).
    case neverSent
    /// The transport failed before any byte of the request reached the server (a refused connection, a DNS failure, a
    /// failed TLS handshake), as it says (``HTTPTransport/failedBeforeSending(_:)``): the host, or the way to it, is to
    /// blame, but sending the request again repeats nothing the server did.
    case beforeSending
    /// The transport failed after the request may have been written (a lost connection, a timeout), or without saying
    /// when: the host, or the way to it.
    case transport
    /// The server answered, and the answer failed validation (a 503, a body that says "try again").
    case serverAnswered

    /// The `URLError` codes that mean the device itself has no network: `notConnectedToInternet`, `dataNotAllowed`,
    /// `internationalRoamingOff` and `callIsActive`. A DNS failure or a refused connection is not among them: those
    /// concern the host.
    static let deviceNetworkURLErrorCodes: Set<URLError.Code> = [
        .notConnectedToInternet, .dataNotAllowed, .internationalRoamingOff, .callIsActive,
    ]

    /// How `reason`, the failure of an attempt that got `response` (if any), is accounted; `beforeSending` says that the
    /// transport failed before the request reached the server.
    init(_ reason: ReboundError.Reason, response: ResponseHead?, beforeSending: Bool = false) {
        if response != nil {
            self = .serverAnswered
            return
        }
        switch reason.original {
        case .transportFailed(let error):
            let offline = (error as? URLError).map { Self.deviceNetworkURLErrorCodes.contains($0.code) } ?? false
            self = offline ? .deviceNetwork : beforeSending ? .beforeSending : .transport
        case .unacceptableStatusCode, .validationFailed, .decodingFailed:
            self = .serverAnswered
        case .adaptationFailed, .circuitOpen, .retryAborted, .deadlineExceeded:
            self = .neverSent
        }
    }
}

extension Attempt {
    /// Why the attempt failed; `nil` for one that succeeded or was cancelled.
    var accountedFailure: AttemptFailure? {
        failure.map { AttemptFailure($0, response: responseHead, beforeSending: failedBeforeSending) }
    }

    /// Whether retrying this failed attempt says nothing about its host's health, so that a part that counts retries
    /// or hedges (a budget, a hedging learner's cap) charges nothing for the retry, nor for a hedge in its place: after
    /// a 401 (a retry with a refreshed credential) or a failure of the device's own network (the host saw nothing).
    var retryIsFree: Bool {
        Self.retryIsFree(status: statusCode, failure: accountedFailure)
    }

    /// Whether the retry of a failed attempt whose response had `status` and whose failure is accounted as `failure`
    /// is free (``retryIsFree``).
    static func retryIsFree(status: Int?, failure: AttemptFailure?) -> Bool {
        status == 401 || failure == .deviceNetwork
    }
}
