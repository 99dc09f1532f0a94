import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Retries idempotent requests that failed with a transient status or network error, with exponential backoff.
///
/// Its defaults are Alamofire's: at most 2 retries; a delay of
/// `exponentialBackoffBase ^ retryCount × exponentialBackoffScale` seconds (0.5 s, 1 s, 2 s, …); the methods DELETE,
/// GET, HEAD, OPTIONS, PUT and TRACE; the statuses 408, 500, 502, 503 and 504; and 18 transient `URLError` codes.
/// Unlike Alamofire, a status counts with no extra call, because a ``Session`` validates every response; a
/// `Retry-After` on 429 or 503 is honoured (a 429 with one becomes retryable); and a POST with an `Idempotency-Key`
/// is retried.
///
/// A request is retried when its retry count is below ``retryLimit``, it is safe to repeat, and either the failed
/// attempt's status code or the `URLError` behind a transport (or adapter) failure is retryable. A custom
/// validator's failure on an otherwise fine status is not retried by this policy.
///
/// **Idempotency.** A request is safe to repeat when its method is in ``retryableHTTPMethods`` (the idempotent
/// methods by default; adding POST or PATCH there is the explicit opt-in) or when it carries an `Idempotency-Key`
/// header (see ``IdempotencyKeyAdapter``). So POST, PATCH and CONNECT are never retried by default: no double
/// payments. With ``unsentRetryLimit`` set, a request of any method whose attempt never reached the server (a
/// refused connection, a DNS failure, a failed TLS handshake) is retried too: the server did nothing.
///
/// **Delays.** ``backoff`` gives the delay before each retry; by default the Alamofire formula above. After a 429 Too
/// Many Requests, ``throttlingBackoff`` gives it instead when it is set. When the response asks for a delay with
/// `Retry-After` on a status that ``retryAfter`` honours (429 and 503 by default), that delay (at most 60 s by
/// default; between the backoff's delay and 5 s more in ``awsRetries2026(using:)``) is used instead, and a 429 that
/// carries one is retryable.
///
/// **The server's word.** With ``RetryAfter/Signals/retryAfterMs`` in ``retryAfter``'s signals, a `retry-after-ms`
/// is read before `Retry-After`. With ``RetryAfter/Signals/shouldRetry``, `x-should-retry: false` is never retried
/// (``StopReason/serverAskedNoRetry``), and `x-should-retry: true` is retried although its status is not in
/// ``retryableHTTPStatusCodes`` or ``stopsAfterRepeatedFailure`` would stop it, still only for a request safe to
/// repeat and within ``retryLimit``. Neither is read by default; the ``Resilience`` preset reads both.
///
/// **The AWS SDKs' retry behavior 2.1.** ``awsRetries2026(using:)`` is their policy, to pair with the budget
/// ``RetryBudget/Configuration/awsRetries2026``; see its documentation for the numbers.
///
/// `RetryPolicy` is an immutable value, safe to share between sessions.
///
/// ```swift
/// let session = Session(retriers: [RetryPolicy(retryLimit: 4)])  // retries after 0.5 s, 1 s, 2 s, 4 s
/// ```
public struct RetryPolicy: RequestRetrier {
    /// The default ``retryLimit``: `2`.
    public static let defaultRetryLimit = 2
    /// The default ``exponentialBackoffBase``: `2`.
    public static let defaultExponentialBackoffBase = 2
    /// The default ``exponentialBackoffScale``: `0.5` seconds.
    public static let defaultExponentialBackoffScale = 0.5
    /// The default ``retryableHTTPMethods``: DELETE, GET, HEAD, OPTIONS, PUT and TRACE, the idempotent methods.
    public static let defaultRetryableHTTPMethods: Set<HTTPMethod> = [.delete, .get, .head, .options, .put, .trace]
    /// The default ``retryableHTTPStatusCodes``: 408, 500, 502, 503 and 504.
    public static let defaultRetryableHTTPStatusCodes: Set<Int> = [408, 500, 502, 503, 504]
    /// The default ``retryableURLErrorCodes``: the 18 codes of transient network failures that Alamofire retries.
    public static let defaultRetryableURLErrorCodes: Set<URLError.Code> = [
        .backgroundSessionInUseByAnotherProcess, .backgroundSessionWasDisconnected, .badServerResponse,
        .callIsActive, .cannotConnectToHost, .cannotFindHost, .cannotLoadFromNetwork, .dataNotAllowed,
        .dnsLookupFailed, .downloadDecodingFailedMidStream, .downloadDecodingFailedToComplete,
        .internationalRoamingOff, .networkConnectionLost, .notConnectedToInternet, .secureConnectionFailed,
        .serverCertificateHasBadDate, .serverCertificateNotYetValid, .timedOut,
    ]

