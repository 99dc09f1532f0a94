import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Learns the hedging delay of each host from the latencies it observes, so that a session hedges without a delay to
/// choose: Finagle's backup requests, for ``Hedging/init(learning:maximumInFlight:maximumAttempts:)``.
///
/// **The delay.** For each host (the host the request was written for: for an ``EndpointGroup``, the group's), the
/// delay is the latency that a share of ``Configuration/maximumExtraLoad`` of the answers exceed (the 98th percentile
/// at the default 2%), read from the last ``Configuration/samples`` answers of the last ``Configuration/window``, held
/// at ``Configuration/minimumDelay`` at least, and then raised by a twentieth, so that answers that take about as long
/// as the percentile (a tie) are not hedged. A latency is the time from a round's first attempt reaching the transport
/// to the success that won the round, whatever attempt gave it; a round that ended otherwise (a failure, the deadline)
/// teaches nothing. Until a host has ``Configuration/minimumSamples`` answers in the window, its requests are not
/// hedged. Only requests that may be repeated, as their first attempt is sent, count: a POST without an
/// `Idempotency-Key` is never hedged, and neither counts nor teaches; one an ``IdempotencyKeyAdapter`` keys does both.
///
/// **The cap.** Each request to a host adds ``Configuration/maximumExtraLoad`` of a hedge to what the host may be sent,
/// and each hedge takes one, never more than one in hand: over any stretch of requests, the hedges are at most that
/// share of them, and one more (a request's retries add nothing, nor does a hedge in place of the retry of a 401 or of
/// a failure of the device's own network). So a host is hedged from its 50th request on (at 2%), and when every answer
/// of a host slows down, the cap holds while the percentile moves up with them. A hedge still passes the request's
/// hedge gates (a budget is charged for it, a breaker may refuse it); a hedge they refuse, or one that never reaches
/// the transport, is given back.
///
/// **Sharing and memory.** One learner keeps every host's samples behind one lock: share one instance between the
/// sessions that talk to the same hosts. It keeps at most ``Configuration/samples`` latencies per host (8 bytes each)
/// and at most `maximumHosts` hosts, forgetting the host it used least lately at the cap.
///
/// ```swift
/// let session = Session(retriers: [RetryPolicy()], hedging: Hedging(learning: HedgingDelayLearner()))
/// ```
public final class HedgingDelayLearner: Sendable {
    /// The learner's numbers.
    public struct Configuration: Sendable, Equatable {
        /// Finagle's 2% of extra load, read from the last 200 answers of the last 30 s, at least 20 of them, and a
        /// delay of at least 5 ms.
        public static let `default` = Configuration(
            checkedMaximumExtraLoad: 0.02, minimumDelay: .milliseconds(5), window: .seconds(30), samples: 200,
            minimumSamples: 20)

        /// The share of extra attempts hedging may add, above 0 and at most 0.5: the delay is the latency this share of
        /// answers exceed, and the hedges are at most this share of the rounds; 0.02 by default.
        public let maximumExtraLoad: Double
        /// The shortest delay, zero or more; 5 ms by default.
        public let minimumDelay: Duration
        /// How far back answers and hedges are counted, at least 1 s; 30 s by default.
        public let window: Duration
        /// How many of a host's latest answers are kept, from 10 to 10,000; 200 by default.
        public let samples: Int
        /// How many answers a host needs in the window before its requests are hedged, at least 1 and at most
        /// `samples`; 20 by default.
        public let minimumSamples: Int

        /// The numbers from values written in code; an invalid one traps, naming the setting.
        ///
        /// - Parameters:
        ///   - maximumExtraLoad: Above 0 and at most 0.5; 0.02 by default.
        ///   - minimumDelay: Zero or more; 5 ms by default.
        ///   - window: At least 1 s; 30 s by default.
        ///   - samples: From 10 to 10,000; 200 by default.
        ///   - minimumSamples: From 1 to `samples`; 20 by default.
        public init(
            maximumExtraLoad: Double = 0.02, minimumDelay: Duration = .milliseconds(5), window: Duration = .seconds(30),
            samples: Int = 200, minimumSamples: Int = 20
        ) {
            ConfigurationError.trapIfInvalid { () throws(ConfigurationError) in
                try Self.check(
                    maximumExtraLoad: maximumExtraLoad, minimumDelay: minimumDelay, window: window, samples: samples,
                    minimumSamples: minimumSamples)
            }
            self.init(
                checkedMaximumExtraLoad: maximumExtraLoad, minimumDelay: minimumDelay, window: window,
                samples: samples, minimumSamples: minimumSamples)
        }

