import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Decides what happens when an attempt gets a redirect (301, 302, 303, 307 or 308 with a `Location`): follow it,
/// follow a rewritten request, or stop and hand the 3xx response to the chain.
///
/// The session follows redirects itself (transports return a 3xx as it came), one hop after another within the same
/// attempt, and asks the handler before each hop with the request it would send next. That request already follows
/// the rules of the Fetch standard and curl: a 303 (and a 301 or 302 after a POST) becomes a GET without a body, a 307
/// or 308 keeps the method and the body, and a hop that leaves the origin (scheme, host and port) does not carry
/// `Authorization`, `Proxy-Authorization`, `Cookie`, the handler's ``strippedHeaders`` or the headers of a credential
/// whose hosts do not include the hop's host. The same stripping applies to whatever the handler returns, so no
/// handler can send a credential outside its scope. ``Redirector`` is the built-in handler.
///
/// The session's handler applies to its requests (``Redirector/follow`` by default); a request's own handler replaces
/// it for that request. A handler is shared by every request of the session, from many tasks at once.
///
/// A handler implements ``redirect(_:to:for:context:)``, on the response's ``ResponseHead``; the other two
/// requirements have defaults: ``maximumRedirects`` (20) and ``strippedHeaders`` (none).
public protocol RedirectHandler: Sendable {
    /// The most hops one attempt follows; past it, the attempt fails with `URLError(.httpTooManyRedirects)`.
    ///
    /// ``Redirector/defaultMaximumRedirects`` (20, as in the Fetch standard) unless the handler says otherwise.
    var maximumRedirects: Int { get }

    /// The headers, besides `Authorization`, `Proxy-Authorization` and `Cookie`, that a hop to another origin drops;
    /// none by default.
    var strippedHeaders: Set<String> { get }

    /// Returns the request to send for the next hop (`next` to follow, a changed copy to rewrite the hop), or `nil` to
    /// stop and hand the redirect to the chain as the attempt's response: the call the session makes.
    ///
    /// - Parameters:
    ///   - sent: The request that got the redirect.
    ///   - next: The request the session would send next.
    ///   - head: The status and header fields of the redirect response (``ResponseHead/httpURLResponse`` builds
    ///     Foundation's response when asked for).
    ///   - context: The attempt the hop belongs to.
    func redirect(
        _ sent: URLRequest, to next: URLRequest, for head: ResponseHead, context: RequestContext
    ) async -> URLRequest?
}

extension RedirectHandler {
    /// Asks about a redirect given as an `HTTPURLResponse`, as ``redirect(_:to:for:context:)`` does for its head.
    public func redirect(
        _ sent: URLRequest, to next: URLRequest, for response: HTTPURLResponse, context: RequestContext
    ) async -> URLRequest? {
        await redirect(sent, to: next, for: ResponseHead(response), context: context)
    }

    /// 20, as in the Fetch standard.
    public var maximumRedirects: Int { Redirector.defaultMaximumRedirects }

    /// None.
    public var strippedHeaders: Set<String> { [] }
}

/// The built-in ``RedirectHandler``: follow every redirect, follow none, or rewrite each hop with a closure; Alamofire's
/// `Redirector`, with a limit on the hops and the headers to drop across origins.
///
/// ```swift
/// let session = Session(redirectHandler: Redirector.follow)              // the default
/// let pinned = Session(redirectHandler: Redirector(behavior: .modify { sent, next, _ in
///     next.url?.host == sent.url?.host ? next : nil                       // stay on one host
/// }))
/// ```
public struct Redirector: RedirectHandler {
    /// The rewriting closure of ``Behavior/modify(_:)``: gets the request that got the redirect, the request the
    /// session would send next and the redirect response; returns the request to send, or `nil` to stop.
    public typealias Modification =
        @Sendable (_ sent: URLRequest, _ next: URLRequest, _ response: HTTPURLResponse) async -> URLRequest?

    /// What the redirector does with a redirect.
    public enum Behavior: Sendable {
        /// Follows the redirect.
        case follow
        /// Stops and hands the 3xx response to the chain.
        case doNotFollow
        /// Sends the request the closure returns, or stops when it returns `nil`.
        case modify(Modification)
    }

    /// 20 hops, as in the Fetch standard (browsers); curl allows 50, URLSession 16.
    public static let defaultMaximumRedirects = 20

    /// Follows every redirect, up to 20 hops.
    public static let follow = Redirector(behavior: .follow)

    /// Follows none: a 3xx reaches the chain as the attempt's response.
    public static let doNotFollow = Redirector(behavior: .doNotFollow)

    /// What the redirector does with a redirect.
    public let behavior: Behavior
    /// The most hops one attempt follows.
    public let maximumRedirects: Int
    /// The headers, besides `Authorization`, `Proxy-Authorization` and `Cookie`, that a hop to another origin drops.
    public let strippedHeaders: Set<String>

    /// Creates a redirector.
    ///
    /// - Parameters:
    ///   - behavior: What to do with a redirect.
    ///   - maximumRedirects: The most hops one attempt follows, zero or more; 20 by default. A negative value traps.
    ///   - strippedHeaders: Headers that a hop to another origin drops besides `Authorization`, `Proxy-Authorization`
    ///     and `Cookie` (an API key header, say); none by default. Compared without regard to case.
    public init(
        behavior: Behavior, maximumRedirects: Int = Redirector.defaultMaximumRedirects,
        strippedHeaders: Set<String> = []
    ) {
        ConfigurationError.trapIfInvalid { () throws(ConfigurationError) in
            try Self.check(maximumRedirects: maximumRedirects)
        }
        self.behavior = behavior
        self.maximumRedirects = maximumRedirects
        self.strippedHeaders = strippedHeaders
    }

    /// Creates a redirector from values read at run time, throwing ``ConfigurationError`` for a negative
    /// `maximumRedirects` instead of trapping.
    public static func validated(
        behavior: Behavior, maximumRedirects: Int = Redirector.defaultMaximumRedirects,
        strippedHeaders: Set<String> = []
    ) throws(ConfigurationError) -> Redirector {
        try check(maximumRedirects: maximumRedirects)
        return Redirector(behavior: behavior, maximumRedirects: maximumRedirects, strippedHeaders: strippedHeaders)
    }

    private static func check(maximumRedirects: Int) throws(ConfigurationError) {
        guard maximumRedirects >= 0 else {
            throw ConfigurationError(
                field: "Redirector.maximumRedirects", problem: "must be 0 or more, got \(maximumRedirects)")
        }
    }

    /// Follows, stops or rewrites as ``behavior`` says; only a modification gets the head's `HTTPURLResponse`.
    public func redirect(
        _ sent: URLRequest, to next: URLRequest, for head: ResponseHead, context: RequestContext
    ) async -> URLRequest? {
        switch behavior {
        case .follow: next
        case .doNotFollow: nil
        case .modify(let modification): await modification(sent, next, head.httpURLResponse)
        }
    }
}
