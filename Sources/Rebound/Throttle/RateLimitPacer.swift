import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Paces each host's requests by the quota its server advertises, so that a client that has spent its quota waits for
/// the quota's renewal instead of drawing a 429: proactive, where ``AdaptiveRateLimiter`` reacts to 429s.
///
/// Every response's quota fields are read (``RateLimitQuota``: the IETF `RateLimit` and `RateLimit-Policy` fields, the
/// earlier drafts' `RateLimit-Remaining` and `RateLimit-Reset`, the `X-RateLimit-` fields). The pacer keeps each
/// host's requests left and when the quota is renewed, and counts down one per attempt it lets through, so that
/// concurrent requests do not overdraw what the last response said. A request to a host with none left waits for the
/// renewal, then goes on; after a renewal the host is not held until a response says its quota again (so requests that
/// waited together for one renewal go together). A renewal further away than ``maximumWait`` fails the request at once
/// with ``RateLimitQuotaSpent``, which no retry policy retries; the session's deadline bounds every wait as well.
///
/// Put it in a chain's adapters; share one instance between sessions to share each host's quota. Responses that
/// advertise nothing, or only malformed fields, change nothing: a host the pacer never heard a quota from is never
/// held. It is off by default and not in ``Resilience``: a quota is often a user's or a token's rather than a host's,
/// and a pacer per host would then hold one user's requests for another's spent quota; add it where the quota is the
/// client's own.
///
/// ```swift
/// let pacer = RateLimitPacer()
/// let session = Session(adapters: [pacer], retriers: [RetryPolicy()])
/// ```
public final class RateLimitPacer: RequestAdapter, AttemptObserver {
    /// The default ``maximumWait``: 30 seconds, the preset's deadline.
    public static let defaultMaximumWait = Duration.seconds(30)

    /// One host's quota as the pacer last heard it, on the pacer's clock.
    private struct Host: Sendable {
        var remaining: Int
        var renewedAt: Duration
        var limit: Int?
    }

    /// How long a request waits for its host's quota to be renewed at most; 30 s by default.
    public let maximumWait: Duration
    private let keyFunction: CircuitBreakerRegistry.KeyFunction
    private let clock: SessionClock
    private let hosts: Locked<HostTable<Host>>

    /// Creates a pacer; an invalid setting traps, naming it.
    ///
    /// - Parameters:
    ///   - maximumWait: How long a request waits for its host's quota at most, zero or more; 30 s by default.
    ///   - key: Picks the host whose quota a request draws on, or `nil` for a request never paced;
    ///     ``CircuitBreakerRegistry/hostKey(for:)`` by default.
    ///   - clock: The clock the renewals are timed and the waits slept on; `ContinuousClock` by default.
    ///   - maximumHosts: The most hosts the pacer keeps, at least 1; 10,000 by default. A host whose quota was renewed
    ///     is forgotten when room is needed; at the cap, a new host makes the pacer forget the host it used least
    ///     lately.
    public init<C: Clock>(
        maximumWait: Duration = defaultMaximumWait,
        key: @escaping CircuitBreakerRegistry.KeyFunction = CircuitBreakerRegistry.hostKey,
        clock: C = ContinuousClock(), maximumHosts: Int = 10_000
    ) where C.Duration == Duration {
        ConfigurationError.trapIfInvalid { () throws(ConfigurationError) in
            guard maximumWait >= .zero else {
                throw ConfigurationError(
                    field: "RateLimitPacer.maximumWait", problem: "must be 0 or more, got \(maximumWait)")
            }
        }
        HostTable<Host>.trapIfInvalid(maximumHosts, owner: "RateLimitPacer")
        self.maximumWait = maximumWait
        self.keyFunction = key
        self.clock = SessionClock(clock)
        self.hosts = Locked(HostTable(capacity: maximumHosts))
    }

    /// The quota of `key`'s host as the pacer counts it now; `nil` for a host it holds nothing for. Reading changes
    /// nothing.
    public func quota(for key: String) -> RateLimitQuota? {
        let now = clock.now()
        return hosts.withLock { hosts in
            guard let host = hosts[key], host.renewedAt > now else { return nil }
            return RateLimitQuota(remaining: host.remaining, resetsIn: host.renewedAt - now, limit: host.limit)
        }
    }

    /// Lets the request through once its host has a request left, waiting for the quota's renewal if it has none,
    /// and registers to read the quota of the attempt's response.
    ///
    /// - Throws: ``RateLimitQuotaSpent`` when the renewal is further away than ``maximumWait``; `CancellationError`
    ///   when the task is cancelled while it waits.
    public func adapt(_ request: consuming URLRequest, context: RequestContext) async throws -> URLRequest {
        context.observe(self)
        guard let key = keyFunction(request) else { return request }
        while let wait = take(key) {
            guard wait <= maximumWait else { throw RateLimitQuotaSpent(key: key, renewedIn: wait) }
            do {
                try await clock.sleep(wait)
            } catch {
                throw CancellationError()
            }
        }
        return request
    }

    /// Counts a request against `key`'s quota; returns how long until its renewal when none is left.
    private func take(_ key: String) -> Duration? {
        let now = clock.now()
        return hosts.withLock { hosts -> Duration? in
            // A host the pacer heard no quota from is never held, and nothing is written for it here.
            guard let host = hosts[key] else { return nil }
            // Renewed: not held until a response says the quota again.
            if now >= host.renewedAt {
                hosts.remove(key)
                return nil
            }
            return hosts.modify(key) { host -> Duration? in
                guard host.remaining > 0 else { return host.renewedAt - now }
                host.remaining -= 1
                return nil
            } ?? nil
        }
    }

    /// Reads the quota the attempt's response advertises, if any, as the host's.
    public func attemptDidFinish(_ outcome: AttemptOutcome) async {
        guard let head = outcome.responseHead, let quota = RateLimitQuota(head),
            let key = keyFunction(outcome.attempt.admittedRequest ?? outcome.request)
        else { return }
        let now = clock.now()
        let heard = Host(remaining: quota.remaining, renewedAt: now + quota.resetsIn, limit: quota.limit)
        hosts.withLock { hosts in
            hosts.update(key, make: { heard }, isAtRest: { $0.renewedAt <= now }) { $0 = heard }
        }
    }

    /// Nothing to do: the quota is read from each attempt.
    public func requestDidFinish(_ outcome: RequestOutcome) async {}
}

/// Why a ``RateLimitPacer`` did not send a request: its host's quota is spent until further away than the pacer waits.
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
