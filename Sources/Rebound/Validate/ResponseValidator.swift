import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Decides whether a response counts as a success; a failure goes to the retriers.
///
/// Validation runs in two places, on every attempt that got a response:
/// 1. **The validator in effect**: the request's, or the session's (``Validator/successfulStatusCodes``, 200..<300, by
///    default), so a 503 reaches the retriers without any extra call.
/// 2. **Then every validator that parts of the chain registered** through the context
///    (``RequestContext/validateResponses(with:)``), on responses the first accepted, in the order they registered:
///    this is how ``JSONBodyRetrier`` fails a 200 whose JSON body says "retry" without the caller setting a validator,
///    behind any wrapper that forwards `adapt`. Conforming alone does not put a part of the chain to work as a
///    validator: nothing is found by its type.
///
/// The first validator that throws fails the attempt: an ``UnacceptableStatusCode`` as
/// ``ReboundError/Reason/unacceptableStatusCode(_:)``, any other error as
/// ``ReboundError/Reason/validationFailed(error:)``. Validators run on the request's task, synchronously: keep them
/// quick, and never block.
///
/// ``Validator`` makes one from status codes or a closure:
///
/// ```swift
/// let validator = Validator.successfulStatusCodes.and { response, data, context in
///     if data.isEmpty, context.label != "ping" { throw EmptyBody() }
/// }
/// ```
public protocol ResponseValidator: Sendable {
    /// Returns when the response is acceptable; throws why it is not: the call the session makes.
    ///
    /// The head carries the status and the header fields; a validator that needs Foundation's response reads
    /// ``ResponseHead/httpURLResponse``, built only when asked for.
    ///
    /// - Parameters:
    ///   - head: The status and header fields of the attempt's response.
    ///   - data: Its body.
    ///   - context: The attempt: its request's identifier, its number and the request's label.
    func validate(_ head: ResponseHead, data: Data, context: RequestContext) throws
}

extension ResponseValidator {
    /// Validates an `HTTPURLResponse`, as ``validate(_:data:context:)`` does its head.
    public func validate(_ response: HTTPURLResponse, data: Data, context: RequestContext) throws {
        try validate(ResponseHead(response), data: data, context: context)
    }

    /// Why this validator rejects the response, as the session reports it; `nil` when it accepts it.
    func reason(for head: ResponseHead, data: Data, context: RequestContext) -> ReboundError.Reason? {
        if let validator = self as? Validator { return validator.check(head, data, context) }
        return Validator.reason(of: { try validate(head, data: data, context: context) })
    }
}
