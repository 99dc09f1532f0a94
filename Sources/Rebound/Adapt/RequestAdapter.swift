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
/// Adapters are shared by concurrent requests, hence `Sendable`. The request is passed `consuming`: the adapter owns
/// it, so `var request = request` followed by mutations changes it in place instead of copying it. On Linux a
/// `URLRequest` is a reference underneath, and mutating one that is shared copies all of it; a conformance that
/// declares the parameter without `consuming` still works, but pays that copy. Return the request you were given
/// when you change nothing.
public protocol RequestAdapter: Sendable {
    /// Returns the request to send in this attempt, or throws to fail the attempt.
    func adapt(_ request: consuming URLRequest, context: RequestContext) async throws -> URLRequest
}

/// A part whose adaptation never suspends: a chain calls its ``adaptInPlace`` instead of ``adapt(_:context:)``, without
/// an asynchronous call (Docs/Performance.md, section 1).
///
/// Only the way a part is called differs, never what runs: ``adaptInPlace`` does exactly what `adapt` does, and a
/// wrapper that forwards `adapt` keeps the part's whole behaviour (it is called asynchronously, through `adapt`).
protocol AdaptsInPlace: RequestAdapter {
    /// Adapts a request in place exactly as ``RequestAdapter/adapt(_:context:)`` would; `nil` when adapting may
    /// suspend.
    var adaptInPlace: Adapter.ModifyNowHandler? { get }
}

/// The signature of an adapter's closure, as in Alamofire: the request and the attempt's context in, the request to
/// send out; throwing fails the attempt.
public typealias AdaptHandler = @Sendable (consuming URLRequest, RequestContext) async throws -> URLRequest

/// An adapter made from a closure, for one-off behaviour.
///
/// To change a few fields, prefer ``RequestAdapter/modifying(_:)-(Adapter.ModifyNowHandler)``: its closure mutates
/// the request in place. A closure that starts with `var request = request` works the same, but on Linux it copies the
/// whole request first.
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
public struct Adapter: RequestAdapter, AdaptsInPlace {
    /// The signature of a closure that changes the request in place; it may `await`, or not.
    public typealias ModifyHandler = @Sendable (inout URLRequest, RequestContext) async throws -> Void

    /// The signature of a closure that changes the request in place without suspending.
    public typealias ModifyNowHandler = @Sendable (inout URLRequest, RequestContext) throws -> Void

    /// What the adapter runs.
    fileprivate enum Body: Sendable {
        case adapt(AdaptHandler)
        case modify(ModifyHandler)
        case modifyNow(ModifyNowHandler)
    }

    private let body: Body

    /// Creates an adapter that calls `handler` for every attempt.
    public init(_ handler: @escaping AdaptHandler) {
        body = .adapt(handler)
    }

    fileprivate init(body: Body) {
        self.body = body
    }

    /// Calls the closure.
    public func adapt(_ request: consuming URLRequest, context: RequestContext) async throws -> URLRequest {
        switch body {
        case .adapt(let handler):
            return try await handler(consume request, context)
        case .modify(let modify):
            var request = request
            try await modify(&request, context)
            return request
        case .modifyNow(let modify):
            var request = request
            try modify(&request, context)
            return request
        }
    }

    /// The closure of an adapter that changes the request without suspending, which an ``Interceptor`` calls
    /// directly instead of through ``adapt(_:context:)``; `nil` for any other adapter.
    var adaptInPlace: ModifyNowHandler? {
        if case .modifyNow(let modify) = body { return modify }
        return nil
    }
}

extension RequestAdapter where Self == Adapter {
    /// An adapter that calls `handler` for every attempt.
    public static func adapter(_ handler: @escaping AdaptHandler) -> Adapter {
        Adapter(handler)
    }

    /// An adapter that gives each attempt a fresh body stream from `makeStream`: a request whose body is a stream
    /// can be retried only this way, since a stream set on the request itself is consumed by the first attempt.
    ///
    /// ```swift
    /// let upload = Adapter.bodyStream { InputStream(url: fileURL)! }
    /// let response = try await session.send(request, adapters: [upload])
    /// ```
    public static func bodyStream(_ makeStream: @escaping @Sendable () throws -> InputStream) -> Adapter {
        Adapter(body: .modifyNow { request, _ in request.httpBodyStream = try makeStream() })
    }

    /// An adapter whose closure changes the request in place, without copying it; the closure may `await`.
    ///
    /// ```swift
    /// let auth = Adapter.modifying { request, _ in
    ///     request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
    /// }
    /// ```
    ///
    /// A closure that does not `await` gets ``modifying(_:)-(Adapter.ModifyNowHandler)`` instead, which behaves the
    /// same.
    public static func modifying(_ modify: @escaping Adapter.ModifyHandler) -> Adapter {
        Adapter(body: .modify(modify))
    }

    /// An adapter whose closure changes the request in place, without copying it and without suspending: the
    /// compiler picks this one for a closure that does not `await`, and an ``Interceptor`` calls it directly rather
    /// than through an asynchronous call.
    public static func modifying(_ modify: @escaping Adapter.ModifyNowHandler) -> Adapter {
        Adapter(body: .modifyNow(modify))
    }
}
