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
            "https://B%C3%9CCHER.example/", "http://[fe80::1%25eth0]:80/", "http://[example.com]/",
            "http://[1.2.3.4]:8/",
            "http://[v1.x]/", "http://[]/", "//api.example.com/r?next=https://other.example/",
            "/cb?u=http://b.example/",
            "a?x=ftp://h/",
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

    @Test func overGeneratedSpellingsTheTwoReadingsNeverDisagree() {
        // A fixed sequence of spellings built from the bytes that matter in an authority, the same on every run.
        let schemes = ["http", "HTTPS", "h-t.t+p", "1x", "", "ws"]
        let pieces = [
            "a", "Z", "0", "9", ":", "[", "]", "@", "%41", ".", "-", "_", "~", "!", "$", "&", "'", "(", ")", "*", "+",
            ",", ";", "=", "/", "?", "#", "::1", "80", "00", "65536",
        ]
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        var compared = 0
        for _ in 0..<20_000 {
            var spelling = schemes[next(schemes.count)] + "://"
            for _ in 0..<next(9) { spelling += pieces[next(pieces.count)] }
            guard let url = URL(string: spelling), url.baseURL == nil else { continue }
            guard let fromSpelling = CircuitBreakerRegistry.hostKey(spelledIn: url.absoluteString) else { continue }
            compared += 1
            #expect(fromSpelling == CircuitBreakerRegistry.hostKey(readingParts: url), "\(spelling)")
        }
        // Enough of them are of the common spelling for the comparison to mean something.
        #expect(compared > 1_000)
    }
}
