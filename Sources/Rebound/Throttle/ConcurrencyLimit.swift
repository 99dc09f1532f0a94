/// How many attempts a ``ConcurrencyLimiter`` lets be in flight to one host: a fixed number, or one that adapts to the
/// host's latency and failures, as Netflix's concurrency-limits library does.
///
/// A minor release may add a case: switch over it with `@unknown default` (<doc:APIStabilityGuide>).
public enum ConcurrencyLimit: Sendable, Equatable {
    /// Always the same number, at least 1.
    case fixed(Int)
    /// Additive increase, multiplicative decrease: one more while the host keeps up, fewer after a failure.
    case aimd(AIMD)
    /// Follows the gradient between the host's long-term and latest latency.
    case gradient(Gradient)

    /// Additive increase, multiplicative decrease (Netflix's `AIMDLimit`): after an attempt that fails (a 5xx, 408,
    /// 429 or a transport failure) or takes longer than ``timeout``, the limit is multiplied by ``backoffRatio``
    /// (and drops by at least 1); after any other attempt that ended while at least half the limit was in flight, it
    /// grows by 1. An attempt that ended with less in flight says nothing about the limit (the client was the
    /// bottleneck).
    public struct AIMD: Sendable, Equatable {
        /// The limit a host starts with; 10 by default.
        public let initial: Int
        /// The lowest the limit goes; 1 by default.
        public let minimum: Int
        /// The highest the limit goes; 200 by default.
        public let maximum: Int
        /// What the limit is multiplied by after a failure, in `0.5 ..< 1`; 0.9 by default.
        public let backoffRatio: Double
        /// An attempt that takes longer counts as a failure; 5 s by default.
        public let timeout: Duration

        /// Creates the numbers from values written in code; an invalid one traps.
        ///
        /// - Parameters:
        ///   - initial: Between `minimum` and `maximum`; 10 by default.
        ///   - minimum: At least 1; 1 by default.
        ///   - maximum: At least `minimum`; 200 by default.
        ///   - backoffRatio: In `0.5 ..< 1`; 0.9 by default.
        ///   - timeout: Longer than zero; 5 s by default.
        public init(
            initial: Int = 10, minimum: Int = 1, maximum: Int = 200, backoffRatio: Double = 0.9,
            timeout: Duration = .seconds(5)
        ) {
            ConfigurationError.trapIfInvalid { () throws(ConfigurationError) in
                try Self.check(
                    initial: initial, minimum: minimum, maximum: maximum, backoffRatio: backoffRatio, timeout: timeout)
            }
            self.init(
                checkedInitial: initial, minimum: minimum, maximum: maximum, backoffRatio: backoffRatio,
                timeout: timeout)
        }

        /// Creates the numbers from values that arrive at run time, throwing ``ConfigurationError`` for an invalid
        /// one; the parameters are those of ``init(initial:minimum:maximum:backoffRatio:timeout:)``.
        public static func validated(
            initial: Int = 10, minimum: Int = 1, maximum: Int = 200, backoffRatio: Double = 0.9,
            timeout: Duration = .seconds(5)
        ) throws(ConfigurationError) -> AIMD {
            try check(
                initial: initial, minimum: minimum, maximum: maximum, backoffRatio: backoffRatio, timeout: timeout)
            return AIMD(
                checkedInitial: initial, minimum: minimum, maximum: maximum, backoffRatio: backoffRatio,
                timeout: timeout)
        }

        private static func check(
            initial: Int, minimum: Int, maximum: Int, backoffRatio: Double, timeout: Duration
        ) throws(ConfigurationError) {
            try ConcurrencyLimit.checkRange(
                "AIMD", initial: initial, minimum: minimum, maximum: maximum, minimumAllowed: 1)
            guard backoffRatio.isFinite, backoffRatio >= 0.5, backoffRatio < 1 else {
                throw ConfigurationError(
                    field: "ConcurrencyLimit.AIMD.backoffRatio",
                    problem: "must be at least 0.5 and below 1, got \(backoffRatio)")
            }
            guard timeout > .zero else {
                throw ConfigurationError(
                    field: "ConcurrencyLimit.AIMD.timeout", problem: "must be longer than zero, got \(timeout)")
            }
        }

