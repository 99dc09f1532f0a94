import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A budget per host that limits retries, never first attempts, so that a failing upstream is not hammered by every
/// client retrying at once: the retry storm.
///
/// Two forms. `RetryBudget()` is a token bucket (below). `RetryBudget(ratio: .default)` lets retries be a share of the
/// traffic instead, Finagle's form (``Ratio``): at most 10 % of the requests of the last 10 s, plus 1 retry a second,
/// so that a chain's load in a long outage stays within 1.1× the requests whatever their rate. The ratio form is the
/// one to choose when a host's traffic varies; the bucket spends itself in the first seconds of an outage and refills
/// slowly.
///
/// **The token bucket.**
/// Each host starts with ``Configuration/initialTokens`` (500). A retry costs ``Configuration/retryCost`` (5),
/// ``Configuration/timeoutRetryCost`` (10) after a timeout, or ``Configuration/throttlingRetryCost`` (5) after a 429
/// Too Many Requests. A success gives back what its last retry cost, or ``Configuration/successReward`` (1) if it
/// needed no retry, up to ``Configuration/maximumTokens`` (500). When a host's bucket cannot pay for a retry, the retry
/// does not happen and the caller gets the original failure, marked with ``RetryBudgetExhausted`` (as
/// ``ReboundError/Reason/retryAborted(error:original:)``). These are the numbers of the AWS SDKs' standard retry mode;
/// ``Configuration/awsRetries2026`` has those of their retry behavior 2.1.
///
/// **Grants that never reach the wire are refunded**, in both forms: a retry whose attempt is refused before it is
/// sent (an open circuit breaker, a failing adapter) or that never starts (a later gate denies it, the deadline comes
/// or the caller cancels in the backoff) gives back what it took.
///
/// Put it in a chain's adapters, anywhere among them: on every attempt it registers through the context as the
/// request's ``RetryGate`` (it has the last word after the retriers chose to retry) and ``AttemptObserver`` (it learns
/// of the request's end by itself; a ratio budget only once it granted the request a retry, as until then it has
/// nothing to settle), so it keeps working inside any wrapper that forwards `adapt`. It is a class whose
/// buckets are behind a lock; share one instance between sessions to share the budget.
///
/// Made with `enforcement: .shadow`, it decides as above and denies nothing: each denial it would have made is told to
/// the observers instead (``Enforcement``, ``ShadowRefusal``), and a request it would have ended is no longer counted.
///
/// ```swift
/// let budget = RetryBudget()
/// let session = Session(adapters: [budget], retriers: [RetryPolicy()])
/// ```
public final class RetryBudget: RequestAdapter, RetryGate, AttemptObserver {
    /// A request's granted retry, until the request ends.
    private struct Grant: Sendable {
        let key: String
        let cost: Int
        /// The number of the attempt that failed and was granted the retry.
        let after: Int
        /// Whether the retry's attempt was sent.
        var reachedTheWire = false
    }

    private struct State: Sendable {
        /// A token bucket's tokens per host; a host at its initial tokens is at rest.
        var tokens: HostTable<Int>
        /// A ratio budget's requests and retries per host; a host whose window is empty is at rest.
        var windows: HostTable<RatioWindow>
        /// Each request's last granted retry, until the request ends.
        var granted: [UUID: Grant] = [:]
        /// What each hedge in flight took, by request, until its attempt ends: refunded if it was never sent.
        var hedges: [UUID: [HedgeGrant]] = [:]
        /// The requests a budget in shadow mode would have ended by denying a retry, until they end: it no longer
        /// counts anything of them, as enforced it would not have seen them again.
        var shadowed: Set<UUID> = []

        /// Whether a budget in shadow mode no longer sees request `requestID`: it would have ended it.
        func isShadowed(_ requestID: UUID) -> Bool {
            !shadowed.isEmpty && shadowed.contains(requestID)
        }
    }

