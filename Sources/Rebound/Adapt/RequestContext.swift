import Foundation

/// What an adapter knows about the attempt it adapts a request for.
public struct RequestContext: Sendable {
    /// An identifier shared by every attempt of one request, and different between requests.
    public let requestID: UUID
    /// The attempt's number, starting at 1.
    public let attempt: Int
    /// The label the caller gave the request, for interceptors that treat kinds of request differently; `nil` if none.
    public let label: String?

    /// Creates a context; the session creates these, and test code may too.
    public init(requestID: UUID = UUID(), attempt: Int = 1, label: String? = nil) {
        self.requestID = requestID
        self.attempt = attempt
        self.label = label
    }

    /// How many retries came before this attempt: `attempt - 1`.
    public var retryCount: Int { attempt - 1 }
}