    /// How many times a request is retried at most; ``defaultRetryLimit`` (`2`) by default.
    public let retryLimit: Int
    /// The base of the exponential backoff, at least 2; ``defaultExponentialBackoffBase`` (`2`) by default.
    public let exponentialBackoffBase: Int
    /// The factor, in seconds, of the exponential backoff; ``defaultExponentialBackoffScale`` (`0.5`) by default.
    public let exponentialBackoffScale: Double
    /// The methods that may be retried; ``defaultRetryableHTTPMethods`` by default.
    public let retryableHTTPMethods: Set<HTTPMethod>
    /// The status codes that are retried; ``defaultRetryableHTTPStatusCodes`` by default.
    public let retryableHTTPStatusCodes: Set<Int>
    /// The `URLError` codes that are retried; ``defaultRetryableURLErrorCodes`` by default.
    public let retryableURLErrorCodes: Set<URLError.Code>
    /// The delay before each retry; by default `.exponential(a: exponentialBackoffScale, b: exponentialBackoffBase)`,
    /// Alamofire's formula.
    public let backoff: BackoffStrategy
    /// Which `Retry-After` headers are honoured and up to how long; ``RetryAfter/default`` (429 and 503, at most 60 s)
    /// by default.
    public let retryAfter: RetryAfter
    /// The delay before a retry after a 429 Too Many Requests; `nil` by default, for ``backoff``.
    public let throttlingBackoff: BackoffStrategy?
    /// Whether a request whose last two attempts failed the same way (the same status, or the same `URLError` code) is
    /// not retried again, unless the response asked for a delay with `Retry-After` (or for the retry with an
    /// `x-should-retry: true` that ``retryAfter`` reads); `false` by default (Alamofire's behaviour), `true` in
    /// ``Resilience``'s policy.
    ///
    /// A host that answers a retry as it answered the attempt is likely down, and a third attempt would likely land in
    /// the same outage: stopping there keeps a fleet of clients that each send little near one retry per request in
    /// an outage (the storm simulator's 100,000-client tables), while a lone transient failure is still retried. The
    /// attempts of one hedged round were in flight together, so they are one attempt here: a failure is compared with
    /// the last attempt of the round before it, and two hedges that fail alike never stop a round whose other attempt
    /// may still answer.
    public let stopsAfterRepeatedFailure: Bool
    /// How many times a request is retried after an attempt that failed before it was sent (the transport says no
    /// byte of it reached the server: a failure to resolve the host, to connect, or to complete a TLS handshake),
    /// whatever its method, POST included; `0` by default (such a failure is retried like any other), `2` in
    /// ``Resilience``'s policy.
    ///
    /// These retries are counted apart from ``retryLimit``, as gRPC counts its transparent retries, and only for a
    /// failure whose `URLError` code is in ``retryableURLErrorCodes``; the repeated-failure stop does not stop them,
    /// since they put no load on the server. Once they are used, such a failure is retried like any other. A failure
    /// after the request may have been written (a lost connection, a timeout, a cut body) is never retried for a
    /// method that may not be repeated. Which failures count is the transport's to say
    /// (``HTTPTransport/failedBeforeSending(_:)``): a transport of your own that says nothing is taken as "may have
    /// been sent".
    public let unsentRetryLimit: Int

