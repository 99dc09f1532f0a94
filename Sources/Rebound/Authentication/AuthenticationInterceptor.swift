import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Applies a credential to requests for the hosts it belongs to, refreshes it once for every request that waits on
/// it, and retries requests that failed because of it.
///
/// **Adapting.** A request to one of ``hosts`` gets the credential (through the authenticator's
/// ``Authenticator/apply(_:to:)``); if the credential says it ``AuthenticationCredential/requiresRefresh``, it is
/// refreshed first. While a refresh runs, a request waits for it and gets its result rather than go out with the
/// credential it replaces (as Alamofire's interceptor holds requests back during a refresh), unless a credential was
/// set since the refresh started, or the refresh itself sends the request (to a token endpoint on one of the hosts,
/// through this interceptor): those go at once with the current credential. The wait counts toward the attempt's
/// timeout, as all adapting does. A request to any other host is passed on untouched: the credential never leaves its
/// hosts, redirects included (a hop that leaves them drops the credential's headers; a hop to one of them gets the
/// credential, unless it goes from `https` to `http`: a credential never follows a request into clear text). With no
/// hosts given, the credential belongs to the host (and port) of the first request the
/// interceptor adapts.
///
/// **Retrying.** When an attempt fails because of its credential (401 by default, see
/// ``Authenticator/didRequest(_:with:failDueToAuthenticationError:)``): if the request was sent with an older
/// credential than the current one, it is retried at once with the current one and nothing is refreshed; otherwise
/// the credential is refreshed and the request retried. Other failures get ``RetryResult/doNotRetry``.
///
/// **One refresh at a time.** Requests that need a refresh while one is running, and requests adapted meanwhile, wait
/// for it, cancellably, and all use its result; a failed refresh fails each of them with its error. A refresh that
/// takes longer than ``refreshTimeout`` (30 s by default) fails them with
/// ``AuthenticationError/refreshTimedOut(after:)``; its late result is dropped, and the next request that needs a
/// refresh starts a new one. A refresh that throws `CancellationError` fails them with
/// ``AuthenticationError/refreshCancelled``: only a caller's own cancellation ends a request as cancelled. More than
/// ``AuthenticationRefreshLimit/maximumCount`` refreshes started within ``AuthenticationRefreshLimit/window`` (5 in
/// 30 s by default), timed-out ones included, end the request with
/// ``AuthenticationError/excessiveRefresh(count:window:)`` instead of refreshing again.
///
/// **Placement.** Give it as `interceptor:`, where both `adapt` and `retry` are called (or in both `adapters:` and
/// `retriers:`). In `adapters:` alone it applies the credential but is never asked about a 401. Asked to retry a 401
/// of a request it never adapted (it sits in `retriers:` alone, or behind a wrapper that forwards only `retry`), it
/// ends the request with ``AuthenticationError/neverAdapted`` rather than retry a request it cannot authenticate.
///
/// The interceptor is a class whose state is behind a lock; share one instance between sessions that use the same
/// credential.
public final class AuthenticationInterceptor<A: Authenticator>: RequestInterceptor {
    /// How many refreshes are allowed within a window of time.
    public typealias RefreshLimit = AuthenticationRefreshLimit

    /// A request waiting for a refresh, resumed with its result.
    private typealias Waiter = CheckedContinuation<A.Credential, any Error>
    /// The credential and its refresh, whose timers are tasks that sleep until the refresh's time limit.
    private typealias Machine = AuthenticationRefreshMachine<A.Credential, Waiter, Task<Void, Never>>

    /// Everything the interceptor changes, kept behind its lock.
    private struct State: Sendable {
        /// The credential and its refresh.
        var machine: Machine
        /// The hosts the credential belongs to; `nil` until the first request when none were given.
        var hosts: [HostPattern]?
    }

    /// The authenticator that applies, refreshes and checks the credential.
    public let authenticator: A
    /// How many refreshes are allowed within a window.
    public let refreshLimit: RefreshLimit
    /// How long a refresh may take before its waiters fail with ``AuthenticationError/refreshTimedOut(after:)``.
    public let refreshTimeout: Duration

    /// The credential, its refresh and the hosts, behind the interceptor's lock.
    private let state: Locked<State>
    /// The clock's time, for the refresh limit's window.
    private let now: @Sendable () -> Duration
    /// Sleeps on the clock, for the refresh's time limit.
    private let sleep: @Sendable (Duration) async throws -> Void