        private init(checkedInitial: Int, minimum: Int, maximum: Int, backoffRatio: Double, timeout: Duration) {
            self.initial = checkedInitial
            self.minimum = minimum
            self.maximum = maximum
            self.backoffRatio = backoffRatio
            self.timeout = timeout
        }
    }

    /// A limit that follows the ratio of the host's long-term latency to its latest (Netflix's `Gradient2Limit`).
    ///
    /// After each attempt that ended with at least half the limit in flight: gradient = long-term ÷ latest latency,
    /// kept within `0.5 ... 1`; the new limit is `limit × gradient + queueSize`, smoothed as
    /// `limit × (1 − smoothing) + new × smoothing`, and kept within ``minimum`` and ``maximum``. The long-term latency
    /// is the mean of the first 10 attempts, then an exponential average over about ``longWindow`` attempts; when it is
    /// more than twice the latest, it is cut by a tenth, so that the limit recovers soon after a period of load.
    public struct Gradient: Sendable, Equatable {
        /// The limit a host starts with; 20 by default.
        public let initial: Int
        /// The lowest the limit goes; 20 by default.
        public let minimum: Int
        /// The highest the limit goes; 200 by default.
        public let maximum: Int
        /// How much of each new estimate the limit takes, in `0 ... 1`; 0.2 by default.
        public let smoothing: Double
        /// How much the limit may grow past what the gradient allows while latency holds; 4 by default.
        public let queueSize: Int
        /// The number of attempts the long-term latency averages over; 600 by default.
        public let longWindow: Int

        /// Creates the numbers from values written in code; an invalid one traps.
        ///
        /// - Parameters:
        ///   - initial: Between `minimum` and `maximum`; 20 by default.
        ///   - minimum: At least 1; 20 by default.
        ///   - maximum: At least `minimum`; 200 by default.
        ///   - smoothing: Above 0 and at most 1; 0.2 by default.
        ///   - queueSize: 0 or more; 4 by default.
        ///   - longWindow: At least 1; 600 by default.
        public init(
            initial: Int = 20, minimum: Int = 20, maximum: Int = 200, smoothing: Double = 0.2, queueSize: Int = 4,
            longWindow: Int = 600
        ) {
            ConfigurationError.trapIfInvalid { () throws(ConfigurationError) in
                try Self.check(
                    initial: initial, minimum: minimum, maximum: maximum, smoothing: smoothing, queueSize: queueSize,
                    longWindow: longWindow)
            }
            self.init(
                checkedInitial: initial, minimum: minimum, maximum: maximum, smoothing: smoothing,
                queueSize: queueSize, longWindow: longWindow)
        }

        /// Creates the numbers from values that arrive at run time, throwing ``ConfigurationError`` for an invalid
        /// one; the parameters are those of ``init(initial:minimum:maximum:smoothing:queueSize:longWindow:)``.
        public static func validated(
            initial: Int = 20, minimum: Int = 20, maximum: Int = 200, smoothing: Double = 0.2, queueSize: Int = 4,
            longWindow: Int = 600
        ) throws(ConfigurationError) -> Gradient {
            try check(
                initial: initial, minimum: minimum, maximum: maximum, smoothing: smoothing, queueSize: queueSize,
                longWindow: longWindow)
            return Gradient(
                checkedInitial: initial, minimum: minimum, maximum: maximum, smoothing: smoothing,
                queueSize: queueSize, longWindow: longWindow)
        }

        private static func check(
            initial: Int, minimum: Int, maximum: Int, smoothing: Double, queueSize: Int, longWindow: Int
        ) throws(ConfigurationError) {
            try ConcurrencyLimit.checkRange(
                "Gradient", initial: initial, minimum: minimum, maximum: maximum, minimumAllowed: 1)
            guard smoothing.isFinite, smoothing > 0, smoothing <= 1 else {
                throw ConfigurationError(
                    field: "ConcurrencyLimit.Gradient.smoothing",
                    problem: "must be above 0 and at most 1, got \(smoothing)")
            }
            guard queueSize >= 0 else {
                throw ConfigurationError(
                    field: "ConcurrencyLimit.Gradient.queueSize", problem: "must be 0 or more, got \(queueSize)")
            }
            guard longWindow >= 1 else {
                throw ConfigurationError(
                    field: "ConcurrencyLimit.Gradient.longWindow", problem: "must be at least 1, got \(longWindow)")
            }
        }