    /// Creates a policy with every default.
    public init() {
        self.init(
            checkedRetryLimit: Self.defaultRetryLimit, exponentialBackoffBase: Self.defaultExponentialBackoffBase,
            exponentialBackoffScale: Self.defaultExponentialBackoffScale,
            retryableHTTPMethods: Self.defaultRetryableHTTPMethods,
            retryableHTTPStatusCodes: Self.defaultRetryableHTTPStatusCodes,
            retryableURLErrorCodes: Self.defaultRetryableURLErrorCodes, backoff: nil, retryAfter: .default,
            throttlingBackoff: nil, stopsAfterRepeatedFailure: false, unsentRetryLimit: 0)
    }

    /// The AWS SDKs' retry behavior 2.1 ("new retries 2026", their default since November 2026), for the retryable
    /// failures of HTTP: at most 3 attempts; a delay drawn uniformly under `min(base × 2ⁿ, 20 s)` before retry
    /// `n + 1`, the base 50 ms after a 5xx, a 408 or a network error and 1 s after a 429; a `Retry-After` (on 429 and
    /// 5xx) held between that delay and 5 s more.
    ///
    /// Pair it with the budget of the same behavior, ``RetryBudget/Configuration/awsRetries2026``, which makes a
    /// retry after a 429 cheap and every other one dear:
    ///
    /// ```swift
    /// let session = Session(
    ///     adapters: [RetryBudget(configuration: .awsRetries2026)], retriers: [RetryPolicy.awsRetries2026()])
    /// ```
    ///
    /// What it retries is HTTP's rather than AWS's error codes: the statuses 408, 429, 500, 502, 503 and 504 and
    /// ``defaultRetryableURLErrorCodes``, for the idempotent methods (``defaultRetryableHTTPMethods``) or a request
    /// with an `Idempotency-Key`, where the SDKs retry every operation; the server's hint is the standard
    /// `Retry-After` header, where the SDKs read `x-amz-retry-after`.
    ///
    /// - Parameter random: Where the jitter is drawn from; ``RandomSource/system`` by default.
    public static func awsRetries2026(using random: RandomSource = .system) -> RetryPolicy {
        let cap = Duration.seconds(20)
        return RetryPolicy(
            checkedRetryLimit: 2, exponentialBackoffBase: defaultExponentialBackoffBase,
            exponentialBackoffScale: defaultExponentialBackoffScale, retryableHTTPMethods: defaultRetryableHTTPMethods,
            retryableHTTPStatusCodes: [408, 429, 500, 502, 503, 504],
            retryableURLErrorCodes: defaultRetryableURLErrorCodes,
            backoff: .exponential(a: .milliseconds(50), b: 2).max(cap).fullJitter(using: random),
            retryAfter: RetryAfter(statusCodes: [429, 500, 502, 503, 504], maximumOverBackoff: .seconds(5)),
            throttlingBackoff: .exponential(a: .seconds(1), b: 2).max(cap).fullJitter(using: random),
            stopsAfterRepeatedFailure: false, unsentRetryLimit: 0)
    }

