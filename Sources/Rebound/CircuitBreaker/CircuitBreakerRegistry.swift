import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One ``CircuitBreaker`` per upstream, created on first use and shared by every session that uses the registry.
///
/// Put the registry in a chain as an adapter: each attempt goes through the breaker of its key (by default the
/// URL's host, with the port when the URL names one), so one failing upstream trips its own breaker and no other.
/// Requests whose key is `nil` go through untouched. A retry that moves to another host (`.retryWithRequest`, a
/// fallback) is that host's breaker's to grant or refuse, not the failing host's: an open breaker of the failing host
/// does not stop its fallback, and an open breaker of the fallback refuses the retry at once. Where an adapter sends
/// attempts to another host than their request names, a moved retry's host is not known before its adapters run: it is
/// judged by the breaker of the host the failed attempt went to.
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
    /// Whether its breakers refuse as they decide, or only tell of their refusals (``Enforcement/shadow``); enforced by
    /// default.
    public let enforcement: Enforcement

    private let keyFunction: KeyFunction
    /// The breakers by key, and how a new one is made.
    private let shelf: Shelf
    private let broadcast: Broadcast<CircuitBreaker.Transition>

    /// Creates an empty registry.
    ///
    /// - Parameters:
    ///   - configuration: The configuration of every breaker; ``CircuitBreaker/Configuration/default`` by default.
    ///   - clock: The clock of every breaker; `ContinuousClock` by default.
    ///   - key: Picks a request's breaker; ``hostKey(for:)`` (the host, and the port when the URL names one) by
    ///     default.
    ///   - enforcement: Whether every breaker refuses as it decides (``Enforcement/enforced``, the default) or only tells
    ///     the observers of each refusal it would have made (``Enforcement/shadow``).
    ///   - onTransition: Called after every transition of any of the breakers; none by default.
    ///   - maximumHosts: The most breakers the registry keeps, at least 1; 10,000 by default. At the cap, a new host
    ///     makes the registry forget the breaker it used least lately, whatever its state (see <doc:SecurityGuide>).
    public init<C: Clock>(
        configuration: CircuitBreaker.Configuration = .default, clock: C = ContinuousClock(),
        key: @escaping KeyFunction = CircuitBreakerRegistry.hostKey, enforcement: Enforcement = .enforced,
        onTransition: (@Sendable (CircuitBreaker.Transition) -> Void)? = nil, maximumHosts: Int = 10_000
    ) where C.Duration == Duration {
        HostTable<CircuitBreaker>.trapIfInvalid(maximumHosts, owner: "CircuitBreakerRegistry")
        let broadcast = Broadcast<CircuitBreaker.Transition>()
        let link = Link(key: key)
        self.configuration = configuration
        self.enforcement = enforcement
        self.keyFunction = key
        self.broadcast = broadcast
        self.shelf = Shelf(capacity: maximumHosts) { key in
            CircuitBreaker(
                key: key, configuration: configuration, clock: clock, enforcement: enforcement, relay: broadcast,
                registry: link, onTransition: onTransition)
        }
        link.attach(shelf)
    }

    /// The registry's breakers by key, with how a new one is made: an object of its own, which the breakers reach
    /// weakly through their `Link`, so that the registry, which every attempt through it holds, is never the target
    /// of a weak reference (the runtime would then count each hold on a side table).
    final class Shelf: Sendable {
        /// The breakers by key; a breaker back at rest is at rest (see `HostTable`).
        let table: Locked<HostTable<CircuitBreaker>>
        private let makeBreaker: @Sendable (String) -> CircuitBreaker

        init(capacity: Int, makeBreaker: @escaping @Sendable (String) -> CircuitBreaker) {
            self.table = Locked(HostTable(capacity: capacity))
            self.makeBreaker = makeBreaker
        }

        /// The breaker for `key`, made closed if there is none yet; `sweeping` moves the table's hand a step after it
        /// (a request's admission does, so that breakers gone idle are forgotten though no new host comes; a read does
        /// not).
        func breaker(for key: String, sweeping: Bool) -> CircuitBreaker {
            table.withLock { table in
                // The registry's lock, then a breaker's, to ask whether it is at rest: a breaker never takes the
                // registry's lock.
                let breaker = table.update(key, make: { makeBreaker(key) }, isAtRest: { $0.isAtRest }) { $0 }
                // After the update, which marked the breaker used: the step never drops the breaker just taken.
                if sweeping { table.forgetIdle(steps: 1, isAtRest: { $0.isAtRest }) }
                return breaker
            }
        }
    }

    /// How a registry's breaker reaches the breaker of another key, for a retry that moves there: through the
    /// registry's shelf, held weakly (the shelf holds the breakers).
    final class Link: Sendable {
        private struct Weak: Sendable {
            weak var shelf: Shelf?
        }

        private let key: KeyFunction
        private let home = Locked(Weak())

        init(key: @escaping KeyFunction) {
            self.key = key
        }

        func attach(_ shelf: Shelf) {
            home.withLock { $0.shelf = shelf }
        }

        /// The breaker of `request`'s key, when it has one other than `key`; `nil` otherwise, or once the registry is
        /// gone.
        func breaker(for request: URLRequest, otherThan key: String?) -> CircuitBreaker? {
            guard let other = self.key(request), other != key else { return nil }
            return home.withLock { $0.shelf }?.breaker(for: other, sweeping: false)
        }

        /// The breaker that decides about `request`'s retry, whose adapters start from its target, when it is another
        /// than the breaker of `key`; `nil` when that one decides, or the retry has no target. The retry goes to its
        /// target's host, unless an adapter sent the failed attempt to another host than the request its adapters
        /// started from (the retry's source) named: where a retry goes is then not known before its adapters run, and
        /// it is taken to go where the failed attempt went (its attempt is admitted under the host it goes to, as every
        /// attempt is). With no source (a mid-round move left it unknown, or the target is an endpoint a group chose),
        /// the target is where the retry goes.
        func breaker(forRetry request: RetryRequest, otherThan key: String?) -> CircuitBreaker? {
            guard let target = request.retryTarget else { return nil }
            var destination = self.key(target)
            // A failed attempt that no adapter saw through (it failed in one) was sent nowhere: not moved.
            if let source = request.retrySource, let admitted = request.attempts.last?.admittedRequest,
                case let sentTo = self.key(admitted), sentTo != self.key(source)
            {
                destination = sentTo
            }
            guard let destination, destination != key else { return nil }
            return home.withLock { $0.shelf }?.breaker(for: destination, sweeping: false)
        }
    }

    /// The default key: the URL's host in lower case (an IPv6 address in brackets, as a URL writes it), followed by
    /// `:port` when the URL names a port; `nil` for a URL without a host.
    @Sendable public static func hostKey(for request: URLRequest) -> String? {
        guard let url = request.url else { return nil }
        // The common spelling is keyed from the URL's string in one pass, anything else as Foundation reads the URL:
        // both give the same key (a test compares them).
        if url.baseURL == nil, let key = hostKey(spelledIn: url.absoluteString) { return key }
        return hostKey(readingParts: url)
    }

    /// The key of a URL spelled `scheme://host[:port]` and then a path, a query, a fragment or nothing, in ASCII,
    /// without user info or a percent-encoded byte (an IPv6 address in brackets included); `nil` for any other
    /// spelling, which ``hostKey(readingParts:)`` keys.
    static func hostKey(spelledIn string: String) -> String? {
        var string = string
        return string.withUTF8 { bytes -> String? in
            let (colon, slash) = (UInt8(ascii: ":"), UInt8(ascii: "/"))
            func isLetter(_ byte: UInt8) -> Bool { (byte | 0x20) &- UInt8(ascii: "a") < 26 }
            func isDigit(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 }
            // A scheme, a letter and then letters, digits, `+`, `-` or `.`, followed by `://` (a URL without one, whose
            // first colon is in its path or query, is not this spelling).
            guard let first = bytes.first, isLetter(first) else { return nil }
            var schemeEnd = 1
            while schemeEnd < bytes.count, bytes[schemeEnd] != colon {
                let byte = bytes[schemeEnd]
                let isSymbol = byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
                guard isLetter(byte) || isDigit(byte) || isSymbol else { return nil }
                schemeEnd += 1
            }
            guard schemeEnd + 2 < bytes.count, bytes[schemeEnd + 1] == slash, bytes[schemeEnd + 2] == slash else {
                return nil
            }
            let start = schemeEnd + 3
            var (end, portColon, inBrackets, colonInBrackets) = (start, Int?.none, false, false)
            while end < bytes.count {
                let byte = bytes[end]
                // Most of a host is letters, digits, dots and hyphens, which need no other look before a port.
                if portColon == nil,
                    isLetter(byte) || isDigit(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")
                {
                    end += 1
                    continue
                }
                if byte == slash || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") { break }
                if byte == UInt8(ascii: "@") || byte == UInt8(ascii: "%") || byte >= 0x80 { return nil }
                if byte == UInt8(ascii: "[") {
                    guard end == start else { return nil }
                    inBrackets = true
                } else if byte == UInt8(ascii: "]") {
                    // A bracket closes the host: a port, or the end of the authority, follows.
                    let next = end + 1 < bytes.count ? bytes[end + 1] : slash
                    guard inBrackets,
                        next == colon || next == slash || next == UInt8(ascii: "?") || next == UInt8(ascii: "#")
                    else { return nil }
                    inBrackets = false
                } else if byte == colon, inBrackets {
                    colonInBrackets = true
                } else if byte == colon {
                    guard portColon == nil else { return nil }
                    portColon = end
                } else if portColon != nil, !isDigit(byte) {
                    return nil
                }
                end += 1
            }
            let hostEnd = portColon ?? end
            let portDigits = portColon.map { end - $0 - 1 } ?? 0
            // An empty host, an unclosed bracket, a bracketed host that is no IPv6 address (Foundation keys it without
            // its brackets), or a port Foundation reads as a number first (leading zeros, more digits than a port
            // has): spelled otherwise.
            guard hostEnd > start, !inBrackets, bytes[start] != UInt8(ascii: "[") || colonInBrackets, portDigits <= 5,
                portDigits < 2 || bytes[hostEnd + 1] != UInt8(ascii: "0")
            else { return nil }
            let hostLength = hostEnd - start
            let length = hostLength + (portDigits > 0 ? 1 + portDigits : 0)
            return String(unsafeUninitializedCapacity: length) { key in
                // The host in lower case, then the colon and the port's digits as they are.
                for index in 0..<hostLength {
                    let byte = bytes[start + index]
                    key[index] = byte &- UInt8(ascii: "A") < 26 ? byte | 0x20 : byte
                }
                for index in hostLength..<length { key[index] = bytes[start + index] }
                return length
            }
        }
    }

    /// The key of `url` as Foundation reads its host and port: any URL ``hostKey(spelledIn:)`` does not key.
    static func hostKey(readingParts url: URL) -> String? {
        guard var host = url.host(percentEncoded: true), !host.isEmpty else { return nil }
        // Most hosts are written as they are keyed: one is decoded only when it has a percent-encoded byte, lowered
        // only when it has a capital or a byte past ASCII (which `lowercased()` lowers by Unicode's rules), and
        // bracketed only when it is an IPv6 address (a colon), so that `[::1]:8080` and `[::1:8080]` keep two keys.
        var (encoded, lowers, isIPv6) = (false, false, false)
        for byte in host.utf8 {
            if byte == UInt8(ascii: "%") {
                encoded = true
            } else if byte == UInt8(ascii: ":") {
                isIPv6 = true
            } else if byte >= 0x80 || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) {
                lowers = true
            }
        }
        if encoded {
            guard let decoded = url.host(percentEncoded: false), !decoded.isEmpty else { return nil }
            host = decoded
            lowers = true  // What the decoding reveals is not looked at: `lowercased()` reads it all.
        }
        if lowers { host = host.lowercased() }
        if isIPv6, !host.hasPrefix("[") { host = "[" + host + "]" }
        guard let port = url.port, port >= 0 else { return host }
        return joining(host, port: port)
    }

    /// `host:port`, written in one pass: the key of every attempt to a host with a port.
    private static func joining(_ host: String, port: Int) -> String {
        var digits = 1
        var rest = port / 10
        while rest > 0 {
            digits += 1
            rest /= 10
        }
        let hostLength = host.utf8.count
        return String(unsafeUninitializedCapacity: hostLength + 1 + digits) { buffer in
            _ = buffer.initialize(fromContentsOf: host.utf8)
            buffer[hostLength] = UInt8(ascii: ":")
            var remaining = port
            for index in stride(from: hostLength + digits, to: hostLength, by: -1) {
                buffer[index] = UInt8(ascii: "0") + UInt8(remaining % 10)
                remaining /= 10
            }
            return hostLength + 1 + digits
        }
    }

    /// The breaker for `key`, created closed if there is none yet (or the registry forgot it).
    public func breaker(for key: String) -> CircuitBreaker {
        shelf.breaker(for: key, sweeping: false)
    }

    /// The key the registry files a request to `request`'s host under; `nil` for a request it lets through.
    func key(for request: URLRequest) -> String? {
        keyFunction(request)
    }

    /// The breaker for `key` if the registry keeps one, without making one or marking it used: a read.
    func existingBreaker(for key: String) -> CircuitBreaker? {
        shelf.table.withLock { $0[key] }
    }

    /// The breakers the registry keeps, by key.
    public var breakers: [String: CircuitBreaker] {
        shelf.table.withLock { $0.all }
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

    /// Lets the attempt through its key's breaker, or throws; a request without a key goes through. A later adapter
    /// that moves the attempt to another host has the session ask the registry again, for that host's breaker.
    private func admit(_ request: URLRequest, context: RequestContext) throws(CircuitBreakerOpenError) {
        guard let key = keyFunction(request) else { return }
        try shelf.breaker(for: key, sweeping: true).admit(context)
        context.admitted(by: self, under: key, at: request.url)
    }
}

