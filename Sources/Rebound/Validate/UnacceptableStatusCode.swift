/// Why a validator rejected a response for its status code alone; the session reports it as
/// ``ReboundError/Reason/unacceptableStatusCode(_:)``.
public struct UnacceptableStatusCode: Error, Sendable, Equatable, CustomStringConvertible {
    /// The status code that was rejected.
    public let statusCode: Int

    /// Creates the error for `statusCode`.
    public init(_ statusCode: Int) {
        self.statusCode = statusCode
    }

    /// For example `unacceptable status code 503`.
    public var description: String { "unacceptable status code \(statusCode)" }
}
