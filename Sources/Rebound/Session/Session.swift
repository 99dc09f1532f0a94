import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Sends HTTP requests through a chain of interceptors: adapt, send, validate, and retry on failure.
///
/// For each request, attempt after attempt:
/// 1. If the task is cancelled, the request ends with `CancellationError`.
/// 2. **Adapt**: the session's chain adapts the request as the caller gave it, then the request's own chain adapts the
///    result (see ``Interceptor`` for the chain's rules). A chain is the `adapters`, `retriers` and `interceptor`
///    given, in that order; each part plays the role of the list it is in, and any other role it registers through
///    the context (``RequestContext``).
/// 3. **Send** it through the ``transport``. A redirect (301, 302, 303, 307, 308) is followed hop by hop within the
///    attempt, as the ``RedirectHandler`` in effect decides (see ``Redirector``); the adapters do not run again, but a
///    hop to another origin drops the request's credentials.
/// 4. **Validate** the response with the request's validator, or the session's if the request has none; then the
///    validators parts registered check the response it accepted.
/// 5. On success, tell the ``AttemptObserver``s (those given in `observers:`, then those registered) and return a
///    ``Response`` with the body and the record of every attempt.
/// 6. On failure (adapter error, transport error, or validation failure), ask the retriers **once**: those parts
///    registered first (the JSON-body retrier), then the session's chain, then the request's (none is asked about a
///    ``NonRetryableError``). A retry whose delay would end after the request's deadline ends it instead; otherwise
///    the ``RetryGate``s (given in `gates:`, then registered) may deny it. Tell the observers the decision. A retry sleeps the delay on the session's clock, cancellably, then goes back to 1
///    (from the retrier's modified request, if it gave one). Otherwise the request ends with a ``ReboundError``.
///
/// **Time.** The deadline bounds every await of a request (adapters, the transport, redirects, validators, the
/// retriers' decisions, a token refresh they wait for, backoff sleeps): at the deadline the request ends with
/// ``ReboundError/Reason/deadlineExceeded(deadline:last:)`` even if the awaited work ignores cancellation, which is then
/// cancelled and finishes in the background, its result dropped. The deadline is one timer on the session's clock, from
/// the first step that awaits under it to the request's end. The attempt timeout bounds each attempt the same way and fails it with
/// `URLError(.timedOut)`, which may be retried.
///
/// Each call ends with exactly one outcome: a ``Response``, a ``ReboundError``, or `CancellationError` when the
/// calling task is cancelled (during adaptation, the transport's send, a retrier's decision or a backoff sleep).
/// Cancellation is never retried and no attempt starts after it.
///
/// A session is immutable and safe to use from many tasks at once; interceptors it holds are shared by all its
/// requests.
///
/// ```swift
/// let session = Session(
///     adapters: [.modifying { request, _ in
///         request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
///     }],
///     retriers: [RetryPolicy()]
/// )
/// let response = try await session.send(URL(string: "https://example.com/items")!)
/// let items: [Item] = try response.decode()
/// ```
public final class Session: Sendable {
    /// The transport every attempt is sent through.
    public let transport: any HTTPTransport
    /// The chain every request goes through, before the request's own: the adapters, retriers and interceptor the
    /// session was created with, as one interceptor; `nil` for none.
    public let interceptor: (any RequestInterceptor)?
    /// The validator for requests that do not bring their own.
    public let validator: any ResponseValidator
    /// The total time limit of a request, across all its attempts and backoff sleeps, for requests that do not
    /// bring their own; `nil` for none.
    public let deadline: Duration?
    /// The time limit of each attempt (adapting, sending, following redirects and validating), for requests that do
    /// not bring their own; `nil` for none.
    public let attemptTimeout: Duration?
    /// Decides which redirects requests follow, for requests that do not bring their own handler.
    public let redirectHandler: any RedirectHandler
    /// When requests that may be repeated get a second attempt beside the first, for requests that do not bring their
    /// own settings; `nil` for no hedging.
    public let hedging: Hedging?