    /// Creates a policy from settings written in code; an invalid one traps.
    ///
    /// An invalid setting is a programming error; the trap's message names it, for example
    /// `RetryPolicy.retryLimit must be 0 or more, got -1`. For settings that arrive at run time, such as remote
    /// configuration, use
    /// ``validated(retryLimit:exponentialBackoffBase:exponentialBackoffScale:retryableHTTPMethods:retryableHTTPStatusCodes:retryableURLErrorCodes:backoff:retryAfter:throttlingBackoff:stopsAfterRepeatedFailure:unsentRetryLimit:)-(_,_,_,_,_,_,BackoffStrategy?,_,BackoffStrategy?,_,_)``,
    /// which throws instead.
    ///
    /// - Parameters:
    ///   - retryLimit: How many times a request is retried at most, `0` or more; `2` by default.
    ///   - exponentialBackoffBase: The base of the backoff, `2` or more; `2` by default.
    ///   - exponentialBackoffScale: The factor of the backoff in seconds, from `0` to 10¹²
    ///     (``RetryResult/longestDelay``); `0.5` by default.
    ///   - retryableHTTPMethods: The methods that may be retried; ``defaultRetryableHTTPMethods`` by default.
    ///   - retryableHTTPStatusCodes: The status codes that are retried; ``defaultRetryableHTTPStatusCodes`` by default.
    ///   - retryableURLErrorCodes: The `URLError` codes that are retried; ``defaultRetryableURLErrorCodes`` by default.
    ///   - backoff: The delay before each retry; `nil` (the default) for the exponential backoff given by
    ///     `exponentialBackoffBase` and `exponentialBackoffScale`. Pass one to add a cap or jitter; `.none`, like
    ///     `.zero`, is no delay (an overload takes a strategy as it is, so `.none` is never `nil` here).
    ///   - retryAfter: Which `Retry-After` headers are honoured, up to how long; ``RetryAfter/default`` by default,
    ///     ``RetryAfter/ignored`` to never honour one.
    ///   - throttlingBackoff: The delay before a retry after a 429; `nil` (the default) for `backoff`; `.none` is no
    ///     delay.
    ///   - stopsAfterRepeatedFailure: Whether a request whose last two attempts failed the same way is not retried
    ///     again; `false` by default.
    ///   - unsentRetryLimit: How many times a request is retried, whatever its method, after an attempt that failed
    ///     before it was sent, counted apart from `retryLimit`, `0` or more; `0` by default.
    public init(
        retryLimit: Int = defaultRetryLimit,
        exponentialBackoffBase: Int = defaultExponentialBackoffBase,
        exponentialBackoffScale: Double = defaultExponentialBackoffScale,
        retryableHTTPMethods: Set<HTTPMethod> = defaultRetryableHTTPMethods,
        retryableHTTPStatusCodes: Set<Int> = defaultRetryableHTTPStatusCodes,
        retryableURLErrorCodes: Set<URLError.Code> = defaultRetryableURLErrorCodes,
        backoff: BackoffStrategy? = nil,
        retryAfter: RetryAfter = .default,
        throttlingBackoff: BackoffStrategy? = nil,
        stopsAfterRepeatedFailure: Bool = false,
        unsentRetryLimit: Int = 0
    ) {
        ConfigurationError.trapIfInvalid { () throws(ConfigurationError) in
            try Self.check(
                retryLimit: retryLimit, exponentialBackoffBase: exponentialBackoffBase,
                exponentialBackoffScale: exponentialBackoffScale, unsentRetryLimit: unsentRetryLimit)
        }
        self.init(
            checkedRetryLimit: retryLimit, exponentialBackoffBase: exponentialBackoffBase,
            exponentialBackoffScale: exponentialBackoffScale, retryableHTTPMethods: retryableHTTPMethods,
            retryableHTTPStatusCodes: retryableHTTPStatusCodes, retryableURLErrorCodes: retryableURLErrorCodes,
            backoff: backoff, retryAfter: retryAfter, throttlingBackoff: throttlingBackoff,
            stopsAfterRepeatedFailure: stopsAfterRepeatedFailure, unsentRetryLimit: unsentRetryLimit)
    }

