import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One service at several base URLs (regions, replicas, a primary and a fallback): each attempt goes to a healthy
/// endpoint, a retry or a hedge to another one than the endpoint it follows, and an endpoint that keeps failing is taken
/// out of rotation for a while (passive outlier detection, as Envoy does it).
///
/// **Which requests.** A request whose URL is under one of the endpoints' base URLs (same scheme, host and port, and a
/// path that starts with the base URL's path) is routed: it is sent under the chosen endpoint's base URL, the rest of
/// its path, its query and its fragment kept. Write requests against any endpoint, usually the first; a request to
/// any other URL goes through untouched. A request is routed by one group, the first that routes an attempt of it:
/// another group that covers it too lets it through.
///
/// **Which endpoint.** Among the endpoints in rotation, ``Selection/failover`` takes the first in the order given and
/// ``Selection/weighted`` draws one by weight. An attempt avoids the endpoints where an earlier attempt of its request
/// failed or is still in flight (a retry goes elsewhere, a hedge beside the attempt it races), where one in rotation is
/// left; otherwise to one in rotation with no attempt of the request in flight (other than the last that failed where
/// it can: a hedge goes beside no attempt it races, even to an endpoint that failed the request earlier), then to any
/// in rotation, and only when none is in rotation to an ejected one. Given `breakers:`, an endpoint whose breaker is
/// open is out of rotation too, and so is one whose half-open breaker has an attempt in flight (its trial, beside which
/// the breaker would refuse another), so that the breaker refuses only what still reaches it. An endpoint whose 429 or
/// 503 asked for quiet (`retry-after-ms`, else `Retry-After`; at most ``maximumQuiet``, 60 s by default) is out of
/// rotation until then, in the same way, breakers or not. The group never changes whether a request is retried: the
/// retry policy's method rules, limits and budget still decide. It picks a retry's endpoint before the retriers are
/// asked: a `Retry-After` the failed endpoint sent is its host's, and holds no retry the group sends to another host.
///
/// **Outlier detection** (``OutlierDetection``): 5 failures in a row (by default; what fails is what fails a
/// ``CircuitBreaker``: 5xx, 408, 429, transport failures, but never the device's own network) take an endpoint out of
/// rotation for 30 s times its number of ejections, at most 300 s, and never more than half the group at once (rounded
/// down, at least one). Back in rotation it is on trial: the first of its attempts to end decides, a failure ejecting
/// it again, for longer (attempts sent meanwhile go to it too).
///
/// **Placement and sharing.** Put it first in a chain's adapters, before the parts that key by host (a
/// ``CircuitBreakerRegistry``, a ``RetryBudget``, an ``AdaptiveThrottle``): each then keeps every endpoint apart, by
/// its own host, a breaker judges a retry by the endpoint the group sends it to (a budget charges it, and a throttle
/// draws for it, under the endpoint whose attempt failed), and every hedge gate judges a hedge by its endpoint. A part
/// before the group judges the host the request was written for, and may refuse it there before the group moves it.
/// Give a credential the group's hosts (``hosts``), as an ``AuthenticationInterceptor``'s `hosts:`, so that it reaches
/// the group's endpoints and no one else, redirects included; a credential that adapts before the group goes with a
/// request the group moves to another endpoint only if that endpoint is one of its hosts, as across a redirect. One
/// group keeps its endpoints' health behind one lock, and a record of each request in flight until it ends: share one
/// instance between the sessions that talk to the service.
///
/// ```swift
/// let group = EndpointGroup(
///     name: "payments",
///     endpoints: [
///         .init(URL(string: "https://eu.payments.example.com/v2")!),
///         .init(URL(string: "https://us.payments.example.com/v2")!),
///     ])
/// let session = Session(adapters: [group], retriers: [RetryPolicy()])
/// // Sent to eu, or to us while eu is out of rotation; its retry goes to the other one.
/// let response = try await session.send(URL(string: "https://eu.payments.example.com/v2/charges")!)
/// ```
public final class EndpointGroup: RequestAdapter, RetryGate {
    /// What the group keeps of a request until it ends: where its attempts went.
    private struct Route: Sendable {
        /// The endpoint of each attempt in flight, by attempt number.
        var inFlight: [Int: Int] = [:]
        /// The endpoints where an attempt of the request failed, the last one last.
        var failed: [Int] = []
        /// The endpoint picked for the next attempt, number `attempt` (a retry, before the retriers are asked about
        /// it; a hedge, before the hedge gates), which that attempt takes if the endpoint is still in rotation.
        var planned: (attempt: Int, endpoint: Int)?