    let clock: SessionClock
    let roles: ChainRoles
    /// ``validator`` as a ``Validator``, resolved once: a request calls its check directly.
    let validation: Validator
    /// ``interceptor`` in a box that requests share and call in place (reading or comparing the existential would copy
    /// it); `nil` without a chain.
    let chain: ChainBox?
    /// Whether a part outside the chain is handed a request's context or retry request, through which it may register
    /// a role or read the deadline (see ``Session/handsOutContexts(gates:validation:redirectHandler:)``).
    let handsOutContexts: Bool

    /// Creates a session.
    ///
    /// - Parameters:
    ///   - transport: Sends each attempt; a new ``URLSessionHTTPTransport`` (with a `URLSession` of its own) by default.
    ///     Sessions that should share connections share one transport.
    ///   - adapters: Adapt every request, first, in order; none by default.
    ///   - retriers: Are asked about every failed attempt, first, in order; none by default.
    ///   - interceptor: Adapts every request after `adapters` and is asked after `retriers`; none by default.
    ///   - observers: Are told how every attempt and request ends, first, in order; none by default.
    ///   - gates: Have the last word on every retry, first, in order; none by default.
    ///   - validator: Validates responses of requests that bring no validator of their own;
    ///     ``Validator/successfulStatusCodes`` (200..<300) by default.
    ///   - deadline: The total time limit of each request, across all its attempts and backoff sleeps; none by
    ///     default. A request past it ends with ``ReboundError/Reason/deadlineExceeded(deadline:last:)``: an attempt
    ///     in flight is cancelled, and a backoff delay that would end after it is not slept; nor is any when the
    ///     failed response's `Retry-After` (on a 429 or 503) ends after it, whatever delay the retriers chose. Zero or
    ///     less ends every request before its first attempt.
    ///   - attemptTimeout: The time limit of each attempt, separate from the deadline; none by default (the transport's
    ///     own limits apply: 60 s without data for `URLSession`). An attempt past it is cancelled and fails with
    ///     `URLError(.timedOut)`, which retry policies retry like any timeout; the run goes on at once even if the
    ///     attempt ignores cancellation. Zero or less traps.
    ///   - redirectHandler: Decides which redirects requests follow and how; ``Redirector/follow`` (every redirect, up
    ///     to 20 hops per attempt, credentials dropped across origins) by default.
    ///   - hedging: When requests that may be repeated (idempotent, or with an `Idempotency-Key`) get more attempts in
    ///     flight beside the first (see ``Hedging``); none by default.
    ///   - clock: The clock that backoff delays are slept on and attempts are timed with; `ContinuousClock` by
    ///     default. Tests pass a `ManualClock` or an `FastForwardClock` from `ReboundTesting`.
    public init<C: Clock>(
        transport: any HTTPTransport = URLSessionHTTPTransport(),
        adapters: [any RequestAdapter] = [],
        retriers: [any RequestRetrier] = [],
        interceptor: (any RequestInterceptor)? = nil,
        observers: [any AttemptObserver] = [],
        gates: [any RetryGate] = [],
        validator: any ResponseValidator = .successfulStatusCodes,
        deadline: Duration? = nil,
        attemptTimeout: Duration? = nil,
        redirectHandler: any RedirectHandler = Redirector.follow,
        hedging: Hedging? = nil,
        clock: C = ContinuousClock()
    ) where C.Duration == Duration {
        let interceptor = Self.chain(adapters: adapters, retriers: retriers, interceptor: interceptor)
        self.transport = transport
        self.interceptor = interceptor
        self.validator = validator
        self.validation = Validator.resolving(validator)
        if let attemptTimeout { Self.check(attemptTimeout: attemptTimeout) }
        self.deadline = deadline
        self.attemptTimeout = attemptTimeout
        self.redirectHandler = redirectHandler
        self.hedging = hedging
        self.clock = SessionClock(clock)
        self.roles = ChainRoles(observers: observers, gates: gates)
        self.chain = interceptor.map(ChainBox.init)
        self.handsOutContexts = Self.handsOutContexts(
            gates: roles.gates, validation: validation, redirectHandler: redirectHandler)
    }

