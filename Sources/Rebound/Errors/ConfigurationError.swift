/// Thrown by a `validated(...)` factory when a configuration that arrived at run time is invalid; the message says
/// what is wrong.
///
/// The initializers of the built-in configurations do not throw: written as literals, an invalid value is a
/// programming error, so they trap, with the same message. Use their `validated(...)` factories for
/// values read at run time, such as remote configuration.
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The setting that is wrong, as `Type.property`, for example `"RetryPolicy.retryLimit"`.
    public let field: String
    /// What is wrong, a sentence that starts with ``field``, for example
    /// `"RetryPolicy.retryLimit must be 0 or more, got -1"`.
    public let message: String

    /// Creates an error whose ``message`` is `field`, a space and `problem`.
    ///
    /// - Parameters:
    ///   - field: The setting that is wrong, as `Type.property`, for example `"RetryPolicy.retryLimit"`.
    ///   - problem: What it must be and what it was, for example `"must be 0 or more, got -1"`.
    public init(field: String, problem: String) {
        self.field = field
        self.message = "\(field) \(problem)"
    }

    /// The message.
    public var description: String { message }

    /// Runs `check` and traps with its error's message when it throws: the checks of a non-throwing initializer,
    /// whose invalid literal is a programming error. `fatalError` rather than `preconditionFailure`, so that an
    /// optimized build prints the message too (and `-Ounchecked` does not skip the check).
    static func trapIfInvalid(
        _ check: () throws(ConfigurationError) -> Void, file: StaticString = #fileID, line: UInt = #line
    ) {
        do {
            try check()
        } catch {
            fatalError(error.message, file: file, line: line)
        }
    }
}
