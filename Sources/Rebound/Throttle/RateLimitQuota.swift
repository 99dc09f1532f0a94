import Foundation

/// The quota a response says its client has left: how many requests, and how long until the quota is renewed.
///
/// ``init(_:)`` reads it from the spellings servers send:
/// - the IETF's `RateLimit` and `RateLimit-Policy` fields (draft-ietf-httpapi-ratelimit-headers), structured-field
///   lists such as `RateLimit: "default";r=0;t=30` and `RateLimit-Policy: "default";q=100;w=60`: `r` the requests
///   left, `t` the seconds until the quota is renewed, `q` the quota of a window;
/// - the earlier drafts' `RateLimit: limit=100, remaining=0, reset=30` and their separate fields `RateLimit-Limit`,
///   `RateLimit-Remaining` and `RateLimit-Reset` (seconds);
/// - the `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset` fields many APIs send, `X-RateLimit-Reset`
///   in seconds or as a Unix time (GitHub's, measured from the response's `Date`), or `X-RateLimit-Reset-After` in
///   seconds.
///
/// With several quotas (a burst and a daily one), the one that binds first counts: a spent one, the one renewed last;
/// else the one with the fewest requests left. A field that is malformed (not a whole number, negative, a list that is
/// not one) is no signal: the response then advertises nothing, and nothing traps. A policy whose quota or window is
/// zero (`q=0`, `w=0`), which would hold a host for good, is no signal either: the quota is read as if the server had
/// sent no policy.
///
/// Reading is bounded, whatever a server sends: of the lists `RateLimit` and `RateLimit-Policy`, the first 16 members
/// within the field's first 4,096 bytes are read, and the rest is not (a member that ends past those bytes included);
/// a number field of more than 64 bytes is no signal; a renewal or a window past a year is held at a year.
public struct RateLimitQuota: Sendable, Equatable, CustomStringConvertible {
    /// The requests left until the quota is renewed.
    public let remaining: Int
    /// How long until the quota is renewed, from the response.
    public let resetsIn: Duration
    /// The requests the quota allows per window, when the response says; `nil` otherwise.
    public let limit: Int?
    /// The quota's window, when the response says (`RateLimit-Policy`'s `w`); `nil` otherwise.
    public let window: Duration?

    /// Creates a quota.
    public init(remaining: Int, resetsIn: Duration, limit: Int? = nil, window: Duration? = nil) {
        self.remaining = max(remaining, 0)
        self.resetsIn = max(resetsIn, .zero)
        self.limit = limit.map { max($0, 0) }
        self.window = window.map { max($0, .zero) }
    }

    /// The quota `head` advertises, in the first spelling it uses (the IETF fields, the earlier drafts', then the
    /// `X-RateLimit-` fields); `nil` when it advertises none or only malformed fields.
    public init?(_ head: ResponseHead) {
        guard let quota = Self.ietf(head) ?? Self.draft(head) ?? Self.prefixed(head) else { return nil }
        self = quota
    }

    /// For example `0 left, renewed in 30 s (limit 100 per 60 s)`.
    public var description: String {
        "\(remaining) left, renewed in \(resetsIn.logDescription)"
            + (limit.map { " (limit \($0)" + (window.map { " per \($0.logDescription)" } ?? "") + ")" } ?? "")
    }

    /// Longer than any quota's window: values past it are held here rather than trusted.
    static let longestReset = Duration.seconds(86_400 * 366)

    // MARK: - The IETF fields

    /// `RateLimit: "name";r=…;t=…, …` with `RateLimit-Policy: "name";q=…;w=…, …`.
    private static func ietf(_ head: ResponseHead) -> RateLimitQuota? {
        guard let field = head.value(forHTTPHeaderField: "RateLimit"),
            let members = StructuredList(field)?.members, !members.isEmpty,
            members.allSatisfy({ $0.parameters["r"] != nil && $0.parameters["t"] != nil })
        else { return nil }
        // Each quota's policy by name, the first of a name: one look-up per quota.
        var policies: [String: StructuredList.Member] = [:]
        for policy in head.value(forHTTPHeaderField: "RateLimit-Policy").flatMap({ StructuredList($0)?.members }) ?? []
        where policies[policy.item] == nil {
            policies[policy.item] = policy
        }
        var quotas: [RateLimitQuota] = []
        for member in members {
            guard let remaining = member.parameters["r"].flatMap(wholeNumber),
                let reset = member.parameters["t"].flatMap(wholeNumber)
            else { return nil }
            var limit = policies[member.item]?.parameters["q"].flatMap(wholeNumber)
            var window = policies[member.item]?.parameters["w"].flatMap(wholeNumber)
            if limit == 0 || window == 0 {
                // A window that grants nothing, or a window of no length, would hold a host for good: no signal.
                limit = nil
                window = nil
            }
            quotas.append(
                RateLimitQuota(
                    remaining: remaining, resetsIn: seconds(reset), limit: limit, window: window.map(seconds)))
        }
        return binding(quotas)
    }