    /// Sends `request`, retrying as the interceptors decide, and returns the successful response.
    ///
    /// - Parameters:
    ///   - request: The request to send; adapters start from it on every attempt.
    ///   - label: A string that interceptors can read to treat kinds of request differently; none by default.
    ///   - adapters: This request's own adapters, which run after the session's chain; none by default.
    ///   - retriers: This request's own retriers, asked after the session's chain; none by default.
    ///   - interceptor: This request's own interceptor, which adapts after `adapters` and is asked to retry after
    ///     `retriers`; none by default.
    ///   - observers: This request's own observers, told after the session's; none by default.
    ///   - gates: This request's own gates, asked after the session's; none by default.
    ///   - validator: This request's validator, used instead of the session's; the session's by default.
    ///   - deadline: This request's total time limit, used instead of the session's; the session's by default.
    ///   - attemptTimeout: This request's time limit per attempt, used instead of the session's; the session's by
    ///     default.
    ///   - redirectHandler: Decides which redirects this request follows, instead of the session's handler; the
    ///     session's by default.
    ///   - hedging: This request's hedging settings, used instead of the session's (``Hedging/off`` for none); the
    ///     session's by default.
    /// - Returns: The response of the first attempt that passed validation.
    /// - Throws: ``ReboundError`` when the request fails for good; `CancellationError` when the task is cancelled.
    public func send(
        _ request: URLRequest,
        label: String? = nil,
        adapters: [any RequestAdapter] = [],
        retriers: [any RequestRetrier] = [],
        interceptor: (any RequestInterceptor)? = nil,
        observers: [any AttemptObserver] = [],
        gates: [any RetryGate] = [],
        validator: (any ResponseValidator)? = nil,
        deadline: Duration? = nil,
        attemptTimeout: Duration? = nil,
        redirectHandler: (any RedirectHandler)? = nil,
        hedging: Hedging? = nil
    ) async throws -> Response {
        let plan = plan(
            .request(request), label: label, adapters: adapters, retriers: retriers, interceptor: interceptor,
            observers: observers, gates: gates, validator: validator, deadline: deadline,
            attemptTimeout: attemptTimeout, redirectHandler: redirectHandler, hedging: hedging)
        return try await plan.execute(startingWith: request)
    }

    /// Sends a request built from a URL, a method, headers and a body; see
    /// ``send(_:label:adapters:retriers:interceptor:observers:gates:validator:deadline:attemptTimeout:redirectHandler:hedging:)``.
    ///
    /// - Parameters:
    ///   - url: The URL to request.
    ///   - method: The HTTP method; ``HTTPMethod/get`` by default.
    ///   - headers: Header fields to set; none by default.
    ///   - body: The body to send; none by default.
    ///   - label: A string that interceptors can read; none by default.
    ///   - adapters: This request's own adapters, run after the session's chain; none by default.
    ///   - retriers: This request's own retriers, asked after the session's chain; none by default.
    ///   - interceptor: This request's own interceptor, run after `adapters` and `retriers`; none by default.
    ///   - observers: This request's own observers, told after the session's; none by default.
    ///   - gates: This request's own gates, asked after the session's; none by default.
    ///   - validator: This request's validator, used instead of the session's; the session's by default.
    ///   - deadline: This request's total time limit, used instead of the session's; the session's by default.
    ///   - attemptTimeout: This request's time limit per attempt, used instead of the session's; the session's by
    ///     default.
    ///   - redirectHandler: Decides which redirects this request follows, instead of the session's handler; the
    ///     session's by default.
    ///   - hedging: This request's hedging settings, used instead of the session's (``Hedging/off`` for none); the
    ///     session's by default.
    public func send(
        _ url: URL,
        method: HTTPMethod = .get,
        headers: [String: String] = [:],
        body: Data? = nil,
        label: String? = nil,
        adapters: [any RequestAdapter] = [],
        retriers: [any RequestRetrier] = [],
        interceptor: (any RequestInterceptor)? = nil,
        observers: [any AttemptObserver] = [],
        gates: [any RetryGate] = [],
        validator: (any ResponseValidator)? = nil,
        deadline: Duration? = nil,
        attemptTimeout: Duration? = nil,
        redirectHandler: (any RedirectHandler)? = nil,
        hedging: Hedging? = nil
    ) async throws -> Response {
        let (plan, first) = plan(
            url, method: method, headers: headers, body: body, label: label, adapters: adapters, retriers: retriers,
            interceptor: interceptor, observers: observers, gates: gates, validator: validator, deadline: deadline,
            attemptTimeout: attemptTimeout, redirectHandler: redirectHandler, hedging: hedging)
        return try await plan.execute(startingWith: consume first)
    }