        /// Whether the request has nothing more to route by: no attempt in flight and no retry or hedge planned. Its
        /// next attempt comes only after one is planned, so where its attempts failed no longer matters.
        var isDone: Bool { inFlight.isEmpty && planned == nil }
    }

    private struct State: Sendable {
        var detector: OutlierDetector
        var routes: [UUID: Route] = [:]
        /// The attempts in flight to each endpoint that the group will hear end.
        var inFlight: [Int]
        /// The time before which each endpoint asked that no attempt reach it (a 429's or 503's `Retry-After`); a time
        /// past means none.
        var quietUntil: [Duration]

        /// The endpoints an attempt may not go to `now` while another is left: those whose breaker is open, those whose
        /// half-open breaker has an attempt in flight (its trial: the breaker would refuse another), and those that
        /// asked for quiet until later.
        func unavailable(_ breakers: (open: Set<Int>, halfOpen: Set<Int>), at now: Duration) -> Set<Int> {
            let quiet = quietUntil.indices.filter { quietUntil[$0] > now }
            return breakers.open.union(breakers.halfOpen.filter { inFlight[$0] > 0 }).union(quiet)
        }

        /// Forgets request `requestID` once it has nothing more to route by, though it ends later (a success after a
        /// failure its chain accepted, a failure no retrier retries, a hedge a gate refused).
        mutating func forgetIfDone(_ requestID: UUID) {
            if routes[requestID]?.isDone == true { _ = forget(requestID) }
        }

        /// Forgets request `requestID`'s route and returns it. A table emptied after a burst gives its storage back:
        /// the group keeps memory for the requests it routes now, not for its busiest moment.
        mutating func forget(_ requestID: UUID) -> Route? {
            let route = routes.removeValue(forKey: requestID)
            if routes.isEmpty, routes.capacity > 64 { routes = [:] }
            return route
        }

        /// Notes that an attempt to `endpoint` ended, or will not be heard of.
        mutating func ended(at endpoint: Int) {
            assert(inFlight[endpoint] > 0, "an attempt to endpoint \(endpoint) ends that was not counted in flight")
            inFlight[endpoint] = Swift.max(inFlight[endpoint] - 1, 0)
        }
    }

    /// The group's name, in its ejections and logs; the first endpoint's host by default.
    public let name: String
    /// The endpoints, in the order given.
    public let endpoints: [Endpoint]
    /// How an attempt's endpoint is picked.
    public let selection: Selection
    /// When an endpoint is taken out of rotation, and for how long.
    public let outlierDetection: OutlierDetection

    /// The longest an endpoint stays out of rotation for the quiet one response asked for (a longer one is held at
    /// it); ``defaultMaximumQuiet``, 60 s, by default.
    public let maximumQuiet: Duration

    /// The default ``maximumQuiet``: 60 seconds, the longest `Retry-After` that ``RetryAfter`` honours by default.
    public static let defaultMaximumQuiet = RetryAfter.defaultMaximumDelay

    /// How the group reads the quiet an endpoint asks for: `retry-after-ms`, else `Retry-After`, on a 429 or 503, held
    /// at ``maximumQuiet``.
    private let quietAsked: RetryAfter

    private let breakers: CircuitBreakerRegistry?
    private let classify: (@Sendable (AttemptOutcome) -> CircuitBreaker.Verdict)?
    private let onEjection: (@Sendable (Ejection) -> Void)?
    private let random: RandomSource
    private let clock: SessionClock
    private let state: Locked<State>

