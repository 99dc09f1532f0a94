// Must not compile: a transport implements `exchange(_:)`, its one requirement; `send(_:)` is a convenience on top
// of it, so a transport that implements only `send` is no transport.
// Expected error: "does not conform to protocol 'HTTPTransport'".
import Foundation
import Rebound

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

struct SendOnlyTransport: HTTPTransport {
    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        (Data(), HTTPURLResponse(url: request.url!, statusCode: 200, httpVersion: nil, headerFields: nil)!)
    }
}
