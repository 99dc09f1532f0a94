import Foundation

extension EndpointGroup {
    /// One base URL of the service, and its share of the traffic when the group spreads it by weight.
    public struct Endpoint: Sendable, Hashable, CustomStringConvertible {
        /// The base URL: a request under any endpoint's base URL is sent under this one's, the rest of its path, its
        /// query and its fragment kept (`https://eu.api.example.com/v2`); a port that is the scheme's default is
        /// dropped.
        public let baseURL: URL
        /// Its share of the traffic under ``Selection/weighted``, at least 1; 1 by default. Ignored under
        /// ``Selection/failover``.
        public let weight: Int

        /// An endpoint at `baseURL`; an invalid one traps, naming the setting: a base URL must be http(s) with a host,
        /// and with no query, fragment or user-info, and a weight at least 1.
        public init(_ baseURL: URL, weight: Int = 1) {
            ConfigurationError.trapIfInvalid { () throws(ConfigurationError) in
                try Self.check(baseURL, weight: weight)
            }
            self.init(checked: baseURL, weight: weight)
        }

        /// An endpoint from values that arrive at run time, throwing ``ConfigurationError`` for an invalid one; the
        /// parameters are those of ``init(_:weight:)``.
        public static func validated(_ baseURL: URL, weight: Int = 1) throws(ConfigurationError) -> Endpoint {
            try check(baseURL, weight: weight)
            return Endpoint(checked: baseURL, weight: weight)
        }

        private init(checked baseURL: URL, weight: Int) {
            self.baseURL = Self.withoutDefaultPort(baseURL)
            self.weight = weight
        }

        /// `url` without a port that is its scheme's default (`https://h:443/v2` is `https://h/v2`), so that the group's
        /// hosts and keys are those of the requests it sends.
        private static func withoutDefaultPort(_ url: URL) -> URL {
            guard let port = url.port, port == (url.scheme?.lowercased() == "https" ? 443 : 80),
                var components = URLComponents(url: url, resolvingAgainstBaseURL: false)
            else { return url }
            components.port = nil
            return components.url ?? url
        }

        private static func check(_ baseURL: URL, weight: Int) throws(ConfigurationError) {
            let scheme = baseURL.scheme?.lowercased()
            guard scheme == "http" || scheme == "https", let host = baseURL.host, !host.isEmpty else {
                throw ConfigurationError(
                    field: "EndpointGroup.Endpoint.baseURL", problem: "must be an http(s) URL with a host")
            }
            guard baseURL.query == nil, baseURL.fragment == nil, baseURL.user == nil, baseURL.password == nil else {
                throw ConfigurationError(
                    field: "EndpointGroup.Endpoint.baseURL",
                    problem: "must have no query, fragment or user-info (a base URL of \(host))")
            }
            guard weight >= 1 else {
                throw ConfigurationError(
                    field: "EndpointGroup.Endpoint.weight", problem: "must be at least 1, got \(weight)")
            }
        }

        /// The base URL's scheme, host and port, and its path: `https://eu.api.example.com/v2`, never a query.
        public var description: String { baseURL.absoluteString }
    }

    /// How the group picks the endpoint of an attempt among those it may use.
    ///
    /// A minor release may add a case: switch over it with `@unknown default` (<doc:APIStabilityGuide>).
    public enum Selection: Sendable, Hashable {
        /// The first in the order given: the others take traffic only while it is ejected, or for a retry or a hedge
        /// of a request whose attempt failed there or is in flight there.
        case failover
        /// Each attempt drawn among them in proportion to their weights.
        case weighted
    }

    /// Passive outlier detection: when an endpoint is taken out of rotation, for how long, and how many at once.
    ///
    /// Envoy's outlier detection, with its defaults: 5 failures in a row eject an endpoint for 30 s times the number of
    /// its ejections (held at 300 s); one ejection is forgotten for each 30 s the endpoint stays in rotation.
    public struct OutlierDetection: Sendable, Equatable {
        /// Envoy's defaults: 5 failures in a row, 30 s per ejection up to 300 s, at most half the group at once, no
        /// failure-rate rule.
        public static let `default` = OutlierDetection(
            checkedConsecutiveFailures: 5, failureRate: nil, baseEjectionTime: .seconds(30),
            maximumEjectionTime: .seconds(300), maximumEjectedShare: 0.5)

        /// No ejection: the group only spreads attempts and moves retries and hedges away from where they failed.
        public static let off = OutlierDetection(
            checkedConsecutiveFailures: nil, failureRate: nil, baseEjectionTime: .seconds(30),
            maximumEjectionTime: .seconds(300), maximumEjectedShare: 0.5)