    /// Creates a group; an empty list of endpoints, two with the same base URL, or a negative `maximumQuiet` traps,
    /// naming the setting.
    ///
    /// - Parameters:
    ///   - name: The group's name, in its ejections and logs; the first endpoint's host by default.
    ///   - endpoints: The service's base URLs, in order (the failover order under ``Selection/failover``).
    ///   - selection: How an attempt's endpoint is picked among those it may use; ``Selection/failover`` by default.
    ///   - outlierDetection: When an endpoint is taken out of rotation; ``OutlierDetection/default`` (Envoy's) by
    ///     default, ``OutlierDetection/off`` for never.
    ///   - breakers: A registry whose open breakers take their endpoints out of rotation (keyed as the registry keys a
    ///     request to the endpoint's base URL); none by default. One in shadow mode takes none out: it refuses nothing,
    ///     so it moves no attempt either.
    ///   - clock: The clock ejections are timed on; `ContinuousClock` by default.
    ///   - random: Where ``Selection/weighted``'s draws come from; ``RandomSource/system`` by default.
    ///   - classify: Whether an attempt sent to an endpoint failed (``CircuitBreaker/Verdict/failure``), succeeded or is
    ///     not counted; `nil`, the default, is ``CircuitBreaker/defaultVerdict(for:)``.
    ///   - onEjection: Called, outside the group's lock, each time an endpoint is taken out of rotation; none by
    ///     default.
    ///   - maximumQuiet: The longest an endpoint stays out of rotation for the quiet one 429 or 503 asked for, zero
    ///     or more; ``defaultMaximumQuiet`` (60 s) by default. Zero: the group routes as though no endpoint asked, and
    ///     a retry it sends to one that did still waits what the retry policy honours of that endpoint's answer.
    public init<C: Clock>(
        name: String? = nil, endpoints: [Endpoint], selection: Selection = .failover,
        outlierDetection: OutlierDetection = .default, breakers: CircuitBreakerRegistry? = nil,
        clock: C = ContinuousClock(), random: RandomSource = .system,
        classify: (@Sendable (AttemptOutcome) -> CircuitBreaker.Verdict)? = nil,
        onEjection: (@Sendable (Ejection) -> Void)? = nil, maximumQuiet: Duration = defaultMaximumQuiet
    ) where C.Duration == Duration {
        ConfigurationError.trapIfInvalid { () throws(ConfigurationError) in
            guard !endpoints.isEmpty else {
                throw ConfigurationError(field: "EndpointGroup.endpoints", problem: "must not be empty")
            }
            guard Set(endpoints.map(\.baseURL)).count == endpoints.count else {
                throw ConfigurationError(field: "EndpointGroup.endpoints", problem: "must not name a base URL twice")
            }
            guard maximumQuiet >= .zero else {
                throw ConfigurationError(
                    field: "EndpointGroup.maximumQuiet", problem: "must be 0 or more, got \(maximumQuiet)")
            }
        }
        self.name = name ?? endpoints[0].baseURL.host ?? "endpoints"
        self.endpoints = endpoints
        self.selection = selection
        self.outlierDetection = outlierDetection
        self.breakers = breakers
        self.classify = classify
        self.onEjection = onEjection
        self.maximumQuiet = maximumQuiet
        self.quietAsked = RetryAfter(maximumDelay: maximumQuiet, signals: .retryAfterMs)
        self.random = random
        self.clock = SessionClock(clock)
        self.state = Locked(
            State(
                detector: OutlierDetector(count: endpoints.count, configuration: outlierDetection),
                inFlight: Array(repeating: 0, count: endpoints.count),
                quietUntil: Array(repeating: .zero, count: endpoints.count)))
    }

    /// The hosts of the endpoints, each `host` or `host:port` as the base URL names it: give them to a credential
    /// (``AuthenticationInterceptor``'s `hosts:`) that belongs to the group.
    public var hosts: Set<String> {
        Set(endpoints.compactMap { CircuitBreakerRegistry.hostKey(for: URLRequest(url: $0.baseURL)) })
    }

    /// Whether `endpoint` is in rotation now: not ejected (its breaker, given `breakers:`, and a quiet it asked for
    /// are not read here).
    public func isInRotation(_ endpoint: Endpoint) -> Bool {
        guard let index = endpoints.firstIndex(of: endpoint) else { return false }
        let now = clock.now()
        return state.withLock { $0.detector.isInRotation(index, at: now) }
    }