        /// The numbers from values that arrive at run time, throwing ``ConfigurationError`` for an invalid one; the
        /// parameters are those of ``init(maximumExtraLoad:minimumDelay:window:samples:minimumSamples:)``.
        public static func validated(
            maximumExtraLoad: Double = 0.02, minimumDelay: Duration = .milliseconds(5), window: Duration = .seconds(30),
            samples: Int = 200, minimumSamples: Int = 20
        ) throws(ConfigurationError) -> Configuration {
            try check(
                maximumExtraLoad: maximumExtraLoad, minimumDelay: minimumDelay, window: window, samples: samples,
                minimumSamples: minimumSamples)
            return Configuration(
                checkedMaximumExtraLoad: maximumExtraLoad, minimumDelay: minimumDelay, window: window,
                samples: samples, minimumSamples: minimumSamples)
        }

        private init(
            checkedMaximumExtraLoad maximumExtraLoad: Double, minimumDelay: Duration, window: Duration, samples: Int,
            minimumSamples: Int
        ) {
            self.maximumExtraLoad = maximumExtraLoad
            self.minimumDelay = minimumDelay
            self.window = window
            self.samples = samples
            self.minimumSamples = minimumSamples
        }

        private static func check(
            maximumExtraLoad: Double, minimumDelay: Duration, window: Duration, samples: Int, minimumSamples: Int
        ) throws(ConfigurationError) {
            guard maximumExtraLoad.isFinite, maximumExtraLoad > 0, maximumExtraLoad <= 0.5 else {
                throw ConfigurationError(
                    field: "HedgingDelayLearner.Configuration.maximumExtraLoad",
                    problem: "must be above 0 and at most 0.5, got \(maximumExtraLoad)")
            }
            guard minimumDelay >= .zero else {
                throw ConfigurationError(
                    field: "HedgingDelayLearner.Configuration.minimumDelay",
                    problem: "must be zero or more, got \(minimumDelay)")
            }
            guard window >= .seconds(1) else {
                throw ConfigurationError(
                    field: "HedgingDelayLearner.Configuration.window", problem: "must be at least 1 s, got \(window)")
            }
            guard (10...10_000).contains(samples) else {
                throw ConfigurationError(
                    field: "HedgingDelayLearner.Configuration.samples",
                    problem: "must be from 10 to 10,000, got \(samples)")
            }
            guard (1...samples).contains(minimumSamples) else {
                throw ConfigurationError(
                    field: "HedgingDelayLearner.Configuration.minimumSamples",
                    problem: "must be from 1 to samples (\(samples)), got \(minimumSamples)")
            }
        }
    }

    /// What the learner knows of one host now: a pure read, for a gauge.
    public struct Snapshot: Sendable, Equatable {
        /// The answers in the window it reads the delay from.
        public let samples: Int
        /// The delay its next round would hedge after; `nil` while it has too few answers.
        public let delay: Duration?
        /// The requests whose first round started in the window.
        public let rounds: Int
        /// The hedges started in the window and counted against the cap (not those in place of a retry after a 401
        /// or a failure of the device's own network, which the cap does not count).
        public let hedges: Int
    }

    /// One host's latest answers and its count of rounds and hedges.
    private struct Host: Sendable {
        /// The latest latencies in microseconds, with when each came (in tenths of a second on the learner's clock),
        /// oldest overwritten first.
        var latencies: [UInt32] = []
        var times: [UInt32] = []
        var next = 0
        /// Hedged rounds (first) and hedges (second) over the window, for a gauge.
        var tally = SlidingTally()
        /// The hedges the host may still be sent: a share of a hedge for each round, one taken by each hedge, never more
        /// than one in hand.
        var credit = 0.0
        /// The delay read last, when, and how many answers came since.
        var delay: Duration?
        var readAt: Duration?
        var answersSinceRead = 0
    }