        /// A failure rate over a sliding window that ejects an endpoint.
        public struct FailureRate: Sendable, Equatable {
            /// The share of failed attempts, above 0 and at most 1, that ejects the endpoint once reached.
            public let rate: Double
            /// The sliding window the attempts are counted over.
            public let window: Duration
            /// The fewest attempts in the window before the rate is read, at least 1.
            public let minimumCalls: Int

            /// A rule from values written in code; an invalid one traps, naming the setting.
            ///
            /// - Parameters:
            ///   - rate: Above 0 and at most 1; 0.5 by default.
            ///   - window: At least 1 ms; 10 s by default.
            ///   - minimumCalls: At least 1; 20 by default.
            public init(rate: Double = 0.5, window: Duration = .seconds(10), minimumCalls: Int = 20) {
                ConfigurationError.trapIfInvalid { () throws(ConfigurationError) in
                    try Self.check(rate: rate, window: window, minimumCalls: minimumCalls)
                }
                self.init(checkedRate: rate, window: window, minimumCalls: minimumCalls)
            }

            /// A rule from values that arrive at run time, throwing ``ConfigurationError`` for an invalid one; the
            /// parameters are those of ``init(rate:window:minimumCalls:)``.
            public static func validated(
                rate: Double = 0.5, window: Duration = .seconds(10), minimumCalls: Int = 20
            ) throws(ConfigurationError) -> FailureRate {
                try check(rate: rate, window: window, minimumCalls: minimumCalls)
                return FailureRate(checkedRate: rate, window: window, minimumCalls: minimumCalls)
            }

            private init(checkedRate rate: Double, window: Duration, minimumCalls: Int) {
                self.rate = rate
                self.window = window
                self.minimumCalls = minimumCalls
            }

            private static func check(rate: Double, window: Duration, minimumCalls: Int) throws(ConfigurationError) {
                guard rate.isFinite, rate > 0, rate <= 1 else {
                    throw ConfigurationError(
                        field: "EndpointGroup.OutlierDetection.FailureRate.rate",
                        problem: "must be above 0 and at most 1, got \(rate)")
                }
                guard window >= .milliseconds(1) else {
                    throw ConfigurationError(
                        field: "EndpointGroup.OutlierDetection.FailureRate.window",
                        problem: "must be at least 1 ms, got \(window)")
                }
                guard minimumCalls >= 1 else {
                    throw ConfigurationError(
                        field: "EndpointGroup.OutlierDetection.FailureRate.minimumCalls",
                        problem: "must be at least 1, got \(minimumCalls)")
                }
            }
        }

        /// How many failures in a row eject an endpoint; `nil` for no such rule. 5 by default.
        public let consecutiveFailures: Int?
        /// The failure rate that ejects an endpoint; `nil` (the default) for no such rule.
        public let failureRate: FailureRate?
        /// An ejection lasts this long times the endpoint's number of ejections; 30 s by default.
        public let baseEjectionTime: Duration
        /// The longest an ejection lasts; 300 s by default.
        public let maximumEjectionTime: Duration
        /// The largest share of the group ejected at once; 0.5 by default. It is rounded down, and at least one
        /// endpoint may always be ejected: in a group of 2 or 3, one; of 4 or 5, two (at 0.5).
        public let maximumEjectedShare: Double

        /// The rules from values written in code; an invalid one traps, naming the setting.
        ///
        /// - Parameters:
        ///   - consecutiveFailures: At least 1, or `nil` for no such rule; 5 by default.
        ///   - failureRate: A failure-rate rule, or `nil` (the default) for none.
        ///   - baseEjectionTime: Longer than zero; 30 s by default.
        ///   - maximumEjectionTime: At least `baseEjectionTime`; 300 s by default.
        ///   - maximumEjectedShare: Between 0 and 1; 0.5 by default.
        public init(
            consecutiveFailures: Int? = 5, failureRate: FailureRate? = nil, baseEjectionTime: Duration = .seconds(30),
            maximumEjectionTime: Duration = .seconds(300), maximumEjectedShare: Double = 0.5
        ) {
            ConfigurationError.trapIfInvalid { () throws(ConfigurationError) in
                try Self.check(
                    consecutiveFailures: consecutiveFailures, baseEjectionTime: baseEjectionTime,
                    maximumEjectionTime: maximumEjectionTime, maximumEjectedShare: maximumEjectedShare)
            }
            self.init(
                checkedConsecutiveFailures: consecutiveFailures, failureRate: failureRate,
                baseEjectionTime: baseEjectionTime, maximumEjectionTime: maximumEjectionTime,
                maximumEjectedShare: maximumEjectedShare)
        }