    /// Creates an interceptor.
    ///
    /// - Parameters:
    ///   - authenticator: Applies, refreshes and checks the credential.
    ///   - credential: The credential to start with; none by default (requests then fail with
    ///     ``AuthenticationError/missingCredential`` until ``credential`` is set).
    ///   - hosts: The hosts the credential belongs to, each a host name (any port) or `host:port`, compared without
    ///     regard to case; by default the host and port of the first request adapted.
    ///   - refreshLimit: How many refreshes are allowed within a window; ``AuthenticationRefreshLimit/default`` (5 in
    ///     30 s) by default.
    ///   - refreshTimeout: How long a refresh may take, longer than zero; 30 s by default. Past it, the requests
    ///     waiting for it fail with ``AuthenticationError/refreshTimedOut(after:)`` and the next one refreshes again.
    ///     Zero or less traps.
    ///   - clock: The clock the refresh window and the refresh's time limit are measured on; `ContinuousClock` by
    ///     default.
    public init<C: Clock>(
        authenticator: A, credential: A.Credential? = nil, hosts: Set<String>? = nil,
        refreshLimit: RefreshLimit = .default, refreshTimeout: Duration = .seconds(30), clock: C = ContinuousClock()
    ) where C.Duration == Duration {
        ConfigurationError.trapIfInvalid { () throws(ConfigurationError) in
            guard refreshTimeout > .zero else {
                throw ConfigurationError(
                    field: "AuthenticationInterceptor.refreshTimeout",
                    problem: "must be longer than zero, got \(refreshTimeout)")
            }
        }
        self.authenticator = authenticator
        self.refreshLimit = refreshLimit
        self.refreshTimeout = refreshTimeout
        let machine = Machine(credential: credential, limit: refreshLimit, timeout: refreshTimeout)
        self.state = Locked(State(machine: machine, hosts: hosts.map { $0.map(HostPattern.init) }))
        let clock = SessionClock(clock)
        self.now = clock.now
        self.sleep = clock.sleep
    }

    /// The current credential; setting it replaces it for every request from now on.
    public var credential: A.Credential? {
        get { state.withLock { $0.machine.credential } }
        set { state.withLock { $0.machine.replaceCredential(with: newValue) } }
    }

    /// The hosts the credential belongs to; `nil` until the first request when none were given.
    public var hosts: [String]? {
        state.withLock { $0.hosts?.map(\.description) }
    }

    /// How many refreshes have started since the interceptor was created.
    public var refreshCount: Int {
        state.withLock { $0.machine.refreshCount }
    }

    /// How many requests wait for a refresh, and whether one is running; for tests that check nothing is kept.
    package var pendingRefresh: (waiters: Int, refreshing: Bool) {
        state.withLock { ($0.machine.waiterCount, $0.machine.isRefreshing) }
    }

    /// How many calls to the authenticator's refresh have not yet had their result handled (a refresh that timed
    /// out counts until its late result is dropped); for tests that wait for that result.
    package var unfinishedRefreshCalls: Int {
        state.withLock { $0.machine.unfinishedCalls }
    }

    /// Applies the credential to a request for one of its hosts, refreshing it first if it requires a refresh.
    ///
    /// - Throws: ``AuthenticationError`` or the refresh's error; `CancellationError` when cancelled while waiting.
    public func adapt(_ request: consuming URLRequest, context: RequestContext) async throws -> URLRequest {
        let current = state.withLock { state -> (A.Credential?, generation: Int, refreshing: Bool)? in
            if state.hosts == nil, let pattern = HostPattern(exactly: request.url) { state.hosts = [pattern] }
            guard Self.belongs(request, to: state.hosts) else { return nil }
            return (state.machine.credential, state.machine.generation, state.machine.isRefreshing)
        }
        guard let (found, generation, refreshing) = current else { return request }
        // Redirect hops of this request drop the credential when they leave its hosts and get it when they reach one.
        context.secureRedirects(with: self)
        guard var credential = found else { throw AuthenticationError.missingCredential }
        // A request the refresh itself sends never waits for that refresh, which would wait for it in turn.
        if credential.requiresRefresh || refreshing, !RunningRefreshes.current.contains(ObjectIdentifier(self)) {
            // While it waits, the attempt holds nothing the refresh's own request to the same host may need (a place
            // or a breaker's trial that parts before this one gave it): they have it back, and admit it again after.
            let gaveWay = context.giveWay()
            if credential.requiresRefresh {
                credential = try await refreshed(after: generation)
            } else {
                // Sent now, the request would carry the credential being replaced, and likely come back with a 401.
                credential = try await afterRunningRefresh()
            }
            try await context.admitAgain(gaveWay, for: request)
        }
        authenticator.apply(credential, to: &request)
        // A part that moves the attempt to another origin (an endpoint group) takes this credential off again, even
        // if the current one has changed by then.
        context.note(credential, appliedBy: self)
        return request
    }

