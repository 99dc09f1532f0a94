import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A part whose credential belongs to some hosts only (an ``AuthenticationInterceptor``): a redirect hop to another
/// origin drops the headers its credential sets, and a hop to one of its hosts gets the credential again.
///
/// Such a part registers through the attempt's context when it adapts (``RequestContext``), so that it takes part in
/// every hop whatever wraps it.
protocol CredentialScope: AnyObject, Sendable {
    /// The header fields the credential is sent in, compared without regard to case.
    var credentialHeaderNames: Set<String> { get }

    /// The header fields, lower-cased, `credential` (one this scope applied) is sent in; none for a value of another
    /// type.
    func headerNames(of credential: any Sendable) -> Set<String>

    /// Applies the current credential to `hop` if its host is one the credential belongs to; otherwise leaves it.
    func authorize(_ hop: inout URLRequest)

    /// Removes `credential`, one this scope applied (of its own credential type), from `request` if the request carries
    /// it (its header fields, whatever their case); otherwise leaves it.
    func withdraw(_ credential: any Sendable, from request: inout URLRequest)
}

/// The rules a session follows redirects by: which responses are redirects, what the next request is, and what it
/// must not carry. Those of the Fetch standard, as browsers and curl apply them.
enum Redirection {
    /// The headers a hop to another origin never carries.
    static let credentialHeaders: Set<String> = ["authorization", "proxy-authorization", "cookie"]

    /// The headers that describe a body, dropped with it when a redirect turns the request into a GET.
    private static let bodyHeaders = [
        "Content-Type", "Content-Length", "Content-Encoding", "Content-Language", "Content-Location",
    ]

    /// The request to send after `response` redirected `sent`, before any stripping; `nil` when it cannot be followed:
    /// no `Location`, one that is not an absolute or relative http(s) URL with a host, or a 307 or 308 whose body is a
    /// stream that was consumed.
    static func nextRequest(after sent: URLRequest, response: ResponseHead) -> URLRequest? {
        guard response.isRedirect,
            let location = response.value(forHTTPHeaderField: "Location")?.trimmingCharacters(in: .whitespaces),
            !location.isEmpty,
            let url = URL(string: location, relativeTo: sent.url)?.absoluteURL,
            let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = url.host, !host.isEmpty
        else { return nil }
        var next = sent
        next.url = url
        let method = sent.method
        let becomesGet =
            switch response.statusCode {
            case 303: method != .get && method != .head
            case 301, 302: method == .post
            default: false
            }
        if becomesGet {
            next.httpMethod = HTTPMethod.get.rawValue
            next.httpBody = nil
            next.httpBodyStream = nil
            for header in bodyHeaders { next.setValue(nil, forHTTPHeaderField: header) }
        } else if sent.httpBodyStream != nil {
            // The stream went with `sent`: replaying it would send an empty or partial body.
            return nil
        }
        return next
    }

    /// Drops from `hop` what it must not carry if it leaves the origin of `sent` (the credential headers, `extra`,
    /// the headers of every scope's current credential and those of each credential a scope `applied` to the attempt,
    /// which a refresh or a logout may have replaced since), then lets each scope apply its credential if the hop's
    /// host is one of its hosts, unless the hop leaves an encrypted scheme for clear text (`https` to `http`).
    static func secure(
        _ hop: inout URLRequest, after sent: URLRequest, stripping extra: Set<String>, scopes: [any CredentialScope],
        applied: [RequestLedger.AppliedCredential]
    ) {
        if !isSameOrigin(hop.url, sent.url) {
            var names = credentialHeaders
            for name in extra { names.insert(name.lowercased()) }
            for scope in scopes {
                for name in scope.credentialHeaderNames { names.insert(name.lowercased()) }
            }
            for credential in applied {
                guard let scope = credential.scope(among: scopes) else { continue }
                names.formUnion(scope.headerNames(of: credential.credential))
            }
            remove(names, from: &hop)
        }
        // A credential never follows a request from an encrypted scheme into clear text, whatever the host.
        guard !isDowngrade(from: sent.url, to: hop.url) else { return }
        for scope in scopes { scope.authorize(&hop) }
    }

    /// Whether a request to `to` that follows one to `from` leaves an encrypted scheme (`https`, `wss`) for clear text.
    static func isDowngrade(from: URL?, to: URL?) -> Bool {
        let encrypted: Set<String> = ["https", "wss"]
        guard let from = from?.scheme?.lowercased(), encrypted.contains(from) else { return false }
        return !encrypted.contains(to?.scheme?.lowercased() ?? "")
    }

    /// Removes every header field of `request` whose name, lower-cased, is one of `names` (lower-cased): each field
    /// however it is spelled, as a request may hold one name in two spellings.
    static func remove(_ names: Set<String>, from request: inout URLRequest) {
        for field in request.allHTTPHeaderFields?.keys.map({ $0 }) ?? [] where names.contains(field.lowercased()) {
            request.setValue(nil, forHTTPHeaderField: field)
        }
    }

    /// Secures `request`, which a part moved from `sent`'s origin to another (an endpoint group), for the credentials
    /// of `scopes`, as a redirect hop is: each credential a scope `applied` to the attempt is removed, whatever the
    /// scope holds by now, then each scope whose hosts the new origin is one of applies its current credential. A
    /// header the caller set stays (the caller chose the group's endpoints). `scopes` is `nil` when the part cannot
    /// know which credentials adapted the request (a context that cannot register): then every header a redirect to
    /// another origin drops is removed. A move from an encrypted scheme to clear text gets no credential.
    static func secureMove(
        _ request: inout URLRequest, from sent: URL, scopes: [any CredentialScope]?,
        applied: [RequestLedger.AppliedCredential]
    ) {
        guard !isSameOrigin(request.url, sent) else { return }
        guard let scopes else { return remove(credentialHeaders, from: &request) }
        for credential in applied { credential.scope(among: scopes)?.withdraw(credential.credential, from: &request) }
        guard !isDowngrade(from: sent, to: request.url) else { return }
        for scope in scopes { scope.authorize(&request) }
    }

    /// Whether two URLs share scheme, host and port (the default port of the scheme when none is given).
    static func isSameOrigin(_ a: URL?, _ b: URL?) -> Bool {
        guard let a, let b else { return false }
        return a.scheme?.lowercased() == b.scheme?.lowercased() && a.host?.lowercased() == b.host?.lowercased()
            && effectivePort(of: a) == effectivePort(of: b)
    }

    /// The port `url` is sent to: the one it names, or its scheme's default port; `nil` for a scheme without one.
    static func effectivePort(of url: URL) -> Int? {
        if let port = url.port { return port }
        switch url.scheme?.lowercased() {
        case "https", "wss": return 443
        case "http", "ws": return 80
        default: return nil
        }
    }
}

extension ResponseHead {
    /// Whether the status is one the session follows: 301, 302, 303, 307 or 308.
    var isRedirect: Bool {
        switch statusCode {
        case 301, 302, 303, 307, 308: true
        default: false
        }
    }
}