    /// What a hedge took from a budget, until its attempt ends.
    private struct HedgeGrant: Sendable {
        let attempt: Int
        let key: String
        let cost: Int
    }

    /// The bucket's numbers; unused by a ratio budget.
    public let configuration: Configuration
    /// The share of traffic retries may be, for a ratio budget; `nil` for a token bucket.
    public let ratio: Ratio?
    /// Whether it denies as it decides, or only tells of its denials (``Enforcement/shadow``); enforced by default.
    public let enforcement: Enforcement

    private let keyFunction: CircuitBreakerRegistry.KeyFunction
    private let state: Locked<State>
    private let now: @Sendable () -> Duration

    /// Creates a budget.
    ///
    /// - Parameters:
    ///   - configuration: The bucket's numbers; ``Configuration/default`` (the AWS SDKs' standard mode) by default.
    ///   - key: Picks a request's bucket, or `nil` for a request whose retries are not limited;
    ///     ``CircuitBreakerRegistry/hostKey(for:)`` (the host, and the port when the URL names one) by default.
    ///   - maximumHosts: The most hosts whose buckets the budget keeps, at least 1; 10,000 by default. A host whose
    ///     bucket is back at its initial tokens and that was not used lately is forgotten; at the cap, a new host makes
    ///     the budget forget the host it used least lately (see <doc:SecurityGuide>).
    ///   - enforcement: ``Enforcement/enforced`` (the default) to deny as it decides, ``Enforcement/shadow`` to deny
    ///     nothing and tell the observers each denial it would have made.
    public init(
        configuration: Configuration = .default,
        key: @escaping CircuitBreakerRegistry.KeyFunction = CircuitBreakerRegistry.hostKey, maximumHosts: Int = 10_000,
        enforcement: Enforcement = .enforced
    ) {
        HostTable<Int>.trapIfInvalid(maximumHosts, owner: "RetryBudget")
        self.state = Locked(
            State(tokens: HostTable(capacity: maximumHosts), windows: HostTable(capacity: maximumHosts)))
        self.configuration = configuration
        self.ratio = nil
        self.enforcement = enforcement
        self.keyFunction = key
        self.now = { .zero }
    }

    /// Creates a budget that lets retries be a share of each host's traffic over a sliding window.
    ///
    /// - Parameters:
    ///   - ratio: The share, the window and the floor, for example ``Ratio/default`` (10 % over 10 s, plus 1 retry a
    ///     second).
    ///   - key: Picks a request's budget, or `nil` for a request whose retries are not limited;
    ///     ``CircuitBreakerRegistry/hostKey(for:)`` by default.
    ///   - clock: The clock the window slides on; `ContinuousClock` by default.
    ///   - maximumHosts: The most hosts whose windows the budget keeps, at least 1; 10,000 by default. A host whose
    ///     window is empty and that was not used lately is forgotten; at the cap, a new host makes the budget forget
    ///     the host it used least lately (see <doc:SecurityGuide>).
    ///   - enforcement: ``Enforcement/enforced`` (the default) to deny as it decides, ``Enforcement/shadow`` to deny
    ///     nothing and tell the observers each denial it would have made.
    public init<C: Clock>(
        ratio: Ratio, key: @escaping CircuitBreakerRegistry.KeyFunction = CircuitBreakerRegistry.hostKey,
        clock: C = ContinuousClock(), maximumHosts: Int = 10_000, enforcement: Enforcement = .enforced
    ) where C.Duration == Duration {
        HostTable<Int>.trapIfInvalid(maximumHosts, owner: "RetryBudget")
        self.state = Locked(
            State(tokens: HostTable(capacity: maximumHosts), windows: HostTable(capacity: maximumHosts)))
        self.configuration = .default
        self.ratio = ratio
        self.enforcement = enforcement
        self.keyFunction = key
        self.now = SessionClock(clock).now
    }

