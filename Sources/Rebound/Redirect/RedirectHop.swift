import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One redirect an attempt followed, as observers are told it (``AttemptObserver/attemptWasRedirected(_:)``).
public struct RedirectHop: Sendable {
    /// The identifier shared by every attempt of the request.
    public let requestID: UUID
    /// The label the caller gave the request; `nil` if none.
    public let label: String?
    /// The number of the attempt the hop belongs to, starting at 1.
    public let attempt: Int
    /// The hop's number within its attempt, starting at 1.
    public let number: Int
    /// The request that got the redirect.
    public let request: URLRequest
    /// The redirect response; built from ``responseHead`` on first use when the transport answered without an
    /// `HTTPURLResponse`.
    public var response: HTTPURLResponse { responseHead.httpURLResponse }
    /// The status and header fields of the redirect response.
    public let responseHead: ResponseHead
    /// The request sent next: after the method and body rules, the stripping of credentials across origins and the
    /// redirect handler.
    public let next: URLRequest

    /// Creates a hop; the session creates these, and test code may too.
    public init(
        requestID: UUID, label: String?, attempt: Int, number: Int, request: URLRequest, response: HTTPURLResponse,
        next: URLRequest
    ) {
        self.init(
            requestID: requestID, label: label, attempt: attempt, number: number, request: request,
            responseHead: ResponseHead(response), next: next)
    }

    init(
        requestID: UUID, label: String?, attempt: Int, number: Int, request: URLRequest,
        responseHead: ResponseHead, next: URLRequest
    ) {
        self.requestID = requestID
        self.label = label
        self.attempt = attempt
        self.number = number
        self.request = request
        self.responseHead = responseHead
        self.next = next
    }
}

extension RedirectHop: CustomStringConvertible {
    /// One line for logs, for example `#1 hop 1 POST https://a.example/x → 303 → GET https://b.example/y`; URLs are
    /// redacted as ``Redaction/default`` redacts them.
    public var description: String {
        let redaction = Redaction.default
        return "#\(attempt) hop \(number) \(request.method) \(redaction.string(for: request.url)) → "
            + "\(responseHead.statusCode) → \(next.method) \(redaction.string(for: next.url))"
    }
}