    /// Creates a policy from settings that arrive at run time, throwing when one is invalid.
    ///
    /// The parameters, their defaults and what is valid are those of
    /// ``init(retryLimit:exponentialBackoffBase:exponentialBackoffScale:retryableHTTPMethods:retryableHTTPStatusCodes:retryableURLErrorCodes:backoff:retryAfter:throttlingBackoff:stopsAfterRepeatedFailure:unsentRetryLimit:)-(_,_,_,_,_,_,BackoffStrategy?,_,BackoffStrategy?,_,_)``.
    ///
    /// - Throws: ``ConfigurationError`` naming the first invalid setting.
    @_disfavoredOverload  // `.none` goes to the overload that takes a backoff as it is: see its +GivenBackoff file
    public static func validated(
        retryLimit: Int = defaultRetryLimit,
        exponentialBackoffBase: Int = defaultExponentialBackoffBase,
        exponentialBackoffScale: Double = defaultExponentialBackoffScale,
        retryableHTTPMethods: Set<HTTPMethod> = defaultRetryableHTTPMethods,
        retryableHTTPStatusCodes: Set<Int> = defaultRetryableHTTPStatusCodes,
        retryableURLErrorCodes: Set<URLError.Code> = defaultRetryableURLErrorCodes,
        backoff: BackoffStrategy? = nil,
        retryAfter: RetryAfter = .default,
        throttlingBackoff: BackoffStrategy? = nil,
        stopsAfterRepeatedFailure: Bool = false,
        unsentRetryLimit: Int = 0
    ) throws(ConfigurationError) -> RetryPolicy {
        try check(
            retryLimit: retryLimit, exponentialBackoffBase: exponentialBackoffBase,
            exponentialBackoffScale: exponentialBackoffScale, unsentRetryLimit: unsentRetryLimit)
        return RetryPolicy(
            checkedRetryLimit: retryLimit, exponentialBackoffBase: exponentialBackoffBase,
            exponentialBackoffScale: exponentialBackoffScale, retryableHTTPMethods: retryableHTTPMethods,
            retryableHTTPStatusCodes: retryableHTTPStatusCodes, retryableURLErrorCodes: retryableURLErrorCodes,
            backoff: backoff, retryAfter: retryAfter, throttlingBackoff: throttlingBackoff,
            stopsAfterRepeatedFailure: stopsAfterRepeatedFailure, unsentRetryLimit: unsentRetryLimit)
    }

    /// Throws a ``ConfigurationError`` for the first invalid setting, its field named after `owner`, the type the
    /// caller created (``ConnectionLostRetryPolicy`` checks its settings here too).
    static func check(
        retryLimit: Int, exponentialBackoffBase: Int, exponentialBackoffScale: Double, unsentRetryLimit: Int = 0,
        owner: String = "RetryPolicy"
    ) throws(ConfigurationError) {
        guard retryLimit >= 0 else {
            throw ConfigurationError(field: "\(owner).retryLimit", problem: "must be 0 or more, got \(retryLimit)")
        }
        guard unsentRetryLimit >= 0 else {
            throw ConfigurationError(
                field: "\(owner).unsentRetryLimit", problem: "must be 0 or more, got \(unsentRetryLimit)")
        }
        guard exponentialBackoffBase >= 2 else {
            throw ConfigurationError(
                field: "\(owner).exponentialBackoffBase", problem: "must be at least 2, got \(exponentialBackoffBase)")
        }
        // A delay longer than `RetryResult.longestDelay` could never be slept: it is held there anyway.
        guard exponentialBackoffScale.isFinite, (0...RetryResult.longestDelay.seconds).contains(exponentialBackoffScale)
        else {
            throw ConfigurationError(
                field: "\(owner).exponentialBackoffScale",
                problem: "must be a number of seconds from 0 to 1e12 (RetryResult.longestDelay), got "
                    + "\(exponentialBackoffScale)")
        }
    }

