import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The request a caller gave the session, as every record of the request keeps it: the request itself, or, for
/// `send(_:method:headers:body:...)` without headers to a chain that adapts, the URL, method and body it is made of,
/// the request built each time it is read.
///
/// Why: such a send already builds the request the first attempt's adapters change in place, and building the caller's
/// as well would make a second request (on Linux, a reference object of its own) for every send, for a request that
/// only `Response.originalRequest` reads when the first attempt succeeds. Built from the parts, it is equal to the one
/// the caller would have got.
enum OriginalRequest: Sendable {
    case request(URLRequest)
    case parts(url: URL, method: HTTPMethod, body: Data?)

    /// The request, built anew from the parts each time.
    var request: URLRequest {
        switch self {
        case .request(let request): request
        case .parts(let url, let method, let body): URLRequest(url: url, method: method, body: body)
        }
    }

    /// The request's URL, read without building it.
    var url: URL? {
        switch self {
        case .request(let request): request.url
        case .parts(let url, _, _): url
        }
    }

    /// The request's method, read without building it.
    var method: HTTPMethod {
        switch self {
        case .request(let request): request.method
        case .parts(_, let method, _): method
        }
    }

    /// Whether the request's body is a stream, read without building it (parts have none).
    var hasBodyStream: Bool {
        if case .request(let request) = self { return request.httpBodyStream != nil }
        return false
    }
}
