import Foundation
import Rebound
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Redaction")
struct RedactionTests {
    @Test(arguments: [
        ("Authorization", true), ("proxy-authorization", true), ("COOKIE", true), ("Set-Cookie", true),
        ("X-API-Key", true), ("X-Goog-Api-Key", true), ("X-Auth-Token", true), ("X-Refresh-Token", true),
        ("Client-Secret", true), ("Accept", false), ("Content-Type", false), ("X-Request-Id", false),
        // Credentials in headers named otherwise: Azure API Management, Cloudflare's legacy key, sessions, keys.
        ("Ocp-Apim-Subscription-Key", true), ("X-Auth-Key", true), ("X-Session-Id", true), ("X-Amz-Access-Key", true),
        ("X-Private-Key", true), ("X-Client-Credentials", true), ("X-Passwd", true),
        // Keys that are not secrets, and a challenge worth reading in a log.
        ("Idempotency-Key", false), ("Sec-WebSocket-Key", false), ("WWW-Authenticate", false),
    ])
    func hidesSecretHeaders(name: String, secret: Bool) {
        #expect(Redaction.default.isSecret(header: name) == secret)
        #expect(Redaction.default.value(ofHeader: name, "v") == (secret ? "<redacted>" : "v"))
    }

    @Test(arguments: [
        ("https://a.example/p?token=1&page=2", "https://a.example/p?token=<redacted>&page=<redacted>"),
        ("https://a.example/p?password", "https://a.example/p?password"),
        ("https://a.example/p?secret=&x=%20y", "https://a.example/p?secret=<redacted>&x=<redacted>"),
        ("https://u:p@a.example:8080/p", "https://<redacted>@a.example:8080/p"),
        ("https://u:@a.example/p", "https://<redacted>@a.example/p"),
        ("https://user@a.example:8443/a%20b/c;v=1", "https://<redacted>@a.example:8443/a%20b/c;v=1"),
        ("https://a.example/p#id_token=abc&state=1", "https://a.example/p#id_token=<redacted>&state=<redacted>"),
        ("https://a.example", "https://a.example"),
        // Nothing to hide: shown as the URL's own text.
        ("http://127.0.0.1:41234/ok;v=1", "http://127.0.0.1:41234/ok;v=1"),
        ("https://a.example/p?", "https://a.example/p?"),
        ("https://a.example/p#", "https://a.example/p#"),
    ])
    func hidesEveryQueryValueAndTheUserInfoByDefault(url: String, expected: String) {
        #expect(Redaction.default.string(for: URL(string: url)) == expected)
    }

    @Test(arguments: [
        ("https://a.example/p?token=1&page=2", "https://a.example/p?token=<redacted>&page=2"),
        (
            "https://a.example/p?Access_Token=1&sig=2&keys=3",
            "https://a.example/p?Access_Token=<redacted>&sig=<redacted>&keys=3"
        ),
        ("https://a.example/p?secret=&x=%20y", "https://a.example/p?secret=<redacted>&x=%20y"),
        ("https://a.example/p?%6Bey=1", "https://a.example/p?%6Bey=<redacted>"),
        ("https://a.example/p#id_token=abc&state=1", "https://a.example/p#id_token=<redacted>&state=1"),
        ("https://u:p@a.example:8080/p?page=2", "https://<redacted>@a.example:8080/p?page=2"),
    ])
    func hidesOnlyNamedQueryItemsWhenAskedTo(url: String, expected: String) {
        #expect(Redaction(hidesAllQueryValues: false).string(for: URL(string: url)) == expected)
    }

    @Test(arguments: ["X-My-Secret-Id", "x-apikey", "Refresh_TOKEN", "X-Api_Key-2", "Password"])
    func findsFragmentsAnywhereInTheNameWhateverItsCase(name: String) {
        #expect(Redaction.default.isSecret(header: name))
    }

    @Test(arguments: ["", "Tok", "X-Tokn", "Keep-Alive", "Ünïcode-Header"])
    func aNameWithoutAFragmentIsNotSecret(name: String) {
        #expect(!Redaction.default.isSecret(header: name))
    }

    @Test func isConfigurable() {
        let redaction = Redaction.default.hiding(headers: ["X-Tenant"], queryItems: ["Session"])
        #expect(redaction.isSecret(header: "x-tenant"))
        #expect(
            redaction.string(for: URL(string: "https://a.example/?session=1"))
                == "https://a.example/?session=<redacted>")

        let custom = Redaction(
            headerNames: ["x-a"], headerNameFragments: [], queryItemNames: ["q"], hidesAllQueryValues: false,
            placeholder: "***")
        #expect(!custom.isSecret(header: "Authorization"))
        #expect(custom.string(for: URL(string: "https://a.example/?q=1&token=2")) == "https://a.example/?q=***&token=2")
        #expect(Redaction.none.string(for: URL(string: "https://a.example/?token=2")) == "https://a.example/?token=2")
    }

    /// A `URLError` carrying a failing URL with a secret, as Foundation's errors do.
    private static let secretURL = URL(string: "https://api.example.com/items?access_token=SECRET123")!
    private static let urlError = URLError(
        .timedOut,
        userInfo: [NSURLErrorFailingURLErrorKey: secretURL, "NSErrorFailingURLStringKey": secretURL.absoluteString])
    private static let nsError = NSError(
        domain: "Example", code: 7, userInfo: [NSURLErrorFailingURLErrorKey: secretURL])

    @Test func errorsThatCarryAURLAreDescribedByTheirCodeWhereverTheLibraryPrintsThem() {
        let request = URLRequest(url: Self.secretURL)
        let attempt = Attempt(
            number: 1, request: request, response: nil, failure: .adaptationFailed(error: Self.urlError),
            duration: .zero)
        let reasons: [ReboundError.Reason] = [
            .adaptationFailed(error: Self.urlError), .transportFailed(error: Self.nsError),
            .validationFailed(error: Self.urlError), .decodingFailed(error: Self.nsError),
            .retryAborted(error: Self.urlError, original: .transportFailed(error: Self.urlError)),
            .deadlineExceeded(deadline: .seconds(1), last: .adaptationFailed(error: Self.nsError)),
        ]
        var strings = reasons.flatMap { reason -> [String] in
            let error = ReboundError(reason: reason, originalRequest: request, attempts: [attempt])
            return [
                "\(reason)", error.description, error.localizedDescription, String(reflecting: reason),
            ]
        }
        strings.append(attempt.description)
        strings.append(RetryResult.doNotRetryWithError(Self.urlError).description)

        for string in strings {
            #expect(!string.contains("SECRET123"), "\(string)")
        }
        #expect(
            ReboundError(reason: reasons[0], originalRequest: request).underlyingError as? URLError == Self.urlError)
    }
}

@Suite("Redaction of headers that hold a URL")
struct URLHeaderRedactionTests {
    @Test(arguments: [
        ("Location", "https://a.example/p?token=1", "https://a.example/p?token=<redacted>"),
        ("content-location", "/moved?sig=2#x=3", "/moved?sig=<redacted>#x=<redacted>"),
        ("Referer", "https://u:p@a.example/", "https://<redacted>@a.example/"),
        ("Location", "/plain/path", "/plain/path"),
        ("Location", "not a url?token=1", "not%20a%20url?token=<redacted>"),
        ("Accept", "text/plain?x=1", "text/plain?x=1"),
    ])
    func redactsTheURLInTheValue(name: String, value: String, expected: String) {
        #expect(Redaction.default.value(ofHeader: name, value) == expected)
    }
}