    /// Retries an attempt that failed because of its credential, refreshing the credential unless the request was
    /// sent with an older one.
    public func retry(_ request: RetryRequest, dueTo error: ReboundError) async -> RetryResult {
        guard let sent = request.lastRequest, let response = request.response,
            authenticator.didRequest(sent, with: response, failDueToAuthenticationError: error)
        else { return .doNotRetry }
        // A 401 at a redirect's hop after a POST: a retry would send the POST, which the first hop took, again.
        guard !request.retryWouldRepeatARedirectedRequest else { return .doNotRetry }
        let (adaptedAny, current) = state.withLock { state -> (Bool, (A.Credential?, Int)?) in
            let current = (state.machine.credential, state.machine.generation)
            return (state.hosts != nil, Self.belongs(sent, to: state.hosts) ? current : nil)
        }
        // Placed where `adapt` is never called (no hosts learnt yet, or a request to its hosts it did not adapt), it
        // could only answer "retry" to the same 401 for ever: say so instead.
        if !adaptedAny || current != nil, request.context.secures(with: self) == false {
            return .doNotRetryWithError(AuthenticationError.neverAdapted)
        }
        guard let (found, generation) = current, let credential = found else { return .doNotRetry }
        // Sent with an older credential: the current one may well work, and needs no refresh.
        guard authenticator.isRequest(sent, authenticatedWith: credential) else { return .retry }
        // A half-open breaker's trial that got the 401 is counted now: the refresh's own request to the same host may
        // need the trial's place.
        request.settleTrials()
        do {
            _ = try await refreshed(after: generation)
            return .retry
        } catch is CancellationError {
            return .doNotRetry
        } catch {
            return .doNotRetryWithError(error)
        }
    }

    /// The credential after a refresh of the one at `generation`: a refresh this call starts, one already running,
    /// or none when the credential changed since.
    private func refreshed(after generation: Int) async throws -> A.Credential {
        try await wait { machine, waiter, id, now in
            machine.requestRefresh(after: generation, waiter: waiter, id: id, at: now)
        }
    }

    /// The credential once the refresh running now ends, or the current one when none runs.
    private func afterRunningRefresh() async throws -> A.Credential {
        try await wait { machine, waiter, id, _ in machine.joinRunningRefresh(waiter: waiter, id: id) }
    }

    /// Waits, cancellably, for the credential that `transition` (given the waiter, its number and the time) resumes the
    /// waiter with.
    private func wait(
        for transition: (inout Machine, Waiter, _ id: Int, _ now: Duration) -> Machine.Effect
    ) async throws -> A.Credential {
        let id = state.withLock { $0.machine.makeWaiterID() }
        let now = now()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (waiter: Waiter) in
                let effect = state.withLock { state -> Machine.Effect? in
                    // Cancelled before it could wait, the cancellation handler found nothing to end: end it here.
                    if Task.isCancelled { return nil }
                    return transition(&state.machine, waiter, id, now)
                }
                guard let effect else { return waiter.resume(throwing: CancellationError()) }
                perform(effect)
            }
        } onCancel: {
            perform(state.withLock { $0.machine.waiterCancelled(id) })
        }
    }

    /// Carries out what a transition of the machine asked for, outside the lock.
    private func perform(_ effect: Machine.Effect) {
        switch effect {
        case .none:
            return
        case .startRefresh(let refresh, let credential):
            startRefresh(refresh, of: credential)
        case .resume(let waiters, let result, let timer):
            timer?.cancel()
            for waiter in waiters { waiter.resume(with: result) }
        case .cancelTimer(let timer):
            timer.cancel()
        }
    }

    /// Runs refresh number `refresh` in a task of its own, so that cancelling the requests waiting for it does not
    /// lose its result, and ends it at ``refreshTimeout`` with a timer of its own.
    private func startRefresh(_ refresh: Int, of credential: A.Credential) {
        let limit = refreshTimeout
        let timer = Spawn.task { [sleep] in
            do {
                try await sleep(limit)
            } catch {
                return  // The refresh ended first.
            }
            self.perform(self.state.withLock { $0.machine.refreshTimedOut(refresh) })
        }
        perform(state.withLock { $0.machine.timerStarted(timer, forRefresh: refresh) })
        Spawn.task { [self] in
            let result: Result<A.Credential, any Error>
            do {
                // What the refresh sends through this interceptor knows it, and is not held back for it.
                let refreshes = RunningRefreshes.current.union([ObjectIdentifier(self)])
                result = .success(
                    try await RunningRefreshes.$current.withValue(refreshes) {
                        try await authenticator.refresh(credential)
                    })
            } catch is CancellationError {
                // Nothing cancels this task: a waiter's cancellation ends only its own wait. Told as cancellation,
                // the waiters would end as if their callers had cancelled them.
                result = .failure(AuthenticationError.refreshCancelled)
            } catch {
                result = .failure(error)
            }
            perform(state.withLock { $0.machine.refreshFinished(refresh, with: result) })
        }
    }

    /// Whether `request` is for one of `hosts`; never while `hosts` is `nil`.
    private static func belongs(_ request: URLRequest, to hosts: [HostPattern]?) -> Bool {
        guard let hosts, let url = request.url else { return false }
        return hosts.contains { $0.matches(url) }
    }
}

