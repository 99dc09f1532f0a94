import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Reads a response's `Retry-After` header (RFC 9110 §10.2.3) and turns it into a delay: which statuses it is
/// honoured on and how long it may be at most.
///
/// Both forms are understood: delay-seconds (`120`) and an HTTP-date in each of RFC 9110's three formats,
/// IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime
/// (`Sun Nov  6 08:49:37 1994`). A date is measured from the response's own `Date` header when it has a valid one
/// (so that a skewed local clock does not matter), otherwise from the local time; a date in the past means now.
/// Anything malformed is ignored, and the delay is held at ``maximumDelay``. With ``maximumOverBackoff`` set, a
/// retrier that knows its own backoff delay holds the server's delay between that delay and that delay plus this much
/// (``delay(for:backoff:)``): the AWS SDKs' rule, which keeps a wrong or hostile hint from making a client retry at
/// once or wait for minutes.
///
/// Beside `Retry-After`, some servers send signals of their own, which are read when they are in ``signals`` (none by
/// default, both in the ``Resilience`` preset): `retry-after-ms`, the delay in milliseconds, read before
/// `Retry-After` when both come; and `x-should-retry: true` or `false`, which ``RetryPolicy`` obeys whatever the
/// status (see ``Signals``).
///
/// `RetryPolicy` honours it by default; any retrier can call ``delay(for:)-(ResponseHead)`` (or
/// ``delay(for:)-(HTTPURLResponse)`` with a Foundation response):
///
/// ```swift
/// let retrier = Retrier { request, _ in
///     guard let head = request.responseHead, let wait = RetryAfter.default.delay(for: head) else { return .doNotRetry }
///     return request.retryCount < 3 ? .retryWithDelay(wait) : .doNotRetry
/// }
/// ```
public struct RetryAfter: Sendable, Equatable {
    /// The default ``statusCodes``: 429 Too Many Requests and 503 Service Unavailable.
    public static let defaultStatusCodes: Set<Int> = [429, 503]
    /// The default ``maximumDelay``: 60 seconds.
    public static let defaultMaximumDelay = Duration.seconds(60)
    /// Honours `Retry-After` on 429 and 503, up to 60 seconds; reads no other signal.
    public static let `default` = RetryAfter(
        checkedStatusCodes: defaultStatusCodes, maximumDelay: defaultMaximumDelay, maximumOverBackoff: nil,
        signals: [])
    /// Never honours `Retry-After`, nor any other signal.
    public static let ignored = RetryAfter(
        checkedStatusCodes: [], maximumDelay: .zero, maximumOverBackoff: nil, signals: [])

    /// The retry signals a server may send beside `Retry-After`, which a ``RetryAfter`` reads when they are in its
    /// ``RetryAfter/signals``.
    ///
    /// A value that is malformed is no signal, as a malformed `Retry-After` is.
    public struct Signals: OptionSet, Sendable, Hashable, CustomStringConvertible {
        /// The signals as bits: ``retryAfterMs`` is 1, ``shouldRetry`` 2.
        public let rawValue: UInt8

        /// Creates a set of signals from its raw value.
        public init(rawValue: UInt8) {
            self.rawValue = rawValue
        }

        /// `retry-after-ms`: the delay in milliseconds (a decimal number, `1500` or `0.5`), as the OpenAI and
        /// Anthropic SDKs read it. It is read before `Retry-After` when both come, on the same statuses, held at the
        /// same maximum, and honoured everywhere `Retry-After` is: a retry's delay, the breaker's hold, the hedges'
        /// pause and the deadline's rule.
        public static let retryAfterMs = Signals(rawValue: 1 << 0)
        /// `x-should-retry: true` or `false` (in any case): whether the server asks for a retry, whatever the status.
        /// With `false`, ``RetryPolicy`` does not retry the response (``StopReason/serverAskedNoRetry``) and no new
        /// hedge starts; with `true`, it retries the response although its status is not one it retries or the
        /// repeated-failure stop would stop it, still within its methods, its retry limit, the gates (a budget) and
        /// the deadline.
        public static let shouldRetry = Signals(rawValue: 1 << 1)
        /// Both signals: what the ``Resilience`` preset reads.
        public static let all: Signals = [.retryAfterMs, .shouldRetry]

        /// The signals' names in brackets, for example `[retryAfterMs, shouldRetry]` or `[]`.
        public var description: String {
            let names = [(Self.retryAfterMs, "retryAfterMs"), (.shouldRetry, "shouldRetry")]
            return "[" + names.filter { contains($0.0) }.map(\.1).joined(separator: ", ") + "]"
        }
    }

