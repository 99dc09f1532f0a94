import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Paces each host's requests after it throttles them: the AWS SDKs' adaptive retry mode, a token bucket whose rate
/// follows CUBIC (the congestion control of TCP), shared by every session it is given to.
///
/// **The rule.** Nothing is paced until a host throttles a request (a 429 or a 503 by default, `isThrottling:`). From
/// then on every attempt to it takes a token from the host's bucket, and waits for one when the bucket is empty. The
/// bucket fills at a rate that CUBIC moves: a throttle cuts it to 0.7 of the rate the client was sending at; each
/// response that is not a throttle lets it grow again, slowly near the rate of the last throttle and faster away from
/// it, never above twice the rate of responses the client measures (averaged over half-second buckets). The rate
/// never falls below half a request a second, and the bucket holds at most a second's worth (at least one token). A
/// hedge (``Hedging``) starts only while its host is not paced or has a token, so that it does not wait for one.
///
/// Unlike ``AdaptiveThrottle``, it rejects nothing: an attempt waits for its token, for as long as the request's
/// deadline allows, and a task cancelled while it waits ends with `CancellationError`.
///
/// **Placement and sharing.** Put it in a chain's adapters, after the parts that refuse requests (a throttle, a
/// breaker): a refused request then takes no token. It registers through the request's context to hear how the
/// attempts it let through end, so it keeps working inside any wrapper that forwards `adapt`. One limiter keeps every
/// host's bucket behind one lock: share one instance between the sessions that talk to the same hosts. It forgets a
/// host that is not paced once it has not been used lately, and keeps at most `maximumHosts` hosts (see
/// <doc:SecurityGuide>).
///
/// ```swift
/// let pacing = AdaptiveRateLimiter()
/// let session = Session(adapters: [pacing], retriers: [RetryPolicy()])
/// ```
public final class AdaptiveRateLimiter: RequestAdapter, RetryGate {
    /// One host's pacing now: a pure read, for a gauge.
    public struct Snapshot: Sendable, Equatable {
        /// Whether the host has throttled a request, so that its requests are paced.
        public let isPacing: Bool
        /// The rate the bucket fills at, in requests a second.
        public let rate: Double
        /// The rate of responses the client measured, in responses a second.
        public let measuredRate: Double
        /// The tokens in the bucket.
        public let tokens: Double
    }

    /// CUBIC's scale constant (the AWS SDKs' 0.4).
    static let scale = 0.4
    /// The share of the rate kept after a throttle (the AWS SDKs' 0.7).
    static let decrease = 0.7
    /// The lowest fill rate, in requests a second.
    static let minimumRate = 0.5
    /// The weight of the latest half second in the measured rate.
    static let smoothing = 0.8
    /// How long, in seconds, a host it does not pace goes without a response before the limiter forgets it as responses
    /// of other hosts come, though no new host comes: a minute.
    static let idleHorizon = 60.0

    /// One host's bucket, rate and measurements, in seconds on the limiter's clock.
    private struct Host: Sendable {
        var pacing = false
        var rate = 0.0
        var capacity = 1.0
        var tokens = 0.0
        var filled: Double?
        /// CUBIC: the rate when the host last throttled, and when.
        var lastMaximum = 0.0
        var lastThrottle = 0.0
        /// The measured rate of responses, over half-second buckets.
        var measured = 0.0
        var bucket = 0.0
        var sent = 0

        /// Fills the bucket up to `now`.
        mutating func fill(at now: Double) {
            if let filled { tokens = min(capacity, tokens + (now - filled) * rate) }
            filled = now
        }

        /// Counts a response received at `now` in the measured rate.
        mutating func measure(at now: Double) {
            let current = (now * 2).rounded(.down) / 2
            sent += 1
            if current > bucket {
                let latest = Double(sent) / (current - bucket)
                measured = latest * AdaptiveRateLimiter.smoothing + measured * (1 - AdaptiveRateLimiter.smoothing)
                sent = 0
                bucket = current
            }
        }