    /// Sends the request under the endpoint the group picks for the attempt, when it is under one of the endpoints'
    /// base URLs; any other request goes through untouched.
    public func adapt(_ request: consuming URLRequest, context: RequestContext) async throws -> URLRequest {
        route(&request, context: context)
        return request
    }

    /// Never refuses a retry: the retry's attempt is routed when it is adapted.
    public func admitRetry(_ request: RetryRequest, dueTo error: ReboundError, after delay: Duration) -> (any Error)? {
        nil
    }

    /// Moves `request` under the endpoint picked for `context`'s attempt, and notes where it went until the attempt
    /// ends.
    fileprivate func route(_ request: inout URLRequest, context: RequestContext) {
        guard let url = request.url, let from = endpointIndex(under: url) else { return }
        // A request is routed by one group, the first that routed it: another group that covers it too lets it
        // through, so that no attempt goes where its router did not send it.
        guard context.routeRetries(through: self) else { return }
        // Without registrations (a decorator's own context) the group would never hear the attempt end: it routes it
        // and keeps nothing of it. Registered first, so that an attempt settled from now on is settled by the group.
        let keeps = context.canRegister
        if keeps { context.settleAndAdmitRetries(through: self) }
        let breakers = breakerStates()
        let now = clock.now()
        let (requestID, attempt) = (context.requestID, context.attempt)
        let chosen = state.withLock { state -> Int in
            // A group the chain holds twice leaves an attempt where its first pass sent it.
            if keeps, state.routes[requestID]?.inFlight[attempt] != nil { return from }
            let route = keeps ? state.routes[requestID] ?? Route() : Route()
            let unavailable = state.unavailable(breakers, at: now)
            // The endpoint the gates judged this retry by, while it is still in rotation; else a new pick.
            let chosen =
                if let planned = route.planned, planned.attempt == attempt,
                    state.detector.isInRotation(planned.endpoint, at: now), !unavailable.contains(planned.endpoint)
                {
                    planned.endpoint
                } else {
                    pick(for: route, in: state.detector, unavailable: unavailable, at: now)
                }
            if keeps {
                state.routes[requestID, default: Route()].inFlight[attempt] = chosen
                state.inFlight[chosen] += 1
                if route.planned?.attempt == attempt { state.routes[requestID]?.planned = nil }
            }
            return chosen
        }
        // An attempt the session settled already (a hedge that lost while it was adapted, whose request may have
        // ended) would never be settled again: what was just noted of it goes. Read after noting, so that an attempt
        // settled meanwhile is settled by the group or found here.
        if keeps, context.isSettled {
            state.withLock { state in
                if let endpoint = state.routes[requestID]?.inFlight.removeValue(forKey: attempt) {
                    state.ended(at: endpoint)
                }
                state.forgetIfDone(requestID)
            }
        }
        request.url = Self.rebase(url, from: endpoints[from].baseURL, to: endpoints[chosen].baseURL)
        // A credential that adapted the request before the group goes to another endpoint only if it is one of its
        // hosts, as across a redirect.
        if chosen != from { context.secureMove(&request, from: url) }
    }

    /// The endpoints whose breaker, in `breakers`, is open, and those whose breaker is half-open; none without a
    /// registry, or with one in shadow mode, which refuses nothing and so moves no attempt. Read before the group's
    /// lock is taken: a breaker has a lock of its own.
    private func breakerStates() -> (open: Set<Int>, halfOpen: Set<Int>) {
        guard let breakers, breakers.enforcement == .enforced else { return ([], []) }
        var states: (open: Set<Int>, halfOpen: Set<Int>) = ([], [])
        for (index, endpoint) in endpoints.enumerated() {
            guard let key = breakers.key(for: URLRequest(url: endpoint.baseURL)),
                let breaker = breakers.existingBreaker(for: key)
            else { continue }
            switch breaker.state {
            case .open, .forcedOpen: states.open.insert(index)
            case .halfOpen: states.halfOpen.insert(index)
            default: break
            }
        }
        return states
    }