    /// What a response asks for on 429 and 503, held at no maximum, in `Retry-After` alone.
    private static let asked = RetryAfter(
        checkedStatusCodes: defaultStatusCodes, maximumDelay: RetryResult.longestDelay, maximumOverBackoff: nil,
        signals: [])
    /// ``asked``, reading `retry-after-ms` before `Retry-After`.
    private static let askedInMilliseconds = RetryAfter(
        checkedStatusCodes: defaultStatusCodes, maximumDelay: RetryResult.longestDelay, maximumOverBackoff: nil,
        signals: .retryAfterMs)
    /// What reads `x-should-retry` for the session.
    private static let readingShouldRetry = RetryAfter(
        checkedStatusCodes: [], maximumDelay: .zero, maximumOverBackoff: nil, signals: .shouldRetry)

    /// The delay `head` asks for on 429 and 503, held at no maximum, read as a chain whose retry policies read
    /// `signals` reads it: the one reader of a delay a response asks for, for the deadline's rule, the hedges and an
    /// error's description (which reads `Retry-After` alone, as it does not know the chain).
    static func asked(by head: ResponseHead, reading signals: Signals) -> Duration? {
        (signals.contains(.retryAfterMs) ? askedInMilliseconds : asked).delay(for: head)
    }

    /// Whether `head` asks for no retry with `x-should-retry: false`, read as a chain whose retry policies read
    /// `signals` reads it: what holds back new hedges.
    static func asksNoRetry(_ head: ResponseHead, reading signals: Signals) -> Bool {
        signals.contains(.shouldRetry) && readingShouldRetry.retryAsked(by: head) == false
    }

    /// The statuses whose `Retry-After` is honoured; 429 and 503 by default.
    public let statusCodes: Set<Int>
    /// The longest delay a `Retry-After` can ask for; longer ones are held here. 60 seconds by default.
    public let maximumDelay: Duration
    /// How much longer than the retrier's own backoff delay a `Retry-After` may make the wait, which is then never
    /// shorter than that delay either (see ``delay(for:backoff:)``); `nil` by default: the header's delay as it is.
    public let maximumOverBackoff: Duration?
    /// The signals read beside `Retry-After` (``Signals``); none by default.
    public let signals: Signals

    /// Creates a configuration from settings written in code; an invalid one traps.
    ///
    /// A negative `maximumDelay` or `maximumOverBackoff` is a programming error; the trap's message names it,
    /// `RetryAfter.maximumDelay must be 0 or more, got …`. For settings that arrive at run time, use
    /// ``validated(statusCodes:maximumDelay:maximumOverBackoff:signals:)``, which throws instead.
    ///
    /// - Parameters:
    ///   - statusCodes: The statuses whose `Retry-After` is honoured; 429 and 503 by default.
    ///   - maximumDelay: The longest delay honoured, zero or more; 60 seconds by default.
    ///   - maximumOverBackoff: How much longer than the retrier's backoff delay the wait may be, zero or more; `nil`
    ///     (the default) for the header's delay as it is. The AWS SDKs use 5 seconds.
    ///   - signals: The signals read beside `Retry-After` (``Signals``); none by default, ``Signals/all`` for
    ///     `retry-after-ms` and `x-should-retry`.
    public init(
        statusCodes: Set<Int> = defaultStatusCodes, maximumDelay: Duration = defaultMaximumDelay,
        maximumOverBackoff: Duration? = nil, signals: Signals = []
    ) {
        ConfigurationError.trapIfInvalid { () throws(ConfigurationError) in
            try Self.check(maximumDelay: maximumDelay, maximumOverBackoff: maximumOverBackoff)
        }
        self.init(
            checkedStatusCodes: statusCodes, maximumDelay: maximumDelay, maximumOverBackoff: maximumOverBackoff,
            signals: signals)
    }

    /// Creates a configuration from settings that arrive at run time, throwing when one is invalid.
    ///
    /// The parameters, their defaults and what is valid are those of
    /// ``init(statusCodes:maximumDelay:maximumOverBackoff:signals:)``.
    ///
    /// - Throws: ``ConfigurationError`` if `maximumDelay` or `maximumOverBackoff` is negative.
    public static func validated(
        statusCodes: Set<Int> = defaultStatusCodes, maximumDelay: Duration = defaultMaximumDelay,
        maximumOverBackoff: Duration? = nil, signals: Signals = []
    ) throws(ConfigurationError) -> RetryAfter {
        try check(maximumDelay: maximumDelay, maximumOverBackoff: maximumOverBackoff)
        return RetryAfter(
            checkedStatusCodes: statusCodes, maximumDelay: maximumDelay, maximumOverBackoff: maximumOverBackoff,
            signals: signals)
    }

