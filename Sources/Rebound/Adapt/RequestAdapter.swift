import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Rewrites a request before each attempt: adds a header, signs it, points it elsewhere.
///
/// The session calls ``adapt(_:context:)`` once per attempt, always starting from the request as the caller gave
/// it (so a header added here is added again on every attempt, never twice). Throwing fails the attempt: the error
/// is offered to the retriers like any other failure, wrapped as ``ReboundError/Reason/adaptationFailed(error:)``.
/// Throwing `CancellationError` cancels the request.
///
/// Adapters are shared by concurrent requests, hence `Sendable`. Return the request you were given when you change
/// nothing: on Linux, copying and mutating a `URLRequest` costs microseconds.
public protocol RequestAdapter: Sendable {
    /// Returns the request to send in this attempt, or throws to fail the attempt.
    func adapt(_ request: URLRequest, context: RequestContext) async throws -> URLRequest
}

/// An adapter made from a closure, for one-off behaviour.
///
/// ```swift
/// let interceptor = Interceptor(adapters: [
///     .adapter { request, _ in
///         var request = request
///         request.setValue("Rebound", forHTTPHeaderField: "User-Agent")
///         return request
///     }
/// ])
/// ```
public struct Adapter: RequestInterceptor {
    /// The closure's signature: the request and the attempt's context in, the request to send out.
    public typealias AdaptHandler = @Sendable (URLRequest, RequestContext) async throws -> URLRequest

    private let handler: AdaptHandler

    /// Creates an adapter that calls `handler` for every attempt.
    public init(_ handler: @escaping AdaptHandler) {
        self.handler = handler
    }

    /// Calls the closure.
    public func adapt(_ request: URLRequest, context: RequestContext) async throws -> URLRequest {
        try await handler(request, context)
    }
}

extension RequestAdapter where Self == Adapter {
    /// An adapter that calls `handler` for every attempt.
    public static func adapter(_ handler: @escaping Adapter.AdaptHandler) -> Adapter {
        Adapter(handler)
    }
}
