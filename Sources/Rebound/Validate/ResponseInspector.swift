import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An interceptor that also checks every response the validator accepted, for example a 200 whose JSON body
/// reports an error.
///
/// Conform an interceptor to this protocol and the session calls ``inspect(_:data:context:)`` after validation, on
/// each attempt whose response the validator in effect accepted: the session's interceptor's inspectors first, then
/// the request's, in chain order. The first that throws fails the attempt with
/// ``ReboundError/Reason/validationFailed(error:)``, and the failure goes to the retriers like any other. This is
/// how ``JSONBodyRetrier`` retries a 200 without the caller setting a validator as well.
///
/// Inspectors run on the request's task, synchronously; they must be quick and must not block.
public protocol ResponseInspector: Sendable {
    /// Throws when the response, accepted by the validator, is a failure after all.
    func inspect(_ response: HTTPURLResponse, data: Data, context: RequestContext) throws
}
