/// Thrown when a built-in interceptor is created with an invalid configuration; the message says what is wrong.
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong, for example `"exponentialBackoffBase must be at least 2, got 1"`.
    public let message: String

    /// Creates an error with a message that names the setting, what it must be and what it was.
    public init(_ message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { message }
}