    /// The learner's numbers.
    public let configuration: Configuration

    private let keyFunction: CircuitBreakerRegistry.KeyFunction
    private let clock: SessionClock
    private let hosts: Locked<HostTable<Host>>

    /// Creates a learner.
    ///
    /// - Parameters:
    ///   - configuration: Its numbers; ``Configuration/default`` (Finagle's 2%) by default.
    ///   - key: Picks the host a request's latencies are learned for, or `nil` for a request never hedged;
    ///     ``CircuitBreakerRegistry/hostKey(for:)`` of the request as the caller wrote it by default.
    ///   - clock: The clock the window is measured on; `ContinuousClock` by default (give it the session's).
    ///   - maximumHosts: The most hosts it keeps, at least 1; 1,000 by default. At the cap, a new host makes it forget
    ///     the host it used least lately.
    public init<C: Clock>(
        configuration: Configuration = .default,
        key: @escaping CircuitBreakerRegistry.KeyFunction = CircuitBreakerRegistry.hostKey,
        clock: C = ContinuousClock(), maximumHosts: Int = 1_000
    ) where C.Duration == Duration {
        HostTable<Host>.trapIfInvalid(maximumHosts, owner: "HedgingDelayLearner")
        self.configuration = configuration
        self.keyFunction = key
        self.clock = SessionClock(clock)
        self.hosts = Locked(HostTable(capacity: maximumHosts))
    }

    /// What the learner knows of `key`'s host now; reading changes nothing.
    public func snapshot(for key: String) -> Snapshot {
        let now = clock.now()
        return hosts.withLock { hosts in
            guard var host = hosts[key] else { return Snapshot(samples: 0, delay: nil, rounds: 0, hedges: 0) }
            let (rounds, hedges) = host.tally.totals(at: now, window: configuration.window)
            // Read on a copy, as the next round would read it.
            let delay = read(&host, at: now)
            return Snapshot(samples: liveSamples(of: host, at: now), delay: delay, rounds: rounds, hedges: hedges)
        }
    }

    /// What the learner knows of the host a request to `url` goes to (its key by the learner's `key:`); `nil` for a
    /// request the learner keys nothing for.
    public func snapshot(for url: URL) -> Snapshot? {
        key(for: URLRequest(url: url)).map { snapshot(for: $0) }
    }

    /// The host `request`'s latencies are learned for; `nil` for a request never hedged.
    func key(for request: URLRequest) -> String? {
        keyFunction(request)
    }

    /// Counts the first round of a request to `key`'s host starting now (a share of a hedge more that the host may be
    /// sent), and returns the delay it hedges after; `nil` while the host has too few answers, for a round that starts
    /// no hedge. A retry's round is not counted again (`counts` is `false`).
    package func startRound(for key: String, counts: Bool = true) -> Duration? {
        let now = clock.now()
        return hosts.withLock { hosts in
            hosts.update(key, make: Host.init, isAtRest: isAtRest(at: now)) { host in
                if counts {
                    host.tally.add(first: 1, at: now, window: configuration.window)
                    host.credit = min(host.credit + configuration.maximumExtraLoad, 1)
                }
                return read(&host, at: now)
            }
        }
    }

    /// Takes a hedge from what `key`'s host may still be sent and returns `true`; `false`, taking nothing, when less
    /// than a whole hedge is left. So over any stretch of requests the hedges are at most `maximumExtraLoad` of them,
    /// and one more.
    package func admitsHedge(for key: String) -> Bool {
        let now = clock.now()
        return hosts.withLock { hosts in
            hosts.modify(key) { host -> Bool in
                guard host.credit >= 1 else { return false }
                host.credit -= 1
                host.tally.add(second: 1, at: now, window: configuration.window)
                return true
            } ?? false
        }
    }