    /// The tokens `key`'s bucket holds now; for a ratio budget, the retries its window still allows, rounded down.
    ///
    /// Reading changes nothing.
    public func tokens(for key: String) -> Int {
        if let ratio {
            let now = now()
            return state.withLock { state in
                Int(saturating: max(state.windows[key]?.available(at: now, ratio: ratio) ?? ratio.floorPerWindow, 0))
            }
        }
        return state.withLock { $0.tokens[key] ?? configuration.initialTokens }
    }

    /// The tokens of the budget a request to `request`'s host draws on (see ``tokens(for:)-(String)``); `nil` when
    /// its retries are not limited (the key function gives no key).
    public func tokens(for request: URLRequest) -> Int? {
        keyFunction(request).map { tokens(for: $0) }
    }

    /// The tokens of the budget a request to `url` draws on; `nil` when its retries are not limited.
    public func tokens(for url: URL) -> Int? {
        tokens(for: URLRequest(url: url))
    }

    /// Registers the budget, through the context, as the request's gate and observer, and returns `request` unchanged:
    /// wrapped in anything that forwards `adapt`, the budget still has the last word on every retry. A ratio budget
    /// counts the request on its first attempt, and registers as an observer only once it grants a retry (until then
    /// it has nothing to settle).
    public func adapt(_ request: consuming URLRequest, context: RequestContext) async throws -> URLRequest {
        register(request, context: context)
        return request
    }

    /// Registers through the context, and counts a ratio budget's request on its first attempt.
    private func register(_ request: URLRequest, context: RequestContext) {
        // A token bucket rewards successes, so it hears every request's end; a ratio budget registers as an observer
        // when it grants a retry (see `admitRetry`).
        context.admitRetriesAndHedges(through: self, observes: ratio == nil)
        if let ratio, context.attempt == 1, let key = keyFunction(request) {
            let now = now()
            state.withLock { state in
                changeWindow(of: key, in: &state, now: now, ratio: ratio) {
                    $0.addRequest(at: now, window: ratio.window)
                }
            }
            // Retries are charged to the host the request is sent to: a later adapter that moves it there has the
            // session have the budget count the request under that host instead.
            context.admitted(by: self, under: key, at: request.url)
        }
    }

    /// How many requests hold a granted retry and have not ended; for tests that check nothing is kept.
    package var requestsWithGrants: Int { state.withLock { $0.granted.count } }

    /// How many hosts the budget keeps; for tests that check it forgets.
    package var hostsKept: Int { state.withLock { $0.tokens.count + $0.windows.count } }

    /// How many requests hold hedges not yet settled; for tests that check nothing is kept.
    package var requestsWithHedges: Int { state.withLock { $0.hedges.count } }

    /// Takes the retry's cost from the request's budget, or denies the retry with ``RetryBudgetExhausted``.
    ///
    /// A retry after a 401 is never charged nor denied: it retries with a refreshed credential and says nothing about
    /// the host's health, so one expired token cannot empty a host's budget for real failures. Nor is a retry after a
    /// failure of the device's own network (`notConnectedToInternet`, `dataNotAllowed`, `internationalRoamingOff`,
    /// `callIsActive`): the host saw nothing, so the requests that waited for the network (``OfflineRetrier``) all go
    /// once it is back.
    public func admitRetry(_ request: RetryRequest, dueTo error: ReboundError, after delay: Duration) -> (any Error)? {
        guard let key = keyFunction(request.admittedRequest) else { return nil }
        // A retry that says nothing about the host's health (``Attempt/retryIsFree``) costs nothing.
        let status = request.responseHead?.statusCode
        if Attempt.retryIsFree(status: status, failure: request.attempts.last?.accountedFailure) { return nil }
        let failed = request.attempts.count
        let failedWasSent = request.attempts.last?.request != nil
        // A ratio budget counts retries; a token bucket charges a timeout's and a throttled request's retry their own.
        let cost = ratio != nil ? 1 : configuration.cost(ofRetryAfter: error, response: request.responseHead)
        let now = now()
        let denial = state.withLock { state -> RetryBudgetExhausted? in
            // In shadow mode, a request it would have ended goes on unseen by it.
            if state.isShadowed(request.requestID) { return nil }
            settle(&state, request.requestID, failed: failed, wasSent: failedWasSent, now: now)
            if let denial = take(cost, from: key, in: &state, now: now) {
                state.granted[request.requestID] = nil
                if enforcement == .shadow { state.shadowed.insert(request.requestID) }
                return denial
            }
            state.granted[request.requestID] = Grant(key: key, cost: cost, after: failed)
            return nil
        }
        // A ratio budget hears how the request goes on only once it granted a retry (or, in shadow mode, would have
        // denied one): without either it has nothing to settle, refund or forget, and a request that succeeds at once
        // is told nothing.
        if ratio != nil, denial == nil || enforcement == .shadow { request.context.observe(self) }
        guard let denial, enforcement == .shadow else { return denial }
        request.ledger?.refuseInShadow(
            ShadowRefusal(
                requestID: request.requestID, attempt: failed, stage: .retry, reason: .retryBudget,
                part: "RetryBudget", key: key, error: denial),
            by: ObjectIdentifier(self))
        return nil
    }