        /// The rules from values that arrive at run time, throwing ``ConfigurationError`` for an invalid one; the
        /// parameters are those of
        /// ``init(consecutiveFailures:failureRate:baseEjectionTime:maximumEjectionTime:maximumEjectedShare:)``.
        public static func validated(
            consecutiveFailures: Int? = 5, failureRate: FailureRate? = nil, baseEjectionTime: Duration = .seconds(30),
            maximumEjectionTime: Duration = .seconds(300), maximumEjectedShare: Double = 0.5
        ) throws(ConfigurationError) -> OutlierDetection {
            try check(
                consecutiveFailures: consecutiveFailures, baseEjectionTime: baseEjectionTime,
                maximumEjectionTime: maximumEjectionTime, maximumEjectedShare: maximumEjectedShare)
            return OutlierDetection(
                checkedConsecutiveFailures: consecutiveFailures, failureRate: failureRate,
                baseEjectionTime: baseEjectionTime, maximumEjectionTime: maximumEjectionTime,
                maximumEjectedShare: maximumEjectedShare)
        }

        private init(
            checkedConsecutiveFailures consecutiveFailures: Int?, failureRate: FailureRate?,
            baseEjectionTime: Duration, maximumEjectionTime: Duration, maximumEjectedShare: Double
        ) {
            self.consecutiveFailures = consecutiveFailures
            self.failureRate = failureRate
            self.baseEjectionTime = baseEjectionTime
            self.maximumEjectionTime = maximumEjectionTime
            self.maximumEjectedShare = maximumEjectedShare
        }

        private static func check(
            consecutiveFailures: Int?, baseEjectionTime: Duration, maximumEjectionTime: Duration,
            maximumEjectedShare: Double
        ) throws(ConfigurationError) {
            if let consecutiveFailures, consecutiveFailures < 1 {
                throw ConfigurationError(
                    field: "EndpointGroup.OutlierDetection.consecutiveFailures",
                    problem: "must be at least 1, got \(consecutiveFailures)")
            }
            guard baseEjectionTime > .zero else {
                throw ConfigurationError(
                    field: "EndpointGroup.OutlierDetection.baseEjectionTime",
                    problem: "must be longer than zero, got \(baseEjectionTime)")
            }
            guard maximumEjectionTime >= baseEjectionTime else {
                throw ConfigurationError(
                    field: "EndpointGroup.OutlierDetection.maximumEjectionTime",
                    problem: "must be at least baseEjectionTime (\(baseEjectionTime)), got \(maximumEjectionTime)")
            }
            guard maximumEjectedShare.isFinite, (0...1).contains(maximumEjectedShare) else {
                throw ConfigurationError(
                    field: "EndpointGroup.OutlierDetection.maximumEjectedShare",
                    problem: "must be between 0 and 1, got \(maximumEjectedShare)")
            }
        }

        /// How many endpoints of a group of `count` may be ejected at once: the share rounded down, at least one.
        func maximumEjected(of count: Int) -> Int {
            Swift.max(1, Int((maximumEjectedShare * Double(count)).rounded(.down)))
        }
    }

    /// An endpoint taken out of rotation, as ``EndpointGroup``'s `onEjection` hears it.
    public struct Ejection: Sendable, Equatable, CustomStringConvertible {
        /// Which rule ejected it.
        ///
        /// A minor release may add a case: switch over it with `@unknown default` (<doc:APIStabilityGuide>).
        public enum Rule: String, Sendable, Hashable {
            /// ``OutlierDetection/consecutiveFailures`` failures in a row.
            case consecutiveFailures
            /// The ``OutlierDetection/failureRate`` was reached.
            case failureRate
            /// Its first attempt back after an ejection failed.
            case trialFailed
        }

        /// The group's name.
        public let group: String
        /// The endpoint ejected.
        public let endpoint: Endpoint
        /// The rule that ejected it.
        public let rule: Rule
        /// How long it is out of rotation.
        public let duration: Duration
        /// How many ejections it has on record, this one included: the ejection lasts the base time times this many.
        public let ejections: Int

        /// For example `endpoint https://eu.api.example.com/v2 of payments ejected for 60 s (consecutiveFailures,
        /// ejection 2)`.
        public var description: String {
            "endpoint \(endpoint) of \(group) ejected for \(duration.logDescription) (\(rule.rawValue), ejection \(ejections))"
        }
    }
}