    /// The plan of a request built from a URL, and the request its first attempt starts from: one of its own for the
    /// adapters to change in place when a chain may adapt it (the caller's request is then kept as its parts, built
    /// only if something reads it); not with headers, which would cost as much to set again.
    private func plan(
        _ url: URL, method: HTTPMethod, headers: [String: String], body: Data?, label: String?,
        adapters: [any RequestAdapter], retriers: [any RequestRetrier], interceptor: (any RequestInterceptor)?,
        observers: [any AttemptObserver], gates: [any RetryGate], validator: (any ResponseValidator)?,
        deadline: Duration?, attemptTimeout: Duration?, redirectHandler: (any RedirectHandler)?, hedging: Hedging?
    ) -> (RequestPlan, first: URLRequest) {
        let adapts = headers.isEmpty && (chain?.adapts == true || !adapters.isEmpty || interceptor != nil)
        let original: OriginalRequest =
            adapts
            ? .parts(url: url, method: method, body: body)
            : .request(URLRequest(url: url, method: method, headers: headers, body: body))
        let plan = plan(
            original, label: label, adapters: adapters, retriers: retriers, interceptor: interceptor,
            observers: observers, gates: gates, validator: validator, deadline: deadline,
            attemptTimeout: attemptTimeout, redirectHandler: redirectHandler, hedging: hedging)
        return (plan, adapts ? URLRequest(url: url, method: method, body: body) : plan.originalRequest)
    }

    /// A request's plan (see ``RequestPlan/init(session:original:label:adapters:retriers:interceptor:observers:gates:validator:deadline:attemptTimeout:redirectHandler:hedging:)``),
    /// made out of line: what building the plan needs is gone once it is built, rather than kept as long as `send` runs.
    @inline(never)
    private func plan(
        _ original: OriginalRequest, label: String?, adapters: [any RequestAdapter], retriers: [any RequestRetrier],
        interceptor: (any RequestInterceptor)?, observers: [any AttemptObserver], gates: [any RetryGate],
        validator: (any ResponseValidator)?, deadline: Duration?, attemptTimeout: Duration?,
        redirectHandler: (any RedirectHandler)?, hedging: Hedging?
    ) -> RequestPlan {
        RequestPlan(
            session: self, original: original, label: label, adapters: adapters, retriers: retriers,
            interceptor: interceptor, observers: observers, gates: gates, validator: validator, deadline: deadline,
            attemptTimeout: attemptTimeout, redirectHandler: redirectHandler, hedging: hedging)
    }

    /// Whether a request hands a context or a retry request to a part outside its chain, through which the part may
    /// register a role or read the deadline: a gate given in `gates:`, a validator that reads its context, or a
    /// redirect handler other than ``Redirector`` (which reads none). A request keeps its registrations then, or when a
    /// part of its chain may register (``ChainBox/mayRegister``).
    static func handsOutContexts(
        gates: [any RetryGate], validation: Validator, redirectHandler: any RedirectHandler
    ) -> Bool {
        !gates.isEmpty || validation.readsContext || !(redirectHandler is Redirector)
    }

    /// Traps on an attempt timeout of zero or less, naming the setting.
    static func check(attemptTimeout: Duration) {
        ConfigurationError.trapIfInvalid { () throws(ConfigurationError) in
            guard attemptTimeout > .zero else {
                throw ConfigurationError(
                    field: "Session.attemptTimeout", problem: "must be longer than zero, got \(attemptTimeout)")
            }
        }
    }

    /// The parts given as one chain: `interceptor` alone when it is the only part, `nil` when there is none.
    static func chain(
        adapters: [any RequestAdapter], retriers: [any RequestRetrier], interceptor: (any RequestInterceptor)?
    ) -> (any RequestInterceptor)? {
        if adapters.isEmpty, retriers.isEmpty { return interceptor }
        return Interceptor(adapters: adapters, retriers: retriers, interceptors: interceptor.map { [$0] } ?? [])
    }
}