    // MARK: - The earlier drafts

    /// `RateLimit: limit=…, remaining=…, reset=…`, or `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`.
    private static func draft(_ head: ResponseHead) -> RateLimitQuota? {
        if let field = head.value(forHTTPHeaderField: "RateLimit"), let members = StructuredList(field)?.members {
            var values: [String: String] = [:]
            for member in members {
                let parts = member.item.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2 else { return nil }
                values[parts[0].lowercased()] = parts[1]
            }
            guard let remaining = values["remaining"].flatMap(wholeNumber),
                let reset = values["reset"].flatMap(wholeNumber)
            else { return nil }
            return RateLimitQuota(
                remaining: remaining, resetsIn: seconds(reset), limit: values["limit"].flatMap(wholeNumber))
        }
        guard let remaining = head.value(forHTTPHeaderField: "RateLimit-Remaining").flatMap(wholeNumber),
            let reset = head.value(forHTTPHeaderField: "RateLimit-Reset").flatMap(wholeNumber)
        else { return nil }
        let limit = head.value(forHTTPHeaderField: "RateLimit-Limit").flatMap(wholeNumber)
        return RateLimitQuota(remaining: remaining, resetsIn: seconds(reset), limit: limit)
    }

    // MARK: - The X-RateLimit- fields

    /// `X-RateLimit-Remaining` with `X-RateLimit-Reset-After` (seconds, maybe fractional) or `X-RateLimit-Reset`
    /// (seconds, or a Unix time when it is past 10⁹), and `X-RateLimit-Limit`.
    private static func prefixed(_ head: ResponseHead) -> RateLimitQuota? {
        guard let remaining = head.value(forHTTPHeaderField: "X-RateLimit-Remaining").flatMap(wholeNumber) else {
            return nil
        }
        let resetsIn: Duration
        if let after = head.value(forHTTPHeaderField: "X-RateLimit-Reset-After").flatMap(decimalSeconds) {
            resetsIn = after
        } else if let reset = head.value(forHTTPHeaderField: "X-RateLimit-Reset").flatMap(wholeNumber) {
            if reset >= 1_000_000_000 {
                // A Unix time: measured from the response's own clock, so that a skewed local clock does not matter.
                let now = head.value(forHTTPHeaderField: "Date").flatMap(RetryAfter.date(from:)) ?? Date()
                resetsIn = .seconds(max(Double(reset) - now.timeIntervalSince1970, 0))
            } else {
                resetsIn = seconds(reset)
            }
        } else {
            return nil
        }
        let limit = head.value(forHTTPHeaderField: "X-RateLimit-Limit").flatMap(wholeNumber)
        return RateLimitQuota(remaining: remaining, resetsIn: min(resetsIn, longestReset), limit: limit)
    }

    // MARK: - Values

    /// The quota that binds first: a spent one renewed last, else the one with the fewest requests left.
    private static func binding(_ quotas: [RateLimitQuota]) -> RateLimitQuota? {
        if let spent = quotas.filter({ $0.remaining == 0 }).max(by: { $0.resetsIn < $1.resetsIn }) { return spent }
        return quotas.min { $0.remaining < $1.remaining }
    }

    /// The most bytes a number field may take, spaces around it included: longer is no signal, and is not read.
    private static let longestNumber = 64

    /// A whole number of ASCII digits, at most 18 of them (so that it fits); `nil` for anything else.
    static func wholeNumber(_ text: String) -> Int? {
        guard text.utf8.count <= longestNumber else { return nil }
        let text = text.trimmingCharacters(in: .whitespaces)
        guard (1...18).contains(text.utf8.count), text.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
        return Int(text)
    }

    /// Seconds written as digits with at most one fraction (`1.5`); `nil` for anything else.
    private static func decimalSeconds(_ text: String) -> Duration? {
        guard text.utf8.count <= longestNumber else { return nil }
        let parts = text.trimmingCharacters(in: .whitespaces).split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let whole = wholeNumber(String(parts[0])) else { return nil }
        var duration = seconds(whole)
        if parts.count == 2 {
            let fraction = String(parts[1].prefix(9))
            guard let digits = wholeNumber(fraction) else { return nil }
            duration += .nanoseconds(digits * Int(pow(10, Double(9 - fraction.count))))
        }
        return min(duration, longestReset)
    }

    /// `value` seconds, held at ``longestReset``.
    private static func seconds(_ value: Int) -> Duration {
        min(.seconds(value), longestReset)
    }
}