    /// Throws a ``ConfigurationError`` if `maximumDelay` or `maximumOverBackoff` is negative.
    private static func check(maximumDelay: Duration, maximumOverBackoff: Duration?) throws(ConfigurationError) {
        guard maximumDelay >= .zero else {
            throw ConfigurationError(
                field: "RetryAfter.maximumDelay", problem: "must be 0 or more, got \(maximumDelay)")
        }
        if let maximumOverBackoff, maximumOverBackoff < .zero {
            throw ConfigurationError(
                field: "RetryAfter.maximumOverBackoff", problem: "must be 0 or more, got \(maximumOverBackoff)")
        }
    }

    private init(
        checkedStatusCodes: Set<Int>, maximumDelay: Duration, maximumOverBackoff: Duration?, signals: Signals
    ) {
        self.statusCodes = checkedStatusCodes
        self.maximumDelay = maximumDelay
        self.maximumOverBackoff = maximumOverBackoff
        self.signals = signals
    }

    /// The delay the response asks for, held at ``maximumDelay``; `nil` when its status is not one of
    /// ``statusCodes`` or it has no valid `Retry-After` (nor a valid `retry-after-ms`, when that is read).
    public func delay(for response: HTTPURLResponse) -> Duration? {
        delay(for: ResponseHead(response))
    }

    /// The delay the response asks for, held at ``maximumDelay``; `nil` when its status is not one of
    /// ``statusCodes`` or it has no valid `Retry-After` (nor a valid `retry-after-ms`, when ``signals`` has
    /// ``Signals/retryAfterMs``, which is then read first). Reads the head alone.
    public func delay(for head: ResponseHead) -> Duration? {
        guard statusCodes.contains(head.statusCode) else { return nil }
        return delayAsked(by: head)
    }

    /// The delay the response asks for, held at ``maximumDelay``, whatever its status: read for a response whose
    /// `x-should-retry: true` asks for the retry.
    func delayAsked(by head: ResponseHead) -> Duration? {
        if signals.contains(.retryAfterMs), let value = head.value(forHTTPHeaderField: "retry-after-ms"),
            let delay = Self.delay(fromMilliseconds: value)
        {
            return Swift.min(delay, maximumDelay)
        }
        guard let value = head.value(forHTTPHeaderField: "Retry-After") else { return nil }
        let now = head.value(forHTTPHeaderField: "Date").flatMap(Self.date(from:)) ?? Date()
        return Self.delay(from: value, now: now).map { Swift.min($0, maximumDelay) }
    }

    /// Whether the response asks for a retry with `x-should-retry`, whatever its status: `true` or `false` when
    /// ``signals`` has ``Signals/shouldRetry`` and the field is `true` or `false` (in any case, with spaces around);
    /// `nil` otherwise, a malformed value (or one over 16 bytes) included.
    public func retryAsked(by response: HTTPURLResponse) -> Bool? {
        retryAsked(by: ResponseHead(response))
    }

    /// Whether the response asks for a retry with `x-should-retry`, whatever its status: `true` or `false` when
    /// ``signals`` has ``Signals/shouldRetry`` and the field is `true` or `false` (in any case, with spaces around);
    /// `nil` otherwise, a malformed value (or one over 16 bytes) included. Reads the head alone.
    public func retryAsked(by head: ResponseHead) -> Bool? {
        guard signals.contains(.shouldRetry), let value = head.value(forHTTPHeaderField: "x-should-retry"),
            value.utf8.count <= 16
        else { return nil }
        switch value.trimmingCharacters(in: .whitespaces).lowercased() {
        case "true": return true
        case "false": return false
        default: return nil
        }
    }

    /// The wait before a retry whose own backoff delay is `backoff`, when the response asks for one: the header's
    /// delay (as ``delay(for:)-(ResponseHead)`` reads it), held between `backoff` and `backoff` +
    /// ``maximumOverBackoff`` when that is set; `nil` when the response asks for no delay this configuration honours.
    ///
    /// With a `maximumOverBackoff` of 5 s and a backoff of 50 ms, `Retry-After: 0` waits 50 ms, `Retry-After: 1`
    /// waits 1 s and `Retry-After: 10` waits 5.05 s.
    public func delay(for head: ResponseHead, backoff: Duration) -> Duration? {
        delay(for: head).map { held($0, backoff: backoff) }
    }

    /// `asked`, a delay ``delay(for:)-(ResponseHead)`` read, held between `backoff` and `backoff` +
    /// ``maximumOverBackoff`` when that is set.
    func held(_ asked: Duration, backoff: Duration) -> Duration {
        guard let maximumOverBackoff else { return asked }
        let backoff = Swift.max(backoff, .zero)
        return Swift.min(Swift.max(asked, backoff), backoff + Swift.min(maximumOverBackoff, RetryResult.longestDelay))
    }