extension CircuitBreakerRegistry: HostAdmission {
    func admissionKey(for request: URLRequest) -> String? {
        keyFunction(request)
    }

    /// Gives back, uncounted, the trial `key`'s breaker gave `context`'s attempt, if it holds one, while the attempt waits
    /// in a later adapter (see ``CircuitBreaker/giveWay(_:admittedUnder:)``).
    func giveWay(_ context: RequestContext, admittedUnder key: String) -> Bool {
        shelf.table.withLock { $0[key] }?.giveWay(context, admittedUnder: key) ?? false
    }

    /// Lets `context`'s attempt, which gave its trial way, through `key`'s breaker again, or throws
    /// ``CircuitBreakerOpenError``.
    func admitAgain(_ context: RequestContext, under key: String, admittedUnder admitted: String) async throws {
        try breaker(for: key).admit(context)
    }

    /// Gives the permit of `admitted`'s breaker back uncounted, and lets the attempt through `key`'s breaker, or throws
    /// ``CircuitBreakerOpenError``.
    func readmit(_ context: RequestContext, from admitted: String, to key: String?) async throws {
        shelf.table.withLock { $0[admitted] }?.giveBack(context)
        if let key { try breaker(for: key).admit(context) }
    }
}

extension CircuitBreakerRegistry: AdaptsInPlace {
    /// Admits the attempt as ``adapt(_:context:)`` does, leaving the request unchanged.
    var adaptInPlace: Adapter.ModifyNowHandler? {
        { [self] request, context in try admit(request, context: context) }
    }
}
