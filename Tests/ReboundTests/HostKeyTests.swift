import Foundation
import Testing

@testable import Rebound

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The default host key, read from a URL's spelling in one pass or from the parts Foundation reads.
struct HostKeyTests {
    @Test func aKeyReadFromTheURLsSpellingIsTheKeyFoundationsReadingGives() throws {
        let keyedFromSpelling = [
            "http://127.0.0.1:8080/ok", "https://API.Example.com/x", "https://api.example.com", "HTTP://UP.EXAMPLE:1/",
            "https://api.example.com?x=1", "https://api.example.com#part", "http://[::1]:8080/", "http://[::1:8080]/",
            "http://[FE80::1]:80/", "http://h.example:0/", "http://h.example:/x", "http://h.example:65535",
            "http://a.b-c_d.example:123/path?q=1#f", "ws://x.example:9", "http://trailing.example.:80/",
            "http://1.2.3.4/",
        ]
        let keyedByFoundation = [
            "http://h.example:08080/", "https://user:pw@host.example/", "https://Ex%41mple.com:8443/x", "file:///tmp/x",
            "https://B%C3%9CCHER.example/", "http://[fe80::1%25eth0]:80/",
        ]
        for spelling in keyedFromSpelling + keyedByFoundation {
            let url = try #require(URL(string: spelling))
            let fromSpelling = CircuitBreakerRegistry.hostKey(spelledIn: url.absoluteString)
            #expect((fromSpelling != nil) == keyedFromSpelling.contains(spelling), "\(spelling)")
            if let fromSpelling {
                #expect(fromSpelling == CircuitBreakerRegistry.hostKey(readingParts: url), "\(spelling)")
            }
            #expect(
                CircuitBreakerRegistry.hostKey(for: URLRequest(url: url))
                    == CircuitBreakerRegistry.hostKey(readingParts: url), "\(spelling)")
        }
    }

    @Test func aSpellingOutsideTheCommonOneIsLeftToFoundation() {
        for spelling in [
            "http://[::1]x/", "http://a[b]/", "http://[::1", "http://h:8a/", "http://h:1:2/", "http://h:123456/",
            "mailto:someone", "http://", "://h/", "http:/h/", "http://]h/",
        ] {
            #expect(CircuitBreakerRegistry.hostKey(spelledIn: spelling) == nil, "\(spelling)")
        }
        #expect(CircuitBreakerRegistry.hostKey(spelledIn: "http://[::1]?q") == "[::1]")
        #expect(CircuitBreakerRegistry.hostKey(spelledIn: "http://Host.Example:8080#f") == "host.example:8080")
    }
}
