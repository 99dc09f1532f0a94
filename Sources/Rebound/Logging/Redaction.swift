import Foundation

/// Which header fields and query items count as secrets, and how a URL or a header looks once they are hidden.
///
/// Matching ignores case. A header is secret when its name is in ``headerNames`` or contains one of
/// ``headerNameFragments``. By default every query item's value is hidden (``hidesAllQueryValues``); otherwise a query
/// item is secret when its name is in ``queryItemNames``. A URL's user-info (`user:password@`) is always hidden.
/// Secrets are replaced by ``placeholder``.
public struct Redaction: Sendable {
    /// The default ``headerNames``: `Authorization`, `Proxy-Authorization`, `Cookie`, `Set-Cookie`, `X-API-Key`,
    /// `API-Key`, `X-Auth-Token`.
    public static let defaultHeaderNames: Set<String> = [
        "authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key", "x-auth-token",
    ]
    /// The default ``headerNameFragments``: `api-key`, `apikey`, `api_key`, `token`, `secret`, `password`,
    /// `passwd`, `credential`, `session`, `x-auth`, `access-key`, `access_key`, `accesskey`, `private-key`,
    /// `private_key`, `privatekey`, `subscription-key` (Azure API Management's key, say, or Cloudflare's `X-Auth-Key`).
    public static let defaultHeaderNameFragments: [String] = [
        "api-key", "apikey", "api_key", "token", "secret", "password", "passwd", "credential", "session", "x-auth",
        "access-key", "access_key", "accesskey", "private-key", "private_key", "privatekey", "subscription-key",
    ]
    /// The default ``queryItemNames``: `token`, `access_token`, `refresh_token`, `id_token`, `api_key`, `apikey`,
    /// `key`, `password`, `secret`, `client_secret`, `signature`, `sig`.
    public static let defaultQueryItemNames: Set<String> = [
        "token", "access_token", "refresh_token", "id_token", "api_key", "apikey", "key", "password", "secret",
        "client_secret", "signature", "sig",
    ]
    /// The default redaction.
    public static let `default` = Redaction()
    /// A redaction that hides nothing but a URL's user-info; for tests and trusted local logs only.
    public static let none = Redaction(
        headerNames: [], headerNameFragments: [], queryItemNames: [], hidesAllQueryValues: false)

    /// Header names whose values are hidden, in lower case; ``defaultHeaderNames`` by default.
    public let headerNames: Set<String>
    /// Fragments that make any header name containing them secret, in lower case; ``defaultHeaderNameFragments``
    /// by default.
    public let headerNameFragments: [String]
    /// Query item names whose values are hidden when ``hidesAllQueryValues`` is `false`, in lower case;
    /// ``defaultQueryItemNames`` by default.
    public let queryItemNames: Set<String>
    /// Whether the value of every query item is hidden, whatever its name; `true` by default, so that no query value
    /// reaches a log line or an error's description.
    public let hidesAllQueryValues: Bool
    /// What a secret value is replaced with; `<redacted>` by default.
    public let placeholder: String

    /// Creates a redaction; names are matched without regard to case.
    ///
    /// - Parameters:
    ///   - headerNames: Header names whose values are hidden; ``defaultHeaderNames`` by default.
    ///   - headerNameFragments: Fragments that make a header name secret; ``defaultHeaderNameFragments`` by default.
    ///   - queryItemNames: Query item names whose values are hidden when not all are; ``defaultQueryItemNames`` by
    ///     default.
    ///   - hidesAllQueryValues: Whether every query item's value is hidden; `true` by default.
    ///   - placeholder: What a secret value is replaced with; `<redacted>` by default.
    public init(
        headerNames: Set<String> = defaultHeaderNames, headerNameFragments: [String] = defaultHeaderNameFragments,
        queryItemNames: Set<String> = defaultQueryItemNames, hidesAllQueryValues: Bool = true,
        placeholder: String = "<redacted>"
    ) {
        self.headerNames = Set(headerNames.map { $0.lowercased() })
        self.headerNameFragments = headerNameFragments.map { $0.lowercased() }
        self.queryItemNames = Set(queryItemNames.map { $0.lowercased() })
        self.hidesAllQueryValues = hidesAllQueryValues
        self.placeholder = placeholder
    }

    /// A copy that also hides the header and query item names given.
    public func hiding(headers: Set<String> = [], queryItems: Set<String> = []) -> Redaction {
        Redaction(
            headerNames: headerNames.union(headers), headerNameFragments: headerNameFragments,
            queryItemNames: queryItemNames.union(queryItems), hidesAllQueryValues: hidesAllQueryValues,
            placeholder: placeholder)
    }