/// A structured-field list (RFC 9651) read only as far as a quota needs: members separated by commas outside quotes,
/// each an item (a string's content, or a token) and its `;key=value` parameters, values unquoted.
///
/// Bounded: at most ``maximumMembers`` members are read, within the field's first ``maximumBytes`` bytes; the rest of
/// the field is not read, nor a member that ends past those bytes. Each byte read is looked at a constant number of
/// times. `nil` when a quote is left open at the end of a field read whole.
struct StructuredList {
    struct Member {
        let item: String
        let parameters: [String: String]
    }

    /// The most members read from a field.
    static let maximumMembers = 16
    /// The most bytes read from a field.
    static let maximumBytes = 4_096

    let members: [Member]

    init?(_ field: String) {
        let bytes = Array(field.utf8.prefix(Self.maximumBytes))
        let split = Self.split(bytes[...], on: UInt8(ascii: ","), limit: Self.maximumMembers)
        var texts = split.parts
        if let tail = split.tail, bytes.count == field.utf8.count {
            // The field's last member, read whole: a quote left open in it makes the field malformed.
            guard !split.open else { return nil }
            if !tail.isEmpty { texts.append(tail) }
        }
        // Otherwise the members read end at the limit, or the field goes on past the bytes read: its member cut there
        // is not read.
        var members: [Member] = []
        for text in texts {
            let split = Self.split(text, on: UInt8(ascii: ";"), limit: .max)
            let parts = split.parts + (split.tail.map { $0.isEmpty ? [] : [$0] } ?? [])
            guard let first = parts.first else { return nil }
            var parameters: [String: String] = [:]
            for parameter in parts.dropFirst() {
                let equals = parameter.firstIndex(of: UInt8(ascii: "="))
                let key = Self.trimmed(parameter[..<(equals ?? parameter.endIndex)])
                guard !key.isEmpty else { return nil }
                parameters[Self.string(key).lowercased()] =
                    equals.map { Self.string(Self.unquoted(Self.trimmed(parameter[($0 + 1)...]))) } ?? "?1"
            }
            members.append(Member(item: Self.string(Self.unquoted(first)), parameters: parameters))
        }
        self.members = members
    }

    /// What splitting bytes on a separator outside double quotes found.
    private struct Split {
        /// The parts each ended by a separator, trimmed, empty ones left out.
        var parts: [ArraySlice<UInt8>] = []
        /// The part after the last separator, trimmed, when the bytes ran out; `nil` when the split stopped at its
        /// limit.
        var tail: ArraySlice<UInt8>?
        /// Whether the bytes ran out inside a quote.
        var open = false
    }

    /// `text` split on `separator` outside double quotes, up to `limit` parts ended by a separator.
    private static func split(_ text: ArraySlice<UInt8>, on separator: UInt8, limit: Int) -> Split {
        var split = Split()
        var start = text.startIndex
        var quoted = false
        var escaped = false
        for index in text.indices {
            let byte = text[index]
            if escaped {
                escaped = false
            } else if byte == UInt8(ascii: "\\"), quoted {
                escaped = true
            } else if byte == UInt8(ascii: "\"") {
                quoted.toggle()
            } else if byte == separator, !quoted {
                let part = trimmed(text[start..<index])
                start = index + 1
                guard !part.isEmpty else { continue }
                split.parts.append(part)
                if split.parts.count == limit { return split }
            }
        }
        split.tail = trimmed(text[start...])
        split.open = quoted
        return split
    }

    /// `text` without the spaces and tabs around it.
    private static func trimmed(_ text: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        let isSpace = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        guard let first = text.firstIndex(where: { !isSpace($0) }), let last = text.lastIndex(where: { !isSpace($0) })
        else { return [] }
        return text[first...last]
    }

    /// The content of a quoted string, or `text` as it is.
    private static func unquoted(_ text: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        guard text.count >= 2, text.first == UInt8(ascii: "\""), text.last == UInt8(ascii: "\"") else { return text }
        return text.dropFirst().dropLast()
    }

    /// `bytes` as a string, a byte that is not UTF-8 replaced.
    private static func string(_ bytes: ArraySlice<UInt8>) -> String {
        String(decoding: bytes, as: UTF8.self)
    }
}

/// Why a ``RateLimitPacer`` did not send a request: its host's quota is spent until further away than the pacer waits,
/// or than the request's deadline.
public struct RateLimitQuotaSpent: Error, Sendable, Equatable, CustomStringConvertible {
    /// The host's key.
    public let key: String
    /// How long until the quota is renewed.
    public let renewedIn: Duration

    /// Creates the error; pacers create these, and test code may too.
    public init(key: String, renewedIn: Duration) {
        self.key = key
        self.renewedIn = renewedIn
    }

    /// For example `rate limit quota for api.example.com spent: renewed in 45 s`.
    public var description: String {
        "rate limit quota for \(key) spent: renewed in \(renewedIn.logDescription)"
    }
}
