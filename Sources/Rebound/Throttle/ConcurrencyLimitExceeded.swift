import Foundation

/// The error of an attempt a ``ConcurrencyLimiter`` refused: its host had no place for it and no room in its queue,
/// or it waited in the queue longer than the queue timeout.
public struct ConcurrencyLimitExceeded: NonRetryableError, Sendable, Equatable, CustomStringConvertible {
    /// Which limit the attempt hit.
    ///
    /// A minor release may add a case: switch over it with `@unknown default` (<doc:APIStabilityGuide>).
    public enum LimitHit: String, Sendable, Equatable {
        /// Every place was taken and the limiter has no queue.
        case inFlight
        /// Every place was taken and the queue was full.
        case queue
        /// The attempt waited in the queue for the whole queue timeout.
        case queueTimeout
    }

    /// The host's key, usually the host.
    public let key: String
    /// Which limit the attempt hit.
    public let limitHit: LimitHit
    /// The host's limit at the time.
    public let limit: Int
    /// The attempts in flight to the host at the time.
    public let inFlight: Int
    /// The attempts waiting in the host's queue at the time.
    public let queued: Int

    /// Creates the error; limiters create these, and test code may too.
    public init(key: String, limitHit: LimitHit, limit: Int, inFlight: Int, queued: Int) {
        self.key = key
        self.limitHit = limitHit
        self.limit = limit
        self.inFlight = inFlight
        self.queued = queued
    }

    /// For example `concurrency limit for api.example.com reached (queue full): 16 of 16 in flight, 32 queued`.
    public var description: String {
        let what =
            switch limitHit {
            case .inFlight: "no place"
            case .queue: "queue full"
            case .queueTimeout: "queue timeout"
            }
        return "concurrency limit for \(key) reached (\(what)): \(inFlight) of \(limit) in flight, \(queued) queued"
    }
}