        /// Counts a response and moves the rate: down after a throttle, along CUBIC's curve after anything else, never
        /// above twice the measured rate.
        mutating func learn(throttled: Bool, at now: Double) {
            measure(at: now)
            var proposed: Double
            if throttled {
                let current = pacing ? min(measured, rate) : measured
                lastMaximum = current
                lastThrottle = now
                proposed = current * AdaptiveRateLimiter.decrease
                pacing = true
            } else {
                // Before the first throttle there is nothing to pace: only the rate is measured.
                guard pacing else { return }
                let k = cbrt(lastMaximum * (1 - AdaptiveRateLimiter.decrease) / AdaptiveRateLimiter.scale)
                proposed = AdaptiveRateLimiter.scale * pow(now - lastThrottle - k, 3) + lastMaximum
            }
            proposed = min(proposed, 2 * measured)
            fill(at: now)
            rate = max(proposed, AdaptiveRateLimiter.minimumRate)
            capacity = max(proposed, 1)
            tokens = min(tokens, capacity)
        }
    }

    private struct State: Sendable {
        /// Each host's bucket and measurements; a host that is not paced is at rest.
        var hosts: HostTable<Host>
    }

    private let keyFunction: CircuitBreakerRegistry.KeyFunction
    private let isThrottling: @Sendable (Attempt) -> Bool
    private let clock: SessionClock
    private let state: Locked<State>

    /// Creates a limiter.
    ///
    /// - Parameters:
    ///   - key: Picks the host whose bucket a request draws on, or `nil` for a request never paced;
    ///     ``CircuitBreakerRegistry/hostKey(for:)`` by default.
    ///   - clock: The clock the rates are measured and the waits slept on; `ContinuousClock` by default.
    ///   - isThrottling: Whether an attempt that was sent was throttled; by default a response of 429 or 503.
    ///   - maximumHosts: The most hosts the limiter keeps, at least 1; 10,000 by default. A host that is not paced and
    ///     was not used lately is forgotten; at the cap, a new host makes the limiter forget the host it used least
    ///     lately, paced or not (see <doc:SecurityGuide>).
    public init<C: Clock>(
        key: @escaping CircuitBreakerRegistry.KeyFunction = CircuitBreakerRegistry.hostKey,
        clock: C = ContinuousClock(),
        isThrottling: @escaping @Sendable (Attempt) -> Bool = { [429, 503].contains($0.statusCode ?? 0) },
        maximumHosts: Int = 10_000
    ) where C.Duration == Duration {
        HostTable<Host>.trapIfInvalid(maximumHosts, owner: "AdaptiveRateLimiter")
        self.state = Locked(State(hosts: HostTable(capacity: maximumHosts)))
        self.keyFunction = key
        self.isThrottling = isThrottling
        self.clock = SessionClock(clock)
    }

    /// The pacing of `key`'s host now; reading changes nothing.
    public func snapshot(for key: String) -> Snapshot {
        let now = clock.now().seconds
        return state.withLock { state in
            guard var host = state.hosts[key] else {
                return Snapshot(isPacing: false, rate: 0, measuredRate: 0, tokens: 0)
            }
            host.fill(at: now)
            return Snapshot(isPacing: host.pacing, rate: host.rate, measuredRate: host.measured, tokens: host.tokens)
        }
    }

    /// The pacing of the host a request to `url` draws on; `nil` for a request never paced.
    public func snapshot(for url: URL) -> Snapshot? {
        keyFunction(URLRequest(url: url)).map { snapshot(for: $0) }
    }

    /// Takes a token from the host's bucket once the host has throttled a request, waiting for one if the bucket is
    /// empty, and registers through the context to hear how the attempt ends.
    ///
    /// - Throws: `CancellationError` when the task is cancelled while it waits.
    public func adapt(_ request: consuming URLRequest, context: RequestContext) async throws -> URLRequest {
        guard let key = keyFunction(request) else { return request }
        try await pace(key)
        context.settleAndAdmitRetries(through: self)
        // A later adapter that moves the request to another host has the session have it paced by that host instead.
        context.admitted(by: self, under: key, at: request.url)
        return request
    }

