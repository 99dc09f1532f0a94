import Foundation

extension ConcurrencyLimiter {
    /// The limiter's numbers.
    public struct Configuration: Sendable, Equatable {
        /// 64 attempts in flight per host, no queue.
        public static let `default` = Configuration(
            checkedLimit: .fixed(64), maximumQueued: 0, queueTimeout: .seconds(1))

        /// How many attempts may be in flight to one host; `.fixed(64)` by default.
        public let limit: ConcurrencyLimit
        /// How many attempts may wait for a place, per host; 0 by default (a full host refuses at once).
        public let maximumQueued: Int
        /// How long an attempt waits in the queue before it fails; 1 s by default.
        public let queueTimeout: Duration

        /// Creates the numbers from values written in code; an invalid one traps.
        ///
        /// - Parameters:
        ///   - limit: A fixed limit of at least 1, or an adaptive one; `.fixed(64)` by default.
        ///   - maximumQueued: 0 or more; 0 by default.
        ///   - queueTimeout: Longer than zero; 1 s by default.
        public init(limit: ConcurrencyLimit = .fixed(64), maximumQueued: Int = 0, queueTimeout: Duration = .seconds(1))
        {
            ConfigurationError.trapIfInvalid { () throws(ConfigurationError) in
                try Self.check(limit: limit, maximumQueued: maximumQueued, queueTimeout: queueTimeout)
            }
            self.init(checkedLimit: limit, maximumQueued: maximumQueued, queueTimeout: queueTimeout)
        }

        /// Creates the numbers from values that arrive at run time, throwing ``ConfigurationError`` for an invalid
        /// one; the parameters are those of ``init(limit:maximumQueued:queueTimeout:)``.
        public static func validated(
            limit: ConcurrencyLimit = .fixed(64), maximumQueued: Int = 0, queueTimeout: Duration = .seconds(1)
        ) throws(ConfigurationError) -> Configuration {
            try check(limit: limit, maximumQueued: maximumQueued, queueTimeout: queueTimeout)
            return Configuration(checkedLimit: limit, maximumQueued: maximumQueued, queueTimeout: queueTimeout)
        }

        private static func check(
            limit: ConcurrencyLimit, maximumQueued: Int, queueTimeout: Duration
        ) throws(ConfigurationError) {
            try ConcurrencyLimit.check(limit)
            guard maximumQueued >= 0 else {
                throw ConfigurationError(
                    field: "ConcurrencyLimiter.Configuration.maximumQueued",
                    problem: "must be 0 or more, got \(maximumQueued)")
            }
            guard queueTimeout > .zero else {
                throw ConfigurationError(
                    field: "ConcurrencyLimiter.Configuration.queueTimeout",
                    problem: "must be longer than zero, got \(queueTimeout)")
            }
        }

        private init(checkedLimit: ConcurrencyLimit, maximumQueued: Int, queueTimeout: Duration) {
            self.limit = checkedLimit
            self.maximumQueued = maximumQueued
            self.queueTimeout = queueTimeout
        }
    }
}

extension ConcurrencyLimiter {
    /// One host's places now: a pure read, for a gauge.
    public struct Snapshot: Sendable, Equatable {
        /// The attempts allowed in flight.
        public let limit: Int
        /// The attempts in flight.
        public let inFlight: Int
        /// The attempts waiting for a place.
        public let queued: Int
    }
}

extension ConcurrencyLimiter {
    /// The refusal of a hedge that finds `key`'s host with no place free, with the host's places now: a hedge never
    /// queues.
    func noPlace(for key: String) -> ConcurrencyLimitExceeded {
        let host = snapshot(for: key)
        return ConcurrencyLimitExceeded(
            key: key, limitHit: .inFlight, limit: host.limit, inFlight: host.inFlight, queued: host.queued)
    }
}