/// The interceptors whose refresh the current task runs, so that a request the refresh sends through one of them is not
/// held back for it (the refresh would wait for itself until its time limit).
private enum RunningRefreshes {
    @TaskLocal static var current: Set<ObjectIdentifier> = []
}

extension AuthenticationInterceptor: CredentialScope {
    /// The header fields the authenticator applies the current credential in, found by applying it to an empty
    /// request.
    var credentialHeaderNames: Set<String> {
        guard let credential else { return [] }
        return headerNames(of: credential)
    }

    /// The header fields, lower-cased, the authenticator applies `credential` in; none for a value of another type.
    func headerNames(of credential: any Sendable) -> Set<String> {
        guard let credential = credential as? A.Credential else { return [] }
        return headerNames(of: credential)
    }

    /// The header fields, lower-cased, the authenticator applies `credential` in, found by applying it to an empty
    /// request.
    private func headerNames(of credential: A.Credential) -> Set<String> {
        var probe = URLRequest(url: URL(string: "https://credential.invalid/")!)
        authenticator.apply(credential, to: &probe)
        return Set(probe.allHTTPHeaderFields?.keys.map { $0.lowercased() } ?? [])
    }

    /// Applies the current credential to a redirect hop to one of its hosts.
    func authorize(_ hop: inout URLRequest) {
        let credential = state.withLock { state in Self.belongs(hop, to: state.hosts) ? state.machine.credential : nil }
        if let credential { authenticator.apply(credential, to: &hop) }
    }

    /// Removes `credential`'s header fields from `request` if the authenticator says the request carries it.
    func withdraw(_ credential: any Sendable, from request: inout URLRequest) {
        guard let credential = credential as? A.Credential,
            authenticator.isRequest(request, authenticatedWith: credential)
        else { return }
        Redirection.remove(headerNames(of: credential), from: &request)
    }
}

/// A host a credential belongs to: a name with any port, or a name and one port.
struct HostPattern: Sendable, CustomStringConvertible {
    /// The host name, lower-cased.
    let host: String
    /// The one port it matches; `nil` for any port.
    let port: Int?

    /// Parses `host`, `host:port`, `[v6 address]` or `[v6 address]:port`.
    init(_ text: String) {
        let text = text.lowercased()
        var host = text
        var port: Int?
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            if rest.hasPrefix(":") { port = Int(rest.dropFirst()) }
        } else if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
            host = String(text[..<colon])
            port = Int(text[text.index(after: colon)...])
        }
        self.host = host
        self.port = port
    }

    /// The host and effective port of `url`; `nil` without a host.
    init?(exactly url: URL?) {
        guard let url, let host = url.host?.lowercased(), !host.isEmpty else { return nil }
        self.host = host
        self.port = Redirection.effectivePort(of: url)
    }

    /// Whether `url` is for this host (and port, when there is one).
    func matches(_ url: URL) -> Bool {
        guard url.host?.lowercased() == host else { return false }
        return port == nil || port == Redirection.effectivePort(of: url)
    }

    /// `host` or `host:port`.
    var description: String { port.map { "\(host):\($0)" } ?? host }
}