    /// Creates a policy from settings already checked; no backoff given becomes Alamofire's formula.
    init(
        checkedRetryLimit retryLimit: Int, exponentialBackoffBase: Int, exponentialBackoffScale: Double,
        retryableHTTPMethods: Set<HTTPMethod>, retryableHTTPStatusCodes: Set<Int>,
        retryableURLErrorCodes: Set<URLError.Code>, backoff: BackoffStrategy?, retryAfter: RetryAfter,
        throttlingBackoff: BackoffStrategy?, stopsAfterRepeatedFailure: Bool, unsentRetryLimit: Int
    ) {
        self.retryLimit = retryLimit
        self.exponentialBackoffBase = exponentialBackoffBase
        self.exponentialBackoffScale = exponentialBackoffScale
        self.retryableHTTPMethods = retryableHTTPMethods
        self.retryableHTTPStatusCodes = retryableHTTPStatusCodes
        self.retryableURLErrorCodes = retryableURLErrorCodes
        self.backoff = backoff ?? .exponential(a: .seconds(exponentialBackoffScale), b: exponentialBackoffBase)
        self.retryAfter = retryAfter
        self.throttlingBackoff = throttlingBackoff
        self.stopsAfterRepeatedFailure = stopsAfterRepeatedFailure
        self.unsentRetryLimit = unsentRetryLimit
    }

    /// The backoff before retry number `retryCount + 1` from ``backoff``, given the delay before the previous retry;
    /// by default `exponentialBackoffBase ^ retryCount × exponentialBackoffScale` seconds, held at
    /// ``RetryResult/longestDelay`` where the power grows past it.
    public func delay(forRetryCount retryCount: Int, previousDelay: Duration? = nil) -> Duration {
        backoff.delay(forRetryCount: retryCount, previousDelay: previousDelay)
    }

    /// Whether the request may be sent again: the method of the request its last attempt sent first (before any
    /// redirect: a retry sends that again, not a hop, so a POST redirected to a GET is judged as the POST) is
    /// retryable, or that request carries an `Idempotency-Key` header.
    public func isSafeToRetry(_ request: RetryRequest) -> Bool {
        request.admittedRequest.isRepeatable(methods: retryableHTTPMethods)
    }

    /// Whether `error`, the failure of `request`'s last attempt, is one this policy retries, ignoring the retry limits.
    public func shouldRetry(_ request: RetryRequest, dueTo error: ReboundError) -> Bool {
        if failedBeforeSending(request, dueTo: error) { return true }
        let head = request.responseHead
        let serverAsks = head.flatMap(retryAfter.retryAsked(by:))
        return serverAsks != false
            && shouldRetry(
                request, dueTo: error, retryAfterDelay: head.flatMap(retryAfter.delay(for:)), serverAsks: serverAsks)
    }

    /// Whether the policy's rules retry `error`, before an `x-should-retry: false` is heard: the method, then
    /// `serverAsks` (the response's `x-should-retry` as ``retryAfter`` reads it) when `true`, else the status, the
    /// honoured `Retry-After` already read and the error's code.
    private func shouldRetry(
        _ request: RetryRequest, dueTo error: ReboundError, retryAfterDelay: Duration?, serverAsks: Bool?
    ) -> Bool {
        guard isSafeToRetry(request) else { return false }
        if serverAsks == true { return true }
        if let response = request.responseHead {
            if retryableHTTPStatusCodes.contains(response.statusCode) { return true }
            // A 429 that says when to come back is an invitation to retry.
            if response.statusCode == 429, retryAfterDelay != nil { return true }
        }
        if let code = error.reason.original.urlError?.code, retryableURLErrorCodes.contains(code) {
            return true
        }
        return false
    }