    /// Takes `cost` from `key`'s budget (retries in the window, for a ratio budget; tokens, for a token bucket), or
    /// returns the denial and takes nothing: what a retry and a hedge spend.
    private func take(_ cost: Int, from key: String, in state: inout State, now: Duration) -> RetryBudgetExhausted? {
        if let ratio {
            let available = state.windows[key]?.available(at: now, ratio: ratio) ?? ratio.floorPerWindow
            guard available >= Double(cost) else {
                return RetryBudgetExhausted(key: key, availableTokens: Int(max(available, 0)), retryCost: cost)
            }
            changeWindow(of: key, in: &state, now: now, ratio: ratio) {
                $0.addRetry(cost, at: now, window: ratio.window)
            }
            return nil
        }
        let available = state.tokens[key] ?? configuration.initialTokens
        guard available >= cost else {
            return RetryBudgetExhausted(key: key, availableTokens: available, retryCost: cost)
        }
        changeTokens(of: key, in: &state) { $0 = available - cost }
        return nil
    }

    /// Notes whether a granted retry's attempt was sent, and refunds the grant of a retry or a hedge whose attempt was
    /// refused before it was sent.
    public func attemptDidFinish(_ outcome: AttemptOutcome) async {
        let now = now()
        let wasSent = outcome.attempt.request != nil
        state.withLock { state in
            if state.isShadowed(outcome.requestID) { return }
            settle(&state, outcome.requestID, failed: outcome.attempt.number, wasSent: wasSent, now: now)
            settleHedge(&state, outcome.requestID, attempt: outcome.attempt.number, wasSent: wasSent, now: now)
        }
    }

    /// Forgets what the hedge that was attempt `attempt` took, if it was one, refunding it if it was never sent (a
    /// later adapter stopped it, the round ended first).
    private func settleHedge(_ state: inout State, _ requestID: UUID, attempt: Int, wasSent: Bool, now: Duration) {
        guard !state.hedges.isEmpty, var hedges = state.hedges.removeValue(forKey: requestID) else { return }
        if let index = hedges.firstIndex(where: { $0.attempt == attempt }) {
            let hedge = hedges.remove(at: index)
            if !wasSent { give(hedge.cost, to: hedge.key, in: &state, now: now) }
        }
        if !hedges.isEmpty { state.hedges[requestID] = hedges }
    }

    /// Gives `cost` back to `key`'s budget: what `take` took.
    private func give(_ cost: Int, to key: String, in state: inout State, now: Duration) {
        if let ratio {
            // A window forgotten since (it was empty: what was taken has left the window) gets nothing back.
            state.windows.modify(key) { $0.addRetry(-cost, at: now, window: ratio.window) }
        } else {
            changeTokens(of: key, in: &state) { $0 = Self.adding(cost, to: $0, upTo: configuration.maximumTokens) }
        }
    }

