import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Adds an `Idempotency-Key` header, the same on every attempt of one request and different between requests, so
/// that a server can recognise a retried POST and not charge twice.
///
/// The key is the request's ``RequestContext/requestID`` (a version-4-format UUID), so it needs no state; like a
/// random UUID, it cannot be guessed from the keys and ids the process sent before, so a server that does not scope
/// keys per client cannot be made to answer one client's retry with another's response. A request that already has
/// the header keeps its own. Only requests whose method is in ``methods`` (POST and PATCH by default) get one. With
/// the header present, ``RetryPolicy`` retries a POST as it would a GET.
///
/// ```swift
/// let session = Session(adapters: [IdempotencyKeyAdapter()], retriers: [RetryPolicy()])
/// ```
public struct IdempotencyKeyAdapter: RequestAdapter {
    /// The header's name: `Idempotency-Key`.
    public static let headerName = "Idempotency-Key"
    /// The default ``methods``: POST and PATCH.
    public static let defaultMethods: Set<HTTPMethod> = [.post, .patch]

    /// The methods whose requests get a key; POST and PATCH by default.
    public let methods: Set<HTTPMethod>

    /// Creates the adapter for requests whose method is in `methods`; POST and PATCH by default.
    public init(methods: Set<HTTPMethod> = defaultMethods) {
        self.methods = methods
    }

    /// Adds the request's key, unless the method is not in ``methods`` or the request has a key already.
    public func adapt(_ request: consuming URLRequest, context: RequestContext) async throws -> URLRequest {
        addKey(to: &request, context: context)
        return request
    }

    /// Adds the request's key in place, unless its method is not in ``methods`` or it has a key already (an empty
    /// value is no key, and is replaced).
    private func addKey(to request: inout URLRequest, context: RequestContext) {
        guard methods.contains(request.method), request.idempotencyKey == nil else { return }
        request.setValue(context.requestID.uuidString, forHTTPHeaderField: Self.headerName)
    }
}

extension IdempotencyKeyAdapter: AdaptsInPlace {
    /// Adds the key as ``adapt(_:context:)`` does.
    var adaptInPlace: Adapter.ModifyNowHandler? {
        { [self] request, context in addKey(to: &request, context: context) }
    }
}

extension RequestAdapter where Self == IdempotencyKeyAdapter {
    /// An ``IdempotencyKeyAdapter`` for POST and PATCH requests.
    public static var idempotencyKey: IdempotencyKeyAdapter { IdempotencyKeyAdapter() }
}

extension URLRequest {
    /// Whether the request may be sent more than once: its method is in `methods`, or it carries an `Idempotency-Key`
    /// header that is not empty. What ``RetryPolicy`` asks before a retry and the session before a hedge.
    func isRepeatable(methods: Set<HTTPMethod>) -> Bool {
        methods.contains(method) || idempotencyKey != nil
    }

    /// The request's `Idempotency-Key`, if it has one that is not empty: a header of spaces only promises nothing.
    var idempotencyKey: String? {
        guard let key = value(forHTTPHeaderField: IdempotencyKeyAdapter.headerName),
            key.contains(where: { $0 != " " && $0 != "\t" })
        else { return nil }
        return key
    }
}
