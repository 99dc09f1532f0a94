import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// One-line descriptions of the values observers, retriers and callers get, so that printing one never prints a URL's
// query, its user-info or a header: URLs are redacted as `Redaction.default` redacts them, and no header is printed.

extension AttemptOutcome: CustomStringConvertible {
    /// One line, for example `#2 GET https://example.com/items?q=<redacted> → 503 … in 12 ms: retry after 1 s`.
    public var description: String { "\(attempt): \(decision)" }
}

extension RequestOutcome: CustomStringConvertible {
    /// One line, for example `GET https://example.com/items?q=<redacted>: succeeded after 2 attempts in 1.2 s`.
    public var description: String {
        let count = attempts.count == 1 ? "1 attempt" : "\(attempts.count) attempts"
        return "\(originalRequest.method) \(Redaction.default.string(for: originalRequest.url)): \(decision) after "
            + "\(count) in \(elapsed.logDescription)"
    }
}

extension RetryRequest: CustomStringConvertible {
    /// One line, for example `GET https://example.com/items?q=<redacted> after attempt 1 (→ 503)`.
    public var description: String {
        let status = responseHead.map { " (→ \($0.statusCode))" } ?? ""
        return "\(method) \(Redaction.default.string(for: request.url)) after attempt \(attempts.count)\(status)"
    }
}

extension Response: CustomStringConvertible {
    /// One line, for example `200 for GET https://example.com/items?q=<redacted> after 2 attempts`.
    public var description: String {
        let count = attempts.count == 1 ? "1 attempt" : "\(attempts.count) attempts"
        return "\(statusCode) for \(request.method) \(Redaction.default.string(for: request.url)) after \(count)"
    }
}