    /// The endpoint for the next attempt of a request that went where `route` says: the first tier with an endpoint
    /// in it, picked by the group's selection.
    private func pick(
        for route: Route, in detector: OutlierDetector, unavailable: Set<Int>, at now: Duration
    ) -> Int {
        let all = Array(endpoints.indices)
        let inRotation = all.filter { detector.isInRotation($0, at: now) && !unavailable.contains($0) }
        let inFlight = Set(route.inFlight.values)
        let avoided = inFlight.union(route.failed)
        let lastFailed = route.failed.last
        let tiers = [
            inRotation.filter { !avoided.contains($0) },
            inRotation.filter { !inFlight.contains($0) && $0 != lastFailed },
            inRotation.filter { !inFlight.contains($0) },
            inRotation,
            all.filter { !avoided.contains($0) },
            all,
        ]
        let candidates = tiers.first { !$0.isEmpty } ?? all
        switch selection {
        case .failover:
            return candidates[0]
        case .weighted:
            let total = candidates.reduce(0) { $0 + endpoints[$1].weight }
            var draw = random.unitInterval() * Double(total)
            for candidate in candidates {
                draw -= Double(endpoints[candidate].weight)
                if draw < 0 { return candidate }
            }
            return candidates[candidates.count - 1]
        }
    }

    /// The endpoint whose base URL `url` is under, the one with the longest path when base URLs nest
    /// (`https://api.example.com/backup` before `https://api.example.com`); `nil` for a request the group does not
    /// route.
    private func endpointIndex(under url: URL) -> Int? {
        var found: (index: Int, length: Int)?
        for (index, endpoint) in endpoints.enumerated() where Self.isUnder(url, endpoint.baseURL) {
            let length = Self.basePath(endpoint.baseURL).utf8.count
            if length > found?.length ?? -1 { found = (index, length) }
        }
        return found?.index
    }

    /// Whether `url` is under `base`: the same scheme, host and port, and a path that is the base's or goes on from it
    /// after a `/`.
    static func isUnder(_ url: URL, _ base: URL) -> Bool {
        guard url.scheme?.lowercased() == base.scheme?.lowercased(),
            url.host?.lowercased() == base.host?.lowercased(),
            Redirection.effectivePort(of: url) == Redirection.effectivePort(of: base)
        else { return false }
        let prefix = basePath(base)
        let path = url.path(percentEncoded: true)
        return prefix.isEmpty || path == prefix || path.hasPrefix(prefix + "/")
    }

    /// `url`, which is under `from`, under `to` instead: the rest of its path, its query and its fragment kept, its
    /// user-info dropped.
    static func rebase(_ url: URL, from: URL, to: URL) -> URL {
        guard var components = URLComponents(url: to, resolvingAgainstBaseURL: false) else { return url }
        let rest = url.path(percentEncoded: true).dropFirst(basePath(from).count)
        components.percentEncodedPath = basePath(to) + rest
        components.percentEncodedQuery = url.query(percentEncoded: true)
        components.percentEncodedFragment = url.fragment(percentEncoded: true)
        return components.url ?? url
    }

    /// The base URL's path, without a trailing `/`: empty for a base URL at the root.
    private static func basePath(_ base: URL) -> String {
        var path = base.path(percentEncoded: true)
        while path.hasSuffix("/") { path.removeLast() }
        return path
    }

    /// How many requests the group keeps a record of; for tests that check nothing is kept.
    package var requestsKept: Int { state.withLock { $0.routes.count } }

    /// How many requests' routes the group's table has room for without growing; for tests.
    package var routesCapacity: Int { state.withLock { $0.routes.capacity } }

    /// How many attempts the group counts in flight, over its endpoints; for tests that check nothing stays counted.
    package var attemptsInFlight: Int { state.withLock { $0.inFlight.reduce(0, +) } }
}

extension EndpointGroup: AdaptsInPlace {
    /// Routes the request in place, as ``adapt(_:context:)`` does.
    var adaptInPlace: Adapter.ModifyNowHandler? {
        { [self] request, context in route(&request, context: context) }
    }
}