    /// Gives back the hedge ``admitsHedge(for:)`` took for `key`'s host, which did not start (a gate refused it).
    package func hedgeNotStarted(for key: String) {
        let now = clock.now()
        hosts.withLock { hosts in
            hosts.modify(key) { host in
                host.credit = min(host.credit + 1, 1)
                host.tally.add(second: -1, at: now, window: configuration.window)
            }
        }
    }

    /// Gives back the share ``admitsHedge(for:)`` took for `key`'s host for a hedge that started but never reached the
    /// transport (an adapter stopped it, or the round ended first): it added no load. The hedge stays counted in the
    /// window's hedges (``Snapshot/hedges``), as one that started.
    package func hedgeNotSent(for key: String) {
        hosts.withLock { hosts in
            hosts.modify(key) { host in host.credit = min(host.credit + 1, 1) }
        }
    }

    /// Learns the latency of an answer from `key`'s host: the session calls it as each hedged round ends with an
    /// answer; tests may too.
    package func learn(_ latency: Duration, for key: String) {
        let now = clock.now()
        let micros = UInt32(clamping: max(latency, .zero).wholeMicroseconds)
        let tenths = Self.tenths(now)
        hosts.withLock { hosts in
            hosts.update(key, make: Host.init, isAtRest: isAtRest(at: now)) { host in
                if host.latencies.count < configuration.samples {
                    host.latencies.append(micros)
                    host.times.append(tenths)
                } else {
                    host.latencies[host.next] = micros
                    host.times[host.next] = tenths
                }
                host.next = (host.next + 1) % configuration.samples
                host.answersSinceRead += 1
            }
        }
    }

    /// The delay of `host` `now`: read again from its samples once a twentieth of them (at least two) came since the
    /// last read, or a tenth of the window passed, else the last one read.
    private func read(_ host: inout Host, at now: Duration) -> Duration? {
        if let readAt = host.readAt, now - readAt < configuration.window / 10,
            host.answersSinceRead < max(configuration.samples / 20, 2)
        {
            return host.delay
        }
        host.readAt = now
        host.answersSinceRead = 0
        let oldest = Self.tenths(now - configuration.window)
        var live: [UInt32] = []
        live.reserveCapacity(host.latencies.count)
        for (latency, time) in zip(host.latencies, host.times) where time > oldest {
            live.append(latency)
        }
        guard live.count >= configuration.minimumSamples else {
            host.delay = nil
            return nil
        }
        live.sort()
        // The latency a share of `maximumExtraLoad` of the answers exceed.
        let index = min(Int((Double(live.count) * (1 - configuration.maximumExtraLoad)).rounded(.up)), live.count) - 1
        let quantile = Duration.microseconds(Int64(live[max(index, 0)]))
        let delay = max(quantile, configuration.minimumDelay)
        // Raised by a twentieth: answers that take about the percentile are not hedged.
        host.delay = delay + delay / 20
        return host.delay
    }

    /// Whether a host can be forgotten `now`: no round and no answer of it in the window.
    private func isAtRest(at now: Duration) -> @Sendable (Host) -> Bool {
        let window = configuration.window
        let oldest = Self.tenths(now - window)
        return { host in host.tally.isEmpty(at: now, window: window) && !host.times.contains { $0 > oldest } }
    }

    /// How many of `host`'s samples are in the window that ends `now`.
    private func liveSamples(of host: Host, at now: Duration) -> Int {
        let oldest = Self.tenths(now - configuration.window)
        return host.times.count { $0 > oldest }
    }

    /// `instant` on the learner's clock in tenths of a second, counted from 1 at the clock's origin (13 years at most);
    /// 0 for an instant before the origin, so that a window reaching back past it holds every sample.
    private static func tenths(_ instant: Duration) -> UInt32 {
        instant < .zero ? 0 : UInt32(clamping: instant.wholeMicroseconds / 100_000 + 1)
    }
}

extension Duration {
    /// The duration in whole microseconds, rounded down.
    fileprivate var wholeMicroseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000 + attoseconds / 1_000_000_000_000
    }
}