    /// Takes a token for `key`, waiting for one if its host is paced and its bucket is empty.
    private func pace(_ key: String) async throws {
        while let wait = take(key) {
            do {
                try await clock.sleep(wait)
            } catch {
                throw CancellationError()
            }
        }
    }

    /// Takes a token for `key` if its host is paced; returns how long to wait first when there is none.
    private func take(_ key: String) -> Duration? {
        let now = clock.now().seconds
        return state.withLock { state -> Duration? in
            // A host that never throttled is not paced, and nothing is written for it here.
            guard state.hosts[key]?.pacing == true else { return nil }
            return state.hosts.modify(key) { host -> Duration? in
                host.fill(at: now)
                guard host.tokens >= 1 else {
                    return .nanoseconds(Int64(((1 - host.tokens) / host.rate * 1e9).rounded(.up)))
                }
                host.tokens -= 1
                return nil
            } ?? nil
        }
    }

    /// How many hosts the limiter keeps; for tests that check it forgets.
    package var hostsKept: Int { state.withLock { $0.hosts.count } }

    /// Never refuses a retry: the retry's attempt waits for its token when it is adapted.
    public func admitRetry(_ request: RetryRequest, dueTo error: ReboundError, after delay: Duration) -> (any Error)? {
        nil
    }
}

// The session tells the limiter how the attempts it let through end directly (see `AttemptAccountant`).
extension AdaptiveRateLimiter: HostAdmission {
    func admissionKey(for request: URLRequest) -> String? {
        keyFunction(request)
    }

    /// Gives the token taken for `admitted` back, if its host is paced, and paces the attempt by `key`'s host instead.
    func readmit(_ context: RequestContext, from admitted: String, to key: String?) async throws {
        let now = clock.now().seconds
        state.withLock { state in
            guard state.hosts[admitted]?.pacing == true else { return }
            state.hosts.modify(admitted) { host in
                host.fill(at: now)
                host.tokens = min(host.capacity, host.tokens + 1)
            }
        }
        if let key { try await pace(key) }
    }
}

extension AdaptiveRateLimiter: AttemptAccountant {
    func settle(_ attempt: Attempt, of requestID: UUID, ledger: RequestLedger, outcome: () -> AttemptOutcome) {
        // Only a response tells whether the host throttles.
        // Counted under the host it was admitted under, whatever its redirects (see `Attempt.admittedRequest`).
        guard let sent = attempt.admittedRequest, attempt.responseHead != nil, let key = keyFunction(sent) else {
            return
        }
        let throttled = isThrottling(attempt)
        let now = clock.now().seconds
        state.withLock { state in
            // At rest: a host it does not pace, whose last response is a minute old (its measured rate no longer holds).
            let isAtRest = { (host: Host) in !host.pacing && now - host.bucket >= Self.idleHorizon }
            state.hosts.update(key, make: Host.init, isAtRest: isAtRest) { $0.learn(throttled: throttled, at: now) }
            // A step of the table's hand: hosts at rest are forgotten though no new host comes.
            state.hosts.forgetIdle(steps: 1, isAtRest: isAtRest)
        }
    }

    func requestEnded(_ requestID: UUID) {}

    /// Lets a hedge start only while its host is not paced or has a token in its bucket, so that a hedge does not wait
    /// for a token, which the request's own attempts and other requests need. The hedge takes its token when it is adapted,
    /// as any attempt does.
    func admitHedge(
        _ request: URLRequest, of requestID: UUID, attempt: Int, after failed: Attempt?, roles: RegisteredRoles
    ) -> (any Error)? {
        guard let key = keyFunction(request) else { return nil }
        let now = clock.now().seconds
        let hasToken = state.withLock { state -> Bool in
            guard var host = state.hosts[key], host.pacing else { return true }
            host.fill(at: now)
            return host.tokens >= 1
        }
        return hasToken ? nil : NoTokenForHedge(key: key)
    }

}

/// Why an ``AdaptiveRateLimiter`` did not let a hedge start: its host is paced and has no token in its bucket.
struct NoTokenForHedge: Error {
    let key: String
}