    /// Answers ``RetryResult/retryWithDelay(_:)`` while the retry count is below the limit and
    /// ``shouldRetry(_:dueTo:)`` holds. Otherwise ``RetryResult/doNotRetry`` for a failure it does not retry, and
    /// ``RetryResult/doNotRetryBecause(_:)`` for one it would retry but for ``StopReason/serverAskedNoRetry``,
    /// ``StopReason/retryLimit`` or ``StopReason/repeatedFailure``. The delay is the response's honoured
    /// `Retry-After` if it has one (held near the backoff's delay when ``RetryAfter/maximumOverBackoff`` is set), else
    /// the backoff's: ``throttlingBackoff`` after a 429 when it is set, ``backoff`` otherwise, also when an
    /// ``EndpointGroup`` sends the retry to another host than the one that asked for the delay. A response whose
    /// `x-should-retry: true` asks for the retry (where ``retryAfter`` reads it) is waited for as long as it asks
    /// whatever its status. An attempt that failed before it was sent is retried after the backoff's delay whatever
    /// the method, while ``unsentRetryLimit`` allows, and those retries are not counted against ``retryLimit``.
    public func retry(_ request: RetryRequest, dueTo error: ReboundError) async -> RetryResult {
        // Retries after failures before sending, counted apart from the retry limit.
        let unsentRetries = Swift.min(request.attempts.dropLast().count(where: \.failedBeforeSending), unsentRetryLimit)
        // A request that never reached the server is sent again whatever its method: the server did nothing.
        if unsentRetries < unsentRetryLimit, failedBeforeSending(request, dueTo: error) {
            return .retryWithDelay(backoffDelay(for: request))
        }
        // The fields are read once: they decide whether the response is retried and how long to wait.
        let head = request.responseHead
        let serverAsks = head.flatMap(retryAfter.retryAsked(by:))
        let retryAfterDelay =
            serverAsks == true ? head.flatMap(retryAfter.delayAsked(by:)) : head.flatMap(retryAfter.delay(for:))
        guard shouldRetry(request, dueTo: error, retryAfterDelay: retryAfterDelay, serverAsks: serverAsks) else {
            return .doNotRetry
        }
        if serverAsks == false { return .doNotRetryBecause(.serverAskedNoRetry) }
        guard request.retryCount - unsentRetries < retryLimit else { return .doNotRetryBecause(.retryLimit) }
        // Two attempts that failed the same way: likely an outage, which a third attempt would only add to; a server
        // that asked for a delay, or for the retry, is still answered.
        if stopsAfterRepeatedFailure, retryAfterDelay == nil, serverAsks != true,
            Self.failedTheSameWay(request.attempts)
        {
            return .doNotRetryBecause(.repeatedFailure)
        }
        // The delay the server asked for is its host's: a retry that an endpoint group sends to another host waits
        // the backoff's delay instead.
        let asked = request.leavesAnsweringHost ? nil : retryAfterDelay
        // The server's delay as it is draws no jitter; held near the backoff, it needs the backoff's delay.
        if let asked, retryAfter.maximumOverBackoff == nil { return .retryWithDelay(asked) }
        let backoffDelay = backoffDelay(for: request)
        // The header was read above: held near the backoff's delay, not read again.
        return .retryWithDelay(asked.map { retryAfter.held($0, backoff: backoffDelay) } ?? backoffDelay)
    }

    /// The backoff's delay before the next retry of `request`: ``throttlingBackoff``'s after a 429 when it is set,
    /// ``backoff``'s otherwise.
    private func backoffDelay(for request: RetryRequest) -> Duration {
        let previous = request.attempts.dropLast().last?.retryDelay
        let strategy = request.responseHead?.isThrottling == true ? throttlingBackoff ?? backoff : backoff
        return strategy.delay(forRetryCount: request.retryCount, previousDelay: previous)
    }

    /// Whether `error` failed `request`'s last attempt before any byte of it reached the server, with a `URLError`
    /// code this policy retries, and the policy retries such failures whatever the method (``unsentRetryLimit``).
    private func failedBeforeSending(_ request: RetryRequest, dueTo error: ReboundError) -> Bool {
        // The transport's word alone: a redirect hop's failure, or one a transport did not vouch for, may follow sending.
        guard unsentRetryLimit > 0, request.attempts.last?.failedBeforeSending == true,
            let code = error.reason.original.urlError?.code
        else { return false }
        return retryableURLErrorCodes.contains(code)
    }
}