// Asked before the gates where a retry or a hedge goes, so that a breaker judges it by its endpoint (see
// `RetryRouter`).
extension EndpointGroup: RetryRouter {
    func destination(ofRetry request: RetryRequest) -> URLRequest? {
        // The failed attempt is still in flight here (it is settled after the gates answer): the pick avoids it.
        plan(request.admittedRequest, attempt: request.attempts.count + 1, of: request.requestID)
    }

    func destination(ofHedge sent: URLRequest, number: Int, of requestID: UUID) -> URLRequest? {
        // The round's attempts are in flight: the pick avoids them.
        plan(sent, attempt: number, of: requestID)
    }

    func placement(of sent: URLRequest) -> Placement? {
        guard let url = sent.url, let index = endpointIndex(under: url) else { return nil }
        return Placement(group: name, endpoint: endpoints[index])
    }

    func hedgeRefused(_ number: Int, of requestID: UUID) {
        state.withLock { state in
            guard state.routes[requestID]?.planned?.attempt == number else { return }
            state.routes[requestID]?.planned = nil
            state.forgetIfDone(requestID)
        }
    }

    /// Picks the endpoint of attempt `attempt` of request `requestID`, which the attempt then takes if it is still in
    /// rotation, and returns `sent` (a request under one of the endpoints) moved under it; `nil` when the group does
    /// not route the request, or the pick is where `sent` goes already.
    private func plan(_ sent: URLRequest, attempt: Int, of requestID: UUID) -> URLRequest? {
        guard let url = sent.url, let from = endpointIndex(under: url) else { return nil }
        let breakers = breakerStates()
        let now = clock.now()
        let chosen = state.withLock { state -> Int? in
            guard let route = state.routes[requestID] else { return nil }
            // An attempt's endpoint is picked once: asked again (the gates after the retriers), the same one.
            if let planned = route.planned, planned.attempt == attempt { return planned.endpoint }
            let chosen = pick(
                for: route, in: state.detector, unavailable: state.unavailable(breakers, at: now), at: now)
            state.routes[requestID]?.planned = (attempt: attempt, endpoint: chosen)
            return chosen
        }
        guard let chosen, chosen != from else { return nil }
        var target = sent
        target.url = Self.rebase(url, from: endpoints[from].baseURL, to: endpoints[chosen].baseURL)
        return target
    }
}

// The session tells the group how the attempts it routed end directly (see `AttemptAccountant`).
extension EndpointGroup: AttemptAccountant {
    func settle(_ attempt: Attempt, of requestID: UUID, ledger: RequestLedger, outcome: () -> AttemptOutcome) {
        // Only an attempt that was sent tells anything about its endpoint.
        let verdict: CircuitBreaker.Verdict =
            attempt.request == nil
            ? .ignored : CircuitBreaker.verdict(for: attempt, classify: classify, outcome: outcome)
        let now = clock.now()
        let ejection = state.withLock { state -> Ejection? in
            guard let index = state.routes[requestID]?.inFlight.removeValue(forKey: attempt.number) else { return nil }
            state.ended(at: index)
            var ejection: Ejection?
            switch verdict {
            case .success:
                _ = state.detector.record(.success, of: index, at: now)
            case .failure:
                state.routes[requestID]?.failed.removeAll { $0 == index }
                state.routes[requestID]?.failed.append(index)
                if let ejected = state.detector.record(.failure, of: index, at: now) {
                    ejection = Ejection(
                        group: name, endpoint: endpoints[index], rule: ejected.rule, duration: ejected.duration,
                        ejections: ejected.ejections)
                }
            case .ignored:
                break
            }
            // An endpoint that asked for quiet gets no attempt until then while another is left, however the attempt
            // is classified.
            if let asked = attempt.responseHead.flatMap(quietAsked.delay(for:)), asked > .zero {
                state.quietUntil[index] = Swift.max(state.quietUntil[index], now + asked)
            }
            state.forgetIfDone(requestID)
            return ejection
        }
        if let ejection { onEjection?(ejection) }
    }

    func requestEnded(_ requestID: UUID) {
        state.withLock { state in
            guard let route = state.forget(requestID) else { return }
            for endpoint in route.inFlight.values { state.ended(at: endpoint) }
        }
    }
}
