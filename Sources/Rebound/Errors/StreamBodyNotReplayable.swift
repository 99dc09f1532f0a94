/// Why a request whose body is a stream was not retried: its first attempt consumed the stream, and a retry would send
/// an empty or partial body.
///
/// The request ends with ``ReboundError/Reason/retryAborted(error:original:)``, which keeps the attempt's own failure.
/// To make such a request retryable, give the body through an adapter that makes a fresh stream for each attempt,
/// ``RequestAdapter/bodyStream(_:)``, rather than in the request itself.
public struct StreamBodyNotReplayable: Error, Sendable, Equatable, CustomStringConvertible {
    /// Creates the error; the session creates it, and test code may too.
    public init() {}

    /// `the request's body is a stream, which cannot be replayed`.
    public var description: String { "the request's body is a stream, which cannot be replayed" }
}
