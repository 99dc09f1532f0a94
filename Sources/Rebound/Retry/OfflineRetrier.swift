import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Waits for the network to come back before retrying a request that failed because the device is offline, instead of
/// spending its retries while nothing can get through: Alamofire's `OfflineRetrier`.
///
/// When an attempt fails with an offline error (``offlineURLErrorCodes``: `URLError.notConnectedToInternet` by
/// default), the retrier waits on its ``monitor`` for the network, for at most ``maximumWait`` (5 s by default) on its
/// clock. If the network comes back in time, it retries at once, whatever the method after `notConnectedToInternet` at
/// the request's first hop (a request that found no network was never sent; one whose redirect found none was), and
/// only a request that may be repeated otherwise (judged as it was before any redirect, as a retry sends it again). If not, it answers ``RetryResult/doNotRetry``, and the next retrier in the chain decides with the
/// original error (`RetryPolicy` retries `notConnectedToInternet` after its backoff). Other failures, and requests
/// past ``retryLimit`` retries, it leaves to the next retrier at once.
///
/// It composes like any retrier. Put it before your retry policy, so that an offline failure waits for the network
/// rather than for a backoff. The session's deadline bounds the wait (a request past it ends with
/// `.deadlineExceeded`, its last failure the offline one), and a request cancelled while it waits ends with
/// `CancellationError` at once. A failure of the device's own network (`notConnectedToInternet`, `dataNotAllowed`,
/// `internationalRoamingOff`, `callIsActive`) is not the host's: breakers, throttles and adaptive limiters do not count
/// it and a budget does not charge the retry after it, so every request that waited resumes when the network is back,
/// also inside ``Resilience``.
///
/// **Platforms.** `OfflineRetrier()` waits on `PathConnectivityMonitor.shared` (`NWPathMonitor`) on Apple platforms.
/// Linux has no monitor in the box: give one with `OfflineRetrier(monitor:)`, a ``ConnectivityMonitor`` of your own or
/// ReboundTesting's `ManualConnectivityMonitor` in tests.
///
/// ```swift
/// // On Apple platforms `OfflineRetrier()` is enough; elsewhere, a monitor over what your platform offers:
/// struct LinkMonitor: ConnectivityMonitor {
///     func waitUntilConnected() async throws { /* returns when a link is up */ }
/// }
/// let session = Session(retriers: [OfflineRetrier(monitor: LinkMonitor()), RetryPolicy()])
/// ```
public struct OfflineRetrier: RequestRetrier {
    /// The default ``maximumWait``: 5 seconds, as Alamofire's.
    public static let defaultMaximumWait = Duration.seconds(5)
    /// The default ``retryLimit``: 2.
    public static let defaultRetryLimit = 2
    /// The default ``offlineURLErrorCodes``: `notConnectedToInternet`.
    public static let defaultOfflineURLErrorCodes: Set<URLError.Code> = [.notConnectedToInternet]

    /// What tells the retrier that the network is back.
    public let monitor: any ConnectivityMonitor
    /// How long a failed request waits for the network at most; 5 seconds by default.
    public let maximumWait: Duration
    /// How many times a request is retried at most, counting every retry of the request; 2 by default.
    public let retryLimit: Int
    /// The `URLError` codes that mean the device is offline; `notConnectedToInternet` by default.
    public let offlineURLErrorCodes: Set<URLError.Code>
    private let clock: SessionClock

    #if canImport(Network)
        /// Creates a retrier that waits on `PathConnectivityMonitor.shared`; an invalid setting traps, naming it.
        ///
        /// - Parameters:
        ///   - maximumWait: How long a failed request waits for the network at most, more than zero; 5 s by default.
        ///   - retryLimit: How many times a request is retried at most, 0 or more; 2 by default.
        ///   - offlineURLErrorCodes: The codes that mean the device is offline; `notConnectedToInternet` by default.
        ///   - clock: The clock the wait is timed on; `ContinuousClock` by default.
        public init<C: Clock>(
            maximumWait: Duration = defaultMaximumWait, retryLimit: Int = defaultRetryLimit,
            offlineURLErrorCodes: Set<URLError.Code> = defaultOfflineURLErrorCodes, clock: C = ContinuousClock()
        ) where C.Duration == Duration {
            self.init(
                monitor: PathConnectivityMonitor.shared, maximumWait: maximumWait, retryLimit: retryLimit,
                offlineURLErrorCodes: offlineURLErrorCodes, clock: clock)
        }
    #endif

