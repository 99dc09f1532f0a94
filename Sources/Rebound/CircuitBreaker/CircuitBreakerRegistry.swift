import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One ``CircuitBreaker`` per upstream, created on first use and shared by every session that uses the registry.
///
/// Put the registry in a chain as an adapter: each attempt goes through the breaker of its key (by default the
/// URL's host, with the port when the URL names one), so one failing upstream trips its own breaker and no other.
/// Requests whose key is `nil` go through untouched.
///
/// The registry is a class whose table is behind a lock; every breaker it creates has the registry's configuration
/// and clock. Share one instance between sessions to share the breakers. It forgets the breaker of a host that was not
/// used lately once that breaker is back at rest (closed, no failure counted, nothing in flight), and keeps at most
/// `maximumHosts` breakers (see <doc:SecurityGuide>); a breaker forgotten is made anew, closed, on the host's next
/// request.
///
/// ```swift
/// let breakers = CircuitBreakerRegistry()
/// let payments = Session(adapters: [breakers], retriers: [RetryPolicy()])
/// let search = Session(adapters: [breakers])
/// ```
public final class CircuitBreakerRegistry: RequestAdapter {
    /// Picks the breaker for a request: the request's key, or `nil` to let it through without one.
    public typealias KeyFunction = @Sendable (URLRequest) -> String?

    /// The configuration of every breaker the registry creates.
    public let configuration: CircuitBreaker.Configuration

    private let keyFunction: KeyFunction
    private let makeBreaker: @Sendable (String) -> CircuitBreaker
    /// The breakers by key; a breaker back at rest is at rest (see `HostTable`).
    private let table: Locked<HostTable<CircuitBreaker>>
    private let broadcast: Broadcast<CircuitBreaker.Transition>

    /// Creates an empty registry.
    ///
    /// - Parameters:
    ///   - configuration: The configuration of every breaker; ``CircuitBreaker/Configuration/default`` by default.
    ///   - clock: The clock of every breaker; `ContinuousClock` by default.
    ///   - key: Picks a request's breaker; ``hostKey(for:)`` (the host, and the port when the URL names one) by
    ///     default.
    ///   - onTransition: Called after every transition of any of the breakers; none by default.
    ///   - maximumHosts: The most breakers the registry keeps, at least 1; 10,000 by default. At the cap, a new host
    ///     makes the registry forget the breaker it used least lately, whatever its state (see <doc:SecurityGuide>).
    public init<C: Clock>(
        configuration: CircuitBreaker.Configuration = .default, clock: C = ContinuousClock(),
        key: @escaping KeyFunction = CircuitBreakerRegistry.hostKey,
        onTransition: (@Sendable (CircuitBreaker.Transition) -> Void)? = nil, maximumHosts: Int = 10_000
    ) where C.Duration == Duration {
        HostTable<CircuitBreaker>.trapIfInvalid(maximumHosts, owner: "CircuitBreakerRegistry")
        self.table = Locked(HostTable(capacity: maximumHosts))
        let broadcast = Broadcast<CircuitBreaker.Transition>()
        self.configuration = configuration
        self.keyFunction = key
        self.broadcast = broadcast
        self.makeBreaker = { key in
            CircuitBreaker(
                key: key, configuration: configuration, clock: clock, relay: broadcast, onTransition: onTransition)
        }
    }

    /// The default key: the URL's host in lower case, followed by `:port` when the URL names a port; `nil` for a URL
    /// without a host.
    @Sendable public static func hostKey(for request: URLRequest) -> String? {
        guard let url = request.url else { return nil }
        return HostKey.fast(url.absoluteString) ?? HostKey.parsed(url)
    }

    /// The breaker for `key`, created closed if there is none yet (or the registry forgot it).
    public func breaker(for key: String) -> CircuitBreaker {
        table.withLock { table in
            // The registry's lock, then a breaker's, to ask whether it is at rest: a breaker never takes the
            // registry's lock.
            table.update(key, make: { makeBreaker(key) }, isAtRest: { $0.isAtRest }) { $0 }
        }
    }

    /// The breakers the registry keeps, by key.
    public var breakers: [String: CircuitBreaker] {
        table.withLock { $0.all }
    }

    /// A stream of every transition of every breaker from now on; it ends when the registry is released.
    ///
    /// Transitions of one breaker arrive in the order they happened.
    public func transitions() -> AsyncStream<CircuitBreaker.Transition> {
        broadcast.subscribe()
    }

