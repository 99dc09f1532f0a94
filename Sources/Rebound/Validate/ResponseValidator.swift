import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Decides whether a response counts as a success; a failure goes to the retriers.
///
/// A session validates every response, by default with ``successfulStatusCodes`` (200..<300), so a 503 reaches
/// the retriers without any extra call. A validator sees the status, the headers and the body, so it can turn a
/// 200 whose JSON reports an error into a failure. Validators combine with `and`; the first failure wins.
///
/// ```swift
/// let validator = ResponseValidator.successfulStatusCodes.and { response, data in
///     if data.isEmpty { throw EmptyBody() }
/// }
/// ```
public struct ResponseValidator: Sendable {
    private let check: @Sendable (HTTPURLResponse, Data) -> ReboundError.Reason?

    private init(check: @escaping @Sendable (HTTPURLResponse, Data) -> ReboundError.Reason?) {
        self.check = check
    }

    /// Creates a validator from a closure that throws when the response is not acceptable.
    ///
    /// The error thrown is kept as ``ReboundError/Reason/validationFailed(error:)``.
    public init(_ validate: @escaping @Sendable (HTTPURLResponse, Data) throws -> Void) {
        self.init { response, data in
            do {
                try validate(response, data)
                return nil
            } catch {
                return .validationFailed(error: error)
            }
        }
    }

    /// Accepts a status in 200..<300; the session's default.
    public static let successfulStatusCodes = acceptableStatusCodes(200..<300)

    /// Accepts every response, whatever its status.
    public static let acceptAll = ResponseValidator { _, _ in nil }

    /// Accepts the status codes in `range`; any other fails with ``ReboundError/Reason/unacceptableStatusCode(_:)``.
    public static func acceptableStatusCodes(_ range: Range<Int>) -> ResponseValidator {
        ResponseValidator { response, _ in
            range.contains(response.statusCode) ? nil : .unacceptableStatusCode(response.statusCode)
        }
    }

    /// Accepts the status codes in `range`; any other fails with ``ReboundError/Reason/unacceptableStatusCode(_:)``.
    public static func acceptableStatusCodes(_ range: ClosedRange<Int>) -> ResponseValidator {
        ResponseValidator { response, _ in
            range.contains(response.statusCode) ? nil : .unacceptableStatusCode(response.statusCode)
        }
    }

    /// Accepts the status codes listed; any other fails with ``ReboundError/Reason/unacceptableStatusCode(_:)``.
    public static func acceptableStatusCodes(_ codes: Set<Int>) -> ResponseValidator {
        ResponseValidator { response, _ in
            codes.contains(response.statusCode) ? nil : .unacceptableStatusCode(response.statusCode)
        }
    }

    /// Runs this validator, then `other` if this one passed.
    public func and(_ other: ResponseValidator) -> ResponseValidator {
        ResponseValidator { response, data in
            check(response, data) ?? other.check(response, data)
        }
    }

    /// Runs this validator, then the closure if this one passed; the closure's error is kept as
    /// ``ReboundError/Reason/validationFailed(error:)``.
    public func and(_ validate: @escaping @Sendable (HTTPURLResponse, Data) throws -> Void) -> ResponseValidator {
        and(ResponseValidator(validate))
    }

    /// Returns why the response is not acceptable, or `nil` when it is.
    public func validate(_ response: HTTPURLResponse, data: Data) -> ReboundError.Reason? {
        check(response, data)
    }
}