        private init(
            checkedInitial: Int, minimum: Int, maximum: Int, smoothing: Double, queueSize: Int, longWindow: Int
        ) {
            self.initial = checkedInitial
            self.minimum = minimum
            self.maximum = maximum
            self.smoothing = smoothing
            self.queueSize = queueSize
            self.longWindow = longWindow
        }
    }

    /// Checks that `minimum ≤ initial ≤ maximum` and `minimum ≥ minimumAllowed`, naming the setting that is wrong.
    fileprivate static func checkRange(
        _ name: String, initial: Int, minimum: Int, maximum: Int, minimumAllowed: Int
    ) throws(ConfigurationError) {
        guard minimum >= minimumAllowed else {
            throw ConfigurationError(
                field: "ConcurrencyLimit.\(name).minimum", problem: "must be at least \(minimumAllowed), got \(minimum)"
            )
        }
        guard maximum >= minimum else {
            throw ConfigurationError(
                field: "ConcurrencyLimit.\(name).maximum",
                problem: "must be at least the minimum (\(minimum)), got \(maximum)")
        }
        guard (minimum...maximum).contains(initial) else {
            throw ConfigurationError(
                field: "ConcurrencyLimit.\(name).initial",
                problem: "must be between the minimum and the maximum (\(minimum)...\(maximum)), got \(initial)")
        }
    }

    /// Whether the limit never moves, so that nothing is learnt from an attempt's end.
    var isFixed: Bool {
        if case .fixed = self { return true }
        return false
    }

    /// Checks a limit written or read as a whole: a fixed one must be at least 1.
    static func check(_ limit: ConcurrencyLimit) throws(ConfigurationError) {
        if case .fixed(let value) = limit, value < 1 {
            throw ConfigurationError(field: "ConcurrencyLimit.fixed", problem: "must be at least 1, got \(value)")
        }
    }
}

/// One host's limit as it moves: the value, and what an adaptive limit remembers of the host's latency.
struct LimitState: Sendable {
    private let limit: ConcurrencyLimit
    /// The limit, fractional for the gradient's smoothing.
    private(set) var estimate: Double
    /// The gradient's long-term latency, in seconds, and how many attempts it has averaged.
    private var longLatency = 0.0
    private var samples = 0

    init(_ limit: ConcurrencyLimit) {
        self.limit = limit
        switch limit {
        case .fixed(let value): estimate = Double(value)
        case .aimd(let aimd): estimate = Double(aimd.initial)
        case .gradient(let gradient): estimate = Double(gradient.initial)
        }
    }

    /// The number of attempts allowed in flight now.
    var current: Int { Int(saturating: estimate) }

    /// Whether the limit never moves, so that an idle host's state can be forgotten.
    var isFixed: Bool { limit.isFixed }

    /// Learns from an attempt that took `latency`, ended with `inFlight` attempts in flight (itself included), and
    /// failed in a way that says the host is overloaded (`dropped`) or not.
    mutating func update(latency: Duration, inFlight: Int, dropped: Bool) {
        switch limit {
        case .fixed:
            return
        case .aimd(let aimd):
            let current = self.current
            if dropped || latency > aimd.timeout {
                let shrunk = min(current - 1, Int(saturating: Double(current) * aimd.backoffRatio))
                estimate = Double(max(aimd.minimum, shrunk))
            } else if inFlight * 2 >= current {
                // Held at the maximum without computing past it (a maximum of `Int.max`).
                estimate = Double(current >= aimd.maximum ? aimd.maximum : current + 1)
            }
        case .gradient(let gradient):
            let latest = max(latency.seconds, 1e-9)
            samples += 1
            if samples <= 10 {
                longLatency += (latest - longLatency) / Double(samples)
            } else {
                let factor = 2 / (Double(gradient.longWindow) + 1)
                longLatency = longLatency * (1 - factor) + latest * factor
            }
            if longLatency / latest > 2 { longLatency *= 0.9 }
            guard Double(inFlight) >= estimate / 2 else { return }
            let ratio = max(0.5, min(1, longLatency / latest))
            let proposed = estimate * ratio + Double(gradient.queueSize)
            let smoothed = estimate * (1 - gradient.smoothing) + proposed * gradient.smoothing
            estimate = max(Double(gradient.minimum), min(Double(gradient.maximum), smoothed))
        }
    }
}