    /// Resets every breaker; see ``CircuitBreaker/reset()``.
    public func resetAll() {
        for breaker in breakers.values { breaker.reset() }
    }

    /// Lets the attempt through its key's breaker, or throws ``CircuitBreakerOpenError``; the breaker registers
    /// through the context to hear how the attempt ends.
    public func adapt(_ request: consuming URLRequest, context: RequestContext) async throws -> URLRequest {
        try admit(request, context: context)
        return request
    }

    /// Lets the attempt through its key's breaker, or throws; a request without a key goes through.
    private func admit(_ request: URLRequest, context: RequestContext) throws(CircuitBreakerOpenError) {
        guard let key = keyFunction(request) else { return }
        try breaker(for: key).admit(context)
    }
}

extension CircuitBreakerRegistry: AdaptsInPlace {
    /// Admits the attempt as ``adapt(_:context:)`` does, leaving the request unchanged.
    var adaptInPlace: Adapter.ModifyNowHandler? {
        { [self] request, context in try admit(request, context: context) }
    }
}

/// The work of ``CircuitBreakerRegistry/hostKey(for:)``, which runs on every attempt through a registry and a budget.
///
/// Foundation's `host`, `port` and `lowercased()` each walk the URL anew, and a chain with a registry and a budget
/// asks twice per attempt. The common URL (an ASCII host, no user information, no percent sign, no IPv6 literal) is
/// read here in one pass over its string instead; anything else takes Foundation's way, so the key is always what
/// `host` and `port` say.
enum HostKey {
    /// The key Foundation's accessors give.
    static func parsed(_ url: URL) -> String? {
        guard let host = url.host?.lowercased(), !host.isEmpty else { return nil }
        return url.port.map { "\(host):\($0)" } ?? host
    }

    /// The key of an absolute URL string read in one pass, or `nil` when the string is not one the pass handles
    /// (then ``parsed(_:)`` decides, `nil` included).
    static func fast(_ string: String) -> String? {
        var string = string
        return string.withUTF8 { bytes -> String? in
            let count = bytes.count
            var index = 0
            // The scheme (letters, digits, "+", "-", "."), then "://"; or "//" alone.
            while index < count, isSchemeByte(bytes[index]) { index += 1 }
            if index > 0 {
                guard index < count, bytes[index] == UInt8(ascii: ":") else { return nil }
                index += 1
            }
            guard index + 1 < count, bytes[index] == UInt8(ascii: "/"), bytes[index + 1] == UInt8(ascii: "/") else {
                return nil
            }
            index += 2
            let hostStart = index
            var colon = -1
            var hasUppercase = false
            while index < count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") { break }
                switch byte {
                // User information, percent-encoding, IPv6 literals and anything not ASCII: Foundation's way.
                case UInt8(ascii: "@"), UInt8(ascii: "%"), UInt8(ascii: "["), 0x80...: return nil
                case UInt8(ascii: ":"):
                    guard colon < 0 else { return nil }
                    colon = index
                case UInt8(ascii: "A")...UInt8(ascii: "Z"):
                    if colon < 0 { hasUppercase = true }
                default: break
                }
                index += 1
            }
            let hostEnd = colon < 0 ? index : colon
            guard hostEnd > hostStart else { return nil }
            // The key is the string's own bytes, the host lower-cased: "host" or "host:port" (a port written with
            // leading zeros is Foundation's to read; an empty one is left out).
            var keyEnd = hostEnd
            if colon >= 0, colon + 1 < index {
                guard index - colon - 1 <= 9, bytes[colon + 1] != UInt8(ascii: "0") || index - colon == 2 else {
                    return nil
                }
                for position in (colon + 1)..<index {
                    guard bytes[position] &- UInt8(ascii: "0") < 10 else { return nil }
                }
                keyEnd = index
            }
            let keyBytes = UnsafeBufferPointer(rebasing: bytes[hostStart..<keyEnd])
            guard hasUppercase else { return String(decoding: keyBytes, as: UTF8.self) }
            return String(unsafeUninitializedCapacity: keyBytes.count) { buffer in
                for (offset, byte) in keyBytes.enumerated() {
                    buffer[offset] = (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte
                }
                return keyBytes.count
            }
        }
    }

    private static func isSchemeByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."):
            true
        default: false
        }
    }
}
