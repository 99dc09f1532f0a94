import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The record of one attempt of a request: what was sent, what came back, how long it took.
public struct Attempt: Sendable {
    /// The attempt's number, starting at 1.
    public let number: Int
    /// The request sent to the transport, after adaptation; `nil` if an adapter failed.
    public let request: URLRequest?
    /// The response received; `nil` if the adapters or the transport failed. Built from ``responseHead`` on first use
    /// when the transport answered without an `HTTPURLResponse`.
    public var response: HTTPURLResponse? { responseHead?.httpURLResponse }
    /// The status and header fields of the response received; `nil` if the adapters or the transport failed.
    public let responseHead: ResponseHead?
    /// Why the attempt failed; `nil` if it succeeded.
    public let failure: ReboundError.Reason?
    /// The time from the start of adaptation to the end of validation, measured on the session's clock.
    public let duration: Duration
    /// The delay slept before the next attempt; `nil` if there was no next attempt, `.zero` for an immediate retry.
    public internal(set) var retryDelay: Duration?

    /// Creates an attempt record; the session creates these, and test code may too.
    public init(
        number: Int, request: URLRequest?, response: HTTPURLResponse?, failure: ReboundError.Reason?,
        duration: Duration, retryDelay: Duration? = nil
    ) {
        self.init(
            number: number, request: request, responseHead: response.map(ResponseHead.init), failure: failure,
            duration: duration, retryDelay: retryDelay)
    }

    init(
        number: Int, request: URLRequest?, responseHead: ResponseHead?, failure: ReboundError.Reason?,
        duration: Duration, retryDelay: Duration? = nil
    ) {
        self.number = number
        self.request = request
        self.responseHead = responseHead
        self.failure = failure
        self.duration = duration
        self.retryDelay = retryDelay
    }

    /// The response's status code, if there was a response.
    public var statusCode: Int? { responseHead?.statusCode }

    /// Whether this attempt succeeded.
    public var succeeded: Bool { failure == nil }
}

extension Attempt: CustomStringConvertible {
    /// One line for logs, for example `#2 GET https://example.com/items → 503 (unacceptable status code 503) in
    /// 12 ms, retried after 1 s`; the URL is redacted as ``Redaction/default`` redacts it.
    public var description: String {
        let target = request.map { "\($0.method) \(Redaction.default.string(for: $0.url))" } ?? "(not sent)"
        var line = "#\(number) \(target) → "
        switch (failure, statusCode) {
        case (nil, let status?): line += "\(status)"
        case (let failure?, _): line += "\(failure)"
        case (nil, nil): line += "done"
        }
        line += " in \(duration.logDescription)"
        if let retryDelay { line += ", retried after \(retryDelay.logDescription)" }
        return line
    }
}