    /// Settles the grant that led to attempt `failed`, if the request holds one: refunded if that attempt was not
    /// sent, kept as spent otherwise. Called when the attempt is reported and, before that, when its failure asks for
    /// another retry.
    private func settle(_ state: inout State, _ requestID: UUID, failed attempt: Int, wasSent: Bool, now: Duration) {
        guard let grant = state.granted[requestID], attempt == grant.after + 1, !grant.reachedTheWire else { return }
        if wasSent {
            state.granted[requestID]?.reachedTheWire = true
        } else {
            refund(&state, requestID, now: now)
        }
    }

    /// Gives tokens back for a request that succeeded and refunds a grant that never reached the wire; forgets the
    /// request on every path.
    public func requestDidFinish(_ outcome: RequestOutcome) async {
        let now = now()
        let sent = outcome.attempts.last?.admittedRequest ?? outcome.originalRequest
        let fallbackKey = outcome.decision == .succeeded && ratio == nil ? keyFunction(sent) : nil
        state.withLock { state in
            // Every attempt was reported before the request's end: a hedge left here never started (a gate after this
            // budget refused it), and gets its cost back.
            if !state.hedges.isEmpty, let unstarted = state.hedges.removeValue(forKey: outcome.requestID) {
                for hedge in unstarted { give(hedge.cost, to: hedge.key, in: &state, now: now) }
            }
            // A request a budget in shadow mode would have ended by denying a retry: enforced, it ended failed there,
            // with nothing to refund or reward.
            if !state.shadowed.isEmpty, state.shadowed.remove(outcome.requestID) != nil { return }
            if let grant = state.granted[outcome.requestID], !grant.reachedTheWire {
                refund(&state, outcome.requestID, now: now)
                return
            }
            let grant = state.granted.removeValue(forKey: outcome.requestID)
            // A ratio budget gives nothing back for successes: its window forgets retries by itself.
            guard outcome.decision == .succeeded, ratio == nil else { return }
            let refund: (key: String, amount: Int)
            if let grant {
                refund = (grant.key, grant.cost)
            } else if let fallbackKey {
                refund = (fallbackKey, configuration.successReward)
            } else {
                return
            }
            changeTokens(of: refund.key, in: &state) {
                $0 = Self.adding(refund.amount, to: $0, upTo: configuration.maximumTokens)
            }
        }
    }

    /// Changes `key`'s tokens, starting from the initial tokens for a host not kept (see `HostTable`).
    private func changeTokens(of key: String, in state: inout State, _ body: (inout Int) -> Void) {
        let initial = configuration.initialTokens
        state.tokens.update(key, make: { initial }, isAtRest: { $0 == initial }, body)
        // A step of the hand on every change (after it: the host just changed is marked used, and stays), so that
        // hosts gone idle are forgotten though no new host comes.
        state.tokens.forgetIdle(steps: 1, isAtRest: { $0 == initial })
    }

    /// Changes `key`'s window, starting from an empty one for a host not kept (see `HostTable`).
    private func changeWindow(
        of key: String, in state: inout State, now: Duration, ratio: Ratio, _ body: (inout RatioWindow) -> Void
    ) {
        let isAtRest = { (window: RatioWindow) in window.isEmpty(at: now, window: ratio.window) }
        state.windows.update(key, make: RatioWindow.init, isAtRest: isAtRest, body)
        // A step of the hand on every change (see `changeTokens`), and every host whose window is empty once a window.
        state.windows.forgetIdle(at: now, every: ratio.window, isAtRest: isAtRest)
    }

    /// `tokens + amount`, held at `maximum`, also where the sum would overflow (a bucket of `Int.max` tokens).
    private static func adding(_ amount: Int, to tokens: Int, upTo maximum: Int) -> Int {
        let (sum, overflow) = tokens.addingReportingOverflow(amount)
        return overflow ? maximum : min(sum, maximum)
    }

