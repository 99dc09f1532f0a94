import Foundation
import Rebound
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("URLRequest conveniences")
struct URLRequestTests {
    @Test func buildsARequestFromURLMethodHeadersAndBody() {
        let request = URLRequest(url: exampleURL, method: .patch, headers: ["X-A": "1"], body: Data("b".utf8))

        #expect(request.httpMethod == "PATCH")
        #expect(request.method == .patch)
        #expect(request.value(forHTTPHeaderField: "x-a") == "1")
        #expect(request.httpBody == Data("b".utf8))
    }

    @Test func methodDefaultsToGet() {
        var request = URLRequest(url: exampleURL)

        #expect(request.method == .get)
        request.method = .delete
        #expect(request.httpMethod == "DELETE")
    }
}
