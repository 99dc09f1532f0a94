// Must not compile: a redirect handler implements `redirect` on a `ResponseHead`, its one requirement; the
// `HTTPURLResponse` form is a convenience for callers. Expected error: "does not conform to protocol 'RedirectHandler'".
import Foundation
import Rebound

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

struct StopAt303: RedirectHandler {
    func redirect(
        _ sent: URLRequest, to next: URLRequest, for response: HTTPURLResponse, context: RequestContext
    ) async -> URLRequest? {
        response.statusCode == 303 ? nil : next
    }
}