    /// Creates a retrier that waits on `monitor`; an invalid setting traps, naming it.
    ///
    /// For settings that arrive at run time, use
    /// ``validated(monitor:maximumWait:retryLimit:offlineURLErrorCodes:clock:)``, which throws instead.
    ///
    /// - Parameters:
    ///   - monitor: What tells the retrier that the network is back.
    ///   - maximumWait: How long a failed request waits for the network at most, more than zero; 5 s by default.
    ///   - retryLimit: How many times a request is retried at most, 0 or more; 2 by default.
    ///   - offlineURLErrorCodes: The codes that mean the device is offline; `notConnectedToInternet` by default.
    ///   - clock: The clock the wait is timed on; `ContinuousClock` by default (a test's `ManualClock`).
    public init<C: Clock>(
        monitor: any ConnectivityMonitor, maximumWait: Duration = defaultMaximumWait,
        retryLimit: Int = defaultRetryLimit, offlineURLErrorCodes: Set<URLError.Code> = defaultOfflineURLErrorCodes,
        clock: C = ContinuousClock()
    ) where C.Duration == Duration {
        ConfigurationError.trapIfInvalid { () throws(ConfigurationError) in
            try Self.check(maximumWait: maximumWait, retryLimit: retryLimit)
        }
        self.monitor = monitor
        self.maximumWait = maximumWait
        self.retryLimit = retryLimit
        self.offlineURLErrorCodes = offlineURLErrorCodes
        self.clock = SessionClock(clock)
    }

    /// Creates a retrier from settings that arrive at run time, throwing when one is invalid; the parameters are those
    /// of ``init(monitor:maximumWait:retryLimit:offlineURLErrorCodes:clock:)``.
    ///
    /// - Throws: ``ConfigurationError`` naming the first invalid setting.
    public static func validated<C: Clock>(
        monitor: any ConnectivityMonitor, maximumWait: Duration = defaultMaximumWait,
        retryLimit: Int = defaultRetryLimit, offlineURLErrorCodes: Set<URLError.Code> = defaultOfflineURLErrorCodes,
        clock: C = ContinuousClock()
    ) throws(ConfigurationError) -> OfflineRetrier where C.Duration == Duration {
        try check(maximumWait: maximumWait, retryLimit: retryLimit)
        return OfflineRetrier(
            monitor: monitor, maximumWait: maximumWait, retryLimit: retryLimit,
            offlineURLErrorCodes: offlineURLErrorCodes, clock: clock)
    }

    /// Throws a ``ConfigurationError`` for the first invalid setting.
    private static func check(maximumWait: Duration, retryLimit: Int) throws(ConfigurationError) {
        guard maximumWait > .zero else {
            throw ConfigurationError(
                field: "OfflineRetrier.maximumWait", problem: "must be longer than zero, got \(maximumWait)")
        }
        guard retryLimit >= 0 else {
            throw ConfigurationError(
                field: "OfflineRetrier.retryLimit", problem: "must be 0 or more, got \(retryLimit)")
        }
    }

    /// Whether `error` means the device is offline: a `URLError` with one of ``offlineURLErrorCodes``, behind a
    /// transport or adapter failure.
    public func isOffline(_ error: ReboundError) -> Bool {
        error.reason.original.urlError.map { offlineURLErrorCodes.contains($0.code) } ?? false
    }

    /// Waits up to ``maximumWait`` for the network after an offline failure and answers ``RetryResult/retry`` when it
    /// comes back; ``RetryResult/doNotRetry`` otherwise, at once for any other failure, and
    /// ``RetryResult/doNotRetryBecause(_:)`` with ``StopReason/retryLimit`` past ``retryLimit``.
    public func retry(_ request: RetryRequest, dueTo error: ReboundError) async -> RetryResult {
        guard isOffline(error) else { return .doNotRetry }
        guard request.retryCount < retryLimit else { return .doNotRetryBecause(.retryLimit) }
        // A request that found no network was never sent, unless the failure came at a redirect's hop (the first hop
        // reached the server); after any other code it may have been. Else only a request that may be repeated is
        // retried, judged by what a retry sends again: the request before any redirect.
        let neverSent =
            error.reason.original.urlError?.code == .notConnectedToInternet && request.attempts.last?.firstHop == nil
        guard neverSent || request.admittedRequest.isRepeatable(methods: RetryPolicy.defaultRetryableHTTPMethods)
        else { return .doNotRetry }
        let monitor = monitor
        let outcome = await Race.run(maximumWait, clock: clock) { () async -> Bool in
            do {
                try await monitor.waitUntilConnected()
                return true
            } catch {
                return false
            }
        }
        if case .finished(true) = outcome { return .retry }
        return .doNotRetry
    }
}