    /// Gives back, and forgets, the grant of `requestID` if it has one.
    private func refund(_ state: inout State, _ requestID: UUID, now: Duration) {
        guard let grant = state.granted.removeValue(forKey: requestID) else { return }
        give(grant.cost, to: grant.key, in: &state, now: now)
    }
}

/// Why a retry did not happen: the host's ``RetryBudget`` could not pay for it.
public struct RetryBudgetExhausted: Error, Sendable, Equatable, CustomStringConvertible {
    /// The bucket's key, usually the host.
    public let key: String
    /// The tokens the bucket held.
    public let availableTokens: Int
    /// What the retry would have cost.
    public let retryCost: Int

    /// Creates the error; budgets create these, and test code may too.
    public init(key: String, availableTokens: Int, retryCost: Int) {
        self.key = key
        self.availableTokens = availableTokens
        self.retryCost = retryCost
    }

    /// For example `retry budget for api.example.com exhausted: 3 tokens left, a retry costs 5`.
    public var description: String {
        "retry budget for \(key) exhausted: \(availableTokens) tokens left, a retry costs \(retryCost)"
    }
}

extension RetryBudget: HostAdmission {
    func admissionKey(for request: URLRequest) -> String? {
        keyFunction(request)
    }

    /// Counts the ratio budget's request under `key`, the host it is sent to, rather than under `admitted`.
    func readmit(_ context: RequestContext, from admitted: String, to key: String?) async throws {
        guard let ratio else { return }
        let now = now()
        state.withLock { state in
            state.windows.modify(admitted) { $0.addRequest(-1, at: now, window: ratio.window) }
            guard let key else { return }
            changeWindow(of: key, in: &state, now: now, ratio: ratio) { $0.addRequest(at: now, window: ratio.window) }
        }
    }
}

extension RetryBudget: AdaptsInPlace {
    /// Registers as ``adapt(_:context:)`` does, leaving the request unchanged.
    var adaptInPlace: Adapter.ModifyNowHandler? {
        { [self] request, context in register(request, context: context) }
    }
}

// Before a hedge: a hedge spends from the host's budget as a retry does.
extension RetryBudget: HedgeGate {
    /// Spends one retry's cost from the host's budget for a hedge, or refuses it with ``RetryBudgetExhausted``; the
    /// cost is refunded if the hedge's attempt ends without being sent (a later adapter stopped it, or the round ended
    /// first), so a hedge is charged only when it reaches the wire. A hedge that stands for the retry of a 401 or of a
    /// failure of the device's own network (`failed`) is free, as that retry would be.
    func admitHedge(
        _ request: URLRequest, of requestID: UUID, attempt: Int, after failed: Attempt?, roles: RegisteredRoles
    ) -> (any Error)? {
        guard let key = keyFunction(request) else { return nil }
        // In place of a retry that costs nothing, the hedge costs nothing either.
        if let failed, failed.retryIsFree { return nil }
        let cost = ratio != nil ? 1 : configuration.retryCost
        let now = now()
        let denial = state.withLock { state -> RetryBudgetExhausted? in
            if state.isShadowed(requestID) { return nil }
            if let denial = take(cost, from: key, in: &state, now: now) { return denial }
            state.hedges[requestID, default: []].append(HedgeGrant(attempt: attempt, key: key, cost: cost))
            return nil
        }
        // To hear whether the hedge was sent: a token bucket observes every request already, a ratio budget may not.
        if denial == nil, ratio != nil { roles.add(observer: self) }
        guard let denial, enforcement == .shadow else { return denial }
        // In shadow mode the hedge starts, unseen by the budget: it takes nothing and is not counted.
        roles.ledger.refuseInShadow(
            ShadowRefusal(
                requestID: requestID, attempt: attempt, stage: .hedge, reason: .retryBudget, part: "RetryBudget",
                key: key, error: denial),
            by: ObjectIdentifier(self))
        return nil
    }
}