    /// The delay a `Retry-After` value asks for, measured from `now`, not held at any maximum; `.zero` for a date in
    /// the past, `nil` for anything malformed.
    public static func delay(from value: String, now: Date) -> Duration? {
        let value = value.trimmingCharacters(in: .whitespaces)
        if !value.isEmpty, value.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            // delay-seconds = 1*DIGIT; an absurdly long number is held at the longest delay rather than rejected.
            guard let seconds = Int64(value) else { return RetryResult.longestDelay }
            return Swift.min(.seconds(seconds), RetryResult.longestDelay)
        }
        guard let date = date(from: value, relativeTo: now) else { return nil }
        let seconds = date.timeIntervalSince(now)
        return seconds > 0 ? .seconds(Swift.min(seconds, RetryResult.longestDelay.seconds)) : .zero
    }

    /// The delay a `retry-after-ms` value asks for: a decimal number of milliseconds, `1500` or `0.5`, held at
    /// ``RetryResult/longestDelay``; `nil` for anything else (a sign, an exponent, an empty value, a value over 64
    /// bytes), which is no signal.
    public static func delay(fromMilliseconds value: String) -> Duration? {
        guard value.utf8.count <= 64 else { return nil }
        let value = value.trimmingCharacters(in: .whitespaces)
        let parts = value.utf8.split(separator: UInt8(ascii: "."), maxSplits: 1, omittingEmptySubsequences: false)
        let isDigits = { (part: Substring.UTF8View) in
            !part.isEmpty && part.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        }
        guard let whole = parts.first, isDigits(whole), parts.count == 1 || isDigits(parts[1]) else { return nil }
        // Read as a number of milliseconds; an absurdly long one is held at the longest delay rather than rejected.
        guard let milliseconds = Double(value) else { return nil }
        let longest = RetryResult.longestDelay
        // Infinity too, which a number past `Double`'s range reads as.
        guard milliseconds / 1_000 < longest.seconds else { return longest }
        return .milliseconds(milliseconds)
    }

    /// Parses an HTTP-date in any of the three formats; `nil` when malformed.
    public static func date(from value: String) -> Date? {
        date(from: value, relativeTo: Date())
    }

    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    private static let shortDays = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
    private static let longDays = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

    /// `relativeTo` places an RFC 850 two-digit year: one that would be more than 50 years ahead is in the past.
    private static func date(from value: String, relativeTo now: Date) -> Date? {
        let parts = value.split(separator: " ", omittingEmptySubsequences: true).map { $0.lowercased() }
        if parts.count == 6, parts[0].hasSuffix(","), shortDays.contains(String(parts[0].dropLast())),
            parts[5] == "gmt"
        {
            // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
            guard parts[1].count == 2, let day = Int(parts[1]), let month = months.firstIndex(of: parts[2]),
                parts[3].count == 4, let year = Int(parts[3])
            else { return nil }
            return make(year: year, month: month + 1, day: day, time: parts[4])
        }
        if parts.count == 4, parts[0].hasSuffix(","), longDays.contains(String(parts[0].dropLast())),
            parts[3] == "gmt"
        {
            // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
            let date = parts[1].split(separator: "-").map(String.init)
            guard date.count == 3, date[0].count == 2, let day = Int(date[0]),
                let month = months.firstIndex(of: date[1]), date[2].count == 2, let yy = Int(date[2])
            else { return nil }
            let current = Calendar.gmt.component(.year, from: now)
            var year = current - current % 100 + yy
            if year > current + 50 { year -= 100 }
            return make(year: year, month: month + 1, day: day, time: parts[2])
        }
        if parts.count == 5, shortDays.contains(parts[0]) {
            // asctime: Sun Nov  6 08:49:37 1994
            guard let month = months.firstIndex(of: parts[1]), (1...2).contains(parts[2].count),
                let day = Int(parts[2]), parts[4].count == 4, let year = Int(parts[4])
            else { return nil }
            return make(year: year, month: month + 1, day: day, time: parts[3])
        }
        return nil
    }

    private static func make(year: Int, month: Int, day: Int, time: String) -> Date? {
        let clock = time.split(separator: ":", omittingEmptySubsequences: false)
        guard clock.count == 3, clock.allSatisfy({ $0.count == 2 }), let hour = Int(clock[0]),
            let minute = Int(clock[1]), let second = Int(clock[2]), (0...23).contains(hour), (0...59).contains(minute),
            (0...60).contains(second), (1...31).contains(day)
        else { return nil }
        let components = DateComponents(
            calendar: .gmt, timeZone: TimeZone(identifier: "GMT"), year: year, month: month, day: day, hour: hour,
            minute: minute, second: Swift.min(second, 59))
        // Reject dates that do not exist (31 Feb) instead of letting the calendar roll them over.
        guard components.isValidDate(in: .gmt), let date = Calendar.gmt.date(from: components) else { return nil }
        return date
    }
}

extension Calendar {
    /// The Gregorian calendar in GMT, which HTTP dates are written in.
    fileprivate static let gmt: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "GMT")!
        return calendar
    }()
}