extension RetryPolicy {
    /// Whether the last of `attempts` failed the same way as the last attempt of the round before it: the same status,
    /// or the same `URLError` code.
    ///
    /// The attempts of one hedged round are in flight at once, so two of them that fail alike say no more than one
    /// does: only rounds are compared. A round's attempts are numbered in the order they started, from its first
    /// (hedge 0), so `number - hedge` names the round; without hedging, each attempt is a round of its own.
    static func failedTheSameWay(_ attempts: [Attempt]) -> Bool {
        guard let last = attempts.last else { return false }
        let round = last.number - last.hedge
        guard let before = attempts.last(where: { $0.number - $0.hedge != round }) else { return false }
        if let status = last.statusCode { return status == before.statusCode }
        guard let code = last.failure?.urlError?.code else { return false }
        return before.statusCode == nil && before.failure?.urlError?.code == code
    }
}

extension RequestRetrier where Self == RetryPolicy {
    /// A ``RetryPolicy`` with every default.
    public static var retryPolicy: RetryPolicy { RetryPolicy() }

    /// A ``RetryPolicy`` with the settings given, which traps on an invalid one; see
    /// ``RetryPolicy/init(retryLimit:exponentialBackoffBase:exponentialBackoffScale:retryableHTTPMethods:retryableHTTPStatusCodes:retryableURLErrorCodes:backoff:retryAfter:throttlingBackoff:stopsAfterRepeatedFailure:unsentRetryLimit:)-(_,_,_,_,_,_,BackoffStrategy?,_,BackoffStrategy?,_,_)``
    /// for what is valid and the defaults, and ``RetryPolicy/validated(retryLimit:exponentialBackoffBase:exponentialBackoffScale:retryableHTTPMethods:retryableHTTPStatusCodes:retryableURLErrorCodes:backoff:retryAfter:throttlingBackoff:stopsAfterRepeatedFailure:unsentRetryLimit:)-(_,_,_,_,_,_,BackoffStrategy?,_,BackoffStrategy?,_,_)``
    /// for settings that arrive at run time.
    @_disfavoredOverload  // `.none` goes to the overload that takes a backoff as it is: see its +GivenBackoff file
    public static func retryPolicy(
        retryLimit: Int = RetryPolicy.defaultRetryLimit,
        exponentialBackoffBase: Int = RetryPolicy.defaultExponentialBackoffBase,
        exponentialBackoffScale: Double = RetryPolicy.defaultExponentialBackoffScale,
        retryableHTTPMethods: Set<HTTPMethod> = RetryPolicy.defaultRetryableHTTPMethods,
        retryableHTTPStatusCodes: Set<Int> = RetryPolicy.defaultRetryableHTTPStatusCodes,
        retryableURLErrorCodes: Set<URLError.Code> = RetryPolicy.defaultRetryableURLErrorCodes,
        backoff: BackoffStrategy? = nil,
        retryAfter: RetryAfter = .default,
        throttlingBackoff: BackoffStrategy? = nil,
        stopsAfterRepeatedFailure: Bool = false,
        unsentRetryLimit: Int = 0
    ) -> RetryPolicy {
        RetryPolicy(
            retryLimit: retryLimit, exponentialBackoffBase: exponentialBackoffBase,
            exponentialBackoffScale: exponentialBackoffScale, retryableHTTPMethods: retryableHTTPMethods,
            retryableHTTPStatusCodes: retryableHTTPStatusCodes, retryableURLErrorCodes: retryableURLErrorCodes,
            backoff: backoff, retryAfter: retryAfter, throttlingBackoff: throttlingBackoff,
            stopsAfterRepeatedFailure: stopsAfterRepeatedFailure, unsentRetryLimit: unsentRetryLimit)
    }
}
