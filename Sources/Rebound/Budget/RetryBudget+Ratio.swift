import Foundation

extension RetryBudget {
    /// The numbers of a budget that lets retries be a share of the traffic: Finagle's `RetryBudget`.
    ///
    /// Over any sliding ``window``, a host's retries may be at most ``percent`` % of its requests (first attempts),
    /// plus ``minimumRetriesPerSecond`` × the window's length in seconds, so that a host with little traffic can still
    /// retry. In a long outage a chain with this budget sends at most `1 + percent / 100` attempts per request, plus
    /// the floor's share: 1.1 and one retry a second with the defaults, whatever the traffic. Unlike the token bucket,
    /// nothing is spent in advance: a second outage soon after the first gets the same share.
    public struct Ratio: Sendable, Equatable {
        /// 10 % over 10 s, with a floor of 1 retry a second.
        public static let `default` = Ratio(
            checkedPercent: 10, window: .seconds(10), minimumRetriesPerSecond: 1)

        /// Retries as a share of requests, in percent; `10` by default.
        public let percent: Double
        /// The sliding window requests and retries are counted over; 10 s by default.
        public let window: Duration
        /// Retries allowed per second of the window whatever the traffic; `1` by default.
        public let minimumRetriesPerSecond: Double

        /// Creates the numbers from values written in code; an invalid one traps.
        ///
        /// - Parameters:
        ///   - percent: Retries as a share of requests, between 0 and 100; 10 by default.
        ///   - window: The sliding window, at least 1 ms; 10 s by default.
        ///   - minimumRetriesPerSecond: The floor, 0 or more; 1 by default.
        public init(percent: Double = 10, window: Duration = .seconds(10), minimumRetriesPerSecond: Double = 1) {
            ConfigurationError.trapIfInvalid { () throws(ConfigurationError) in
                try Self.check(percent: percent, window: window, minimumRetriesPerSecond: minimumRetriesPerSecond)
            }
            self.init(checkedPercent: percent, window: window, minimumRetriesPerSecond: minimumRetriesPerSecond)
        }

        /// Creates the numbers from values that arrive at run time, throwing ``ConfigurationError`` for an invalid
        /// one; the parameters are those of ``init(percent:window:minimumRetriesPerSecond:)``.
        public static func validated(
            percent: Double = 10, window: Duration = .seconds(10), minimumRetriesPerSecond: Double = 1
        ) throws(ConfigurationError) -> Ratio {
            try check(percent: percent, window: window, minimumRetriesPerSecond: minimumRetriesPerSecond)
            return Ratio(checkedPercent: percent, window: window, minimumRetriesPerSecond: minimumRetriesPerSecond)
        }

        private static func check(percent: Double, window: Duration, minimumRetriesPerSecond: Double)
            throws(ConfigurationError)
        {
            guard percent.isFinite, (0...100).contains(percent) else {
                throw ConfigurationError(
                    field: "RetryBudget.Ratio.percent", problem: "must be between 0 and 100, got \(percent)")
            }
            guard window >= .milliseconds(1) else {
                throw ConfigurationError(
                    field: "RetryBudget.Ratio.window", problem: "must be at least 1 ms, got \(window)")
            }
            guard minimumRetriesPerSecond.isFinite, minimumRetriesPerSecond >= 0 else {
                throw ConfigurationError(
                    field: "RetryBudget.Ratio.minimumRetriesPerSecond",
                    problem: "must be 0 or more, got \(minimumRetriesPerSecond)")
            }
        }

        private init(checkedPercent: Double, window: Duration, minimumRetriesPerSecond: Double) {
            self.percent = checkedPercent
            self.window = window
            self.minimumRetriesPerSecond = minimumRetriesPerSecond
        }

        /// The retries the floor allows over one window.
        var floorPerWindow: Double {
            minimumRetriesPerSecond * window.seconds
        }
    }
}

/// A host's requests and retries over the last window.
struct RatioWindow: Sendable {
    private var tally = SlidingTally()

    /// Counts `count` requests (`-1` takes back one counted for a host the request was not sent to).
    mutating func addRequest(_ count: Int = 1, at now: Duration, window: Duration) {
        tally.add(first: count, at: now, window: window)
    }

    mutating func addRetry(_ count: Int, at now: Duration, window: Duration) {
        tally.add(second: count, at: now, window: window)
    }

    /// Whether nothing is counted in the window that ends at `now`: the host's budget is back where it started.
    func isEmpty(at now: Duration, window: Duration) -> Bool {
        tally.isEmpty(at: now, window: window)
    }

    /// The retries still allowed in the window: the share of its requests plus the floor, less its retries. Reading
    /// changes nothing.
    func available(at now: Duration, ratio: RetryBudget.Ratio) -> Double {
        let (requests, retries) = tally.totals(at: now, window: ratio.window)
        return Double(requests) * ratio.percent / 100 + ratio.floorPerWindow - Double(retries)
    }
}