    /// Whether a header with this name holds a secret.
    public func isSecret(header name: String) -> Bool {
        let name = name.lowercased()
        return headerNames.contains(name) || headerNameFragments.contains { Self.utf8(of: name, contains: $0) }
    }

    /// Whether `needle`'s UTF-8 bytes occur in `haystack`'s. A plain byte search: Foundation's `contains` and the
    /// standard library's `firstRange(of:)` compare characters rather than bytes (Foundation through `NSString` on
    /// Linux), and a log line checks every header name against every fragment.
    private static func utf8(of haystack: String, contains needle: String) -> Bool {
        var haystack = haystack
        var needle = needle
        return haystack.withUTF8 { haystack in
            needle.withUTF8 { needle in
                guard !needle.isEmpty else { return true }
                guard needle.count <= haystack.count else { return false }
                for start in 0...(haystack.count - needle.count) {
                    var matched = 0
                    while matched < needle.count, haystack[start + matched] == needle[matched] { matched += 1 }
                    if matched == needle.count { return true }
                }
                return false
            }
        }
    }

    /// The header's value, or the placeholder if the header is secret; the value of a header that holds a URL
    /// (`Location`, `Content-Location`, `Referer`) is redacted as ``string(for:)`` redacts a URL.
    public func value(ofHeader name: String, _ value: String) -> String {
        if isSecret(header: name) { return placeholder }
        guard Self.urlHeaderNames.contains(name.lowercased()) else { return value }
        guard let url = URL(string: value) else { return String(value.prefix { $0 != "?" && $0 != "#" }) }
        return string(for: url)
    }

    /// The headers whose value is a URL, lowercased.
    private static let urlHeaderNames: Set<String> = ["location", "content-location", "referer"]

    /// The URL as text with the values of secret query items (in the query and in the fragment; every one by default)
    /// and any user-info replaced by the placeholder.
    ///
    /// A URL that cannot be taken apart is shown without its query and fragment, so that nothing secret can leak.
    public func string(for url: URL?) -> String {
        guard let url else { return "(no URL)" }
        // Nothing to hide without a query, a fragment or user-info: skip taking the URL apart.
        if url.query == nil, url.fragment == nil, url.user == nil, url.password == nil { return url.absoluteString }
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            let text = url.absoluteString
            return String(text.prefix { $0 != "?" && $0 != "#" })
        }
        let query = components.percentEncodedQuery
        let fragment = components.percentEncodedFragment
        components.percentEncodedQuery = nil
        components.percentEncodedFragment = nil
        // The placeholder's characters may not be allowed in a URL: mark the user-info with safe ones, then swap.
        let marker = "rebound-redacted-user-info"
        if components.percentEncodedUser != nil || components.percentEncodedPassword != nil {
            components.percentEncodedPassword = nil
            components.percentEncodedUser = marker
        }
        guard var text = components.string else { return "(unprintable URL)" }
        text = text.replacingOccurrences(of: "//\(marker)@", with: "//\(placeholder)@")
        if let query { text += "?" + redacted(items: query) }
        if let fragment { text += "#" + redacted(items: fragment) }
        return text
    }

    /// `name=value&…` with the values of secret names replaced; parts that are not `name=value` are kept as they are.
    private func redacted(items: String) -> String {
        items.split(separator: "&", omittingEmptySubsequences: false).map { item -> String in
            guard let equals = item.firstIndex(of: "=") else { return String(item) }
            let name = String(item[..<equals])
            guard !hidesAllQueryValues else { return name + "=" + placeholder }
            let decoded = (name.removingPercentEncoding ?? name).lowercased()
            return queryItemNames.contains(decoded) ? name + "=" + placeholder : String(item)
        }.joined(separator: "&")
    }
}

extension Redaction {
    /// How the library prints an error it wraps, in descriptions and log lines: a `URLError` (or an error that carries
    /// a failing URL, as Foundation's do) as its domain and code only, since its own description prints the URL, query
    /// included; a ``ReboundError`` (another request's, as an authenticator's refresh that failed) in brackets, so
    /// that where its line ends and the wrapping one goes on reads plainly; any other error as it describes itself. The
    /// error itself stays untouched where code asks for it.
    static func describe(_ error: any Error) -> String {
        if let urlError = error as? URLError { return urlError.code.logDescription }
        if error is ReboundError { return "[\(error)]" }
        let bridged = error as NSError
        let urlKeys = [NSURLErrorFailingURLErrorKey, "NSErrorFailingURLStringKey"]
        if urlKeys.contains(where: { bridged.userInfo[$0] != nil }) {
            return "\(bridged.domain) error \(bridged.code)"
        }
        return String(describing: error)
    }
}
