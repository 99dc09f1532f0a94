import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What an adapter knows about the attempt it adapts a request for, and where it registers the roles it must play
/// for that attempt.
///
/// **Registering roles.** A part plays the role of the list it is given in (an adapter adapts, a retrier is asked about
/// retries), and nothing else unless it registers here: the session never looks at a part's type to find more. A part
/// that must hear how attempts end (a circuit breaker holding a permit) or have the last word on retries (a retry
/// budget) registers itself from ``RequestAdapter/adapt(_:context:)``, with ``observe(_:)``,
/// ``admitRetries(through:)`` and ``validateResponses(with:)``. Because the registration travels with the call, anything that forwards `adapt` keeps
/// those roles: a nested ``Interceptor``, a ``LoggingRetrier``, or your own decorator. Retriers register the same way
/// through ``RetryRequest/context``, from their first failed attempt on. A registration lasts until the request ends; registering
/// the same instance again (on every attempt, say) changes nothing, and an instance the chain already holds directly
/// is told once.
///
/// A context made with the public initializer (in a test, say) registers nothing, so a decorator must pass on the
/// context it was given, or a copy made with ``with(label:)``: a breaker handed a context that cannot register lets
/// the attempt through uncounted.
public struct RequestContext: Sendable {
    /// An identifier shared by every attempt of one request, and different between requests: a version-4-format UUID
    /// that, like a random one, cannot be computed from the identifiers made before it.
    public let requestID: UUID
    /// The attempt's number, starting at 1.
    public let attempt: Int
    /// The label the caller gave the request, for interceptors that treat kinds of request differently; `nil` if none.
    public let label: String?
    /// Where registrations go: the request's, or `nil` for a context made outside a session.
    let roles: RegisteredRoles?
    /// The most attempts the chain's own retriers and the hedging settings allow, when each retrier says its limit.
    let maximumAttemptsOfChain: Int?

    /// Creates a context; the session creates these, and test code may too.
    public init(requestID: UUID = UUID(), attempt: Int = 1, label: String? = nil) {
        self.init(requestID: requestID, attempt: attempt, label: label, roles: nil, maximumAttempts: nil)
    }

    init(requestID: UUID, attempt: Int, label: String?, roles: RegisteredRoles?, maximumAttempts: Int? = nil) {
        self.requestID = requestID
        self.attempt = attempt
        self.label = label
        self.roles = roles
        self.maximumAttemptsOfChain = maximumAttempts
    }

    /// What parts hold and noted of the request's attempts, in the same record as its registrations; `nil` for a
    /// context made outside a session. (Unwrapped with `map`: the optional chain `roles?.ledger` copies `roles` through
    /// its type's metadata, at run time.)
    var ledger: RequestLedger? { roles.map { $0.ledger } }

    /// How many retries came before this attempt: `attempt - 1`.
    public var retryCount: Int { attempt - 1 }

    /// Whether parts can register through this context: `true` for the contexts a session makes and their copies.
    public var canRegister: Bool { roles != nil }

    /// The time left before the request's deadline, read now on the session's clock (zero once it passed); `nil`
    /// without a deadline, or for a context made outside a session.
    public var timeLeft: Duration? { ledger?.timeLeft.map { Swift.max($0, .zero) } }

    /// The most attempts the request can make, as far as the session knows: 1 + the largest retry limit among the
    /// chain's retriers and those registered so far, when each says its limit (``RetryPolicy``,
    /// ``ConnectionLostRetryPolicy``, ``OfflineRetrier``, ``JSONBodyRetrier``, and an ``Interceptor`` or a
    /// ``LoggingRetrier`` of such retriers), or the hedging settings' ``Hedging/maximumAttempts`` if larger. `nil`
    /// when a retrier does not say (a closure, an ``AuthenticationInterceptor``), and for a context made outside a
    /// session or handed to a retrier.
    public var maximumAttempts: Int? {
        guard var most = maximumAttemptsOfChain else { return nil }
        for retrier in roles?.retriers ?? [] {
            guard let limit = (retrier as? any RetryRules)?.maximumRetries else { return nil }
            most = Swift.max(most, limit + 1)
        }
        return most
    }

    /// Whether the session settled this attempt already (a hedge that lost, an attempt the deadline cut short) or the
    /// request ended: a part must not count it from now on, since it would not hear it end. `false` for a context made
    /// outside a session.
    var isSettled: Bool { ledger?.isSettled(attempt: attempt) ?? false }

    /// Notes that `part` admitted this attempt, which it saw at `url`, under `key`, so that the session has it admit the
    /// attempt again if a later adapter moves it to another host; nothing for a context made outside a session.
    func admitted(by part: some HostAdmission, under key: String, at url: URL?) {
        ledger?.admitted(by: part, attempt: attempt, under: key, at: url)
    }

    /// Has the parts that admitted this attempt before the adapter that calls it give back, uncounted, what another
    /// request may need while the attempt waits there (a limiter's place, a breaker's trial: the request a credential's
    /// refresh sends to the same host); returns what they gave back, to take again with ``admitAgain(_:for:)`` after the
    /// wait. Nothing for a context made outside a session.
    func giveWay() -> InlineList<RequestLedger.Admission> {
        var given = InlineList<RequestLedger.Admission>.none
        for admission in ledger?.admissions(of: attempt) ?? .none
        where admission.part.giveWay(self, admittedUnder: admission.key) {
            given.append(admission)
        }
        return given
    }

    /// Has the parts that gave way while this attempt waited (``giveWay()``) admit it again, in the order they first
    /// did, each under the host `request` (the attempt as it is now) goes to, waiting or throwing as its `adapt` would;
    /// an admission whose host a later adapter changed is noted under the new one.
    func admitAgain(_ given: InlineList<RequestLedger.Admission>, for request: URLRequest) async throws {
        for admission in given {
            // A host the part lets through untouched: nothing to take again.
            guard let key = admission.part.admissionKey(for: request) else { continue }
            try await admission.part.admitAgain(self, under: key, admittedUnder: admission.key)
            if key != admission.key { ledger?.move(admission, to: key, at: request.url) }
        }
    }

    /// Whether this attempt is a hedge, which never waits on the client for room (a limiter's place, a pacer's
    /// renewal); `false` for a context made outside a session.
    var isHedge: Bool { ledger?.isHedge(attempt) ?? false }

    /// Whether the request ended; `false` for a context made outside a session.
    var requestEnded: Bool { ledger?.requestEnded ?? false }

    /// This context with another label, keeping where registrations go: for a decorator that relabels a request.
    public func with(label: String?) -> RequestContext {
        RequestContext(
            requestID: requestID, attempt: attempt, label: label, roles: roles, maximumAttempts: maximumAttemptsOfChain)
    }

    /// Tells `observer` how this attempt and every later one of the request ends, and how the request ends.
    ///
    /// Safe to call on every attempt: an instance registered twice, or also part of the chain, is told once.
    public func observe(_ observer: some AttemptObserver & AnyObject) {
        roles?.add(observer: observer)
    }

    /// Asks `gate` before every retry of the request from now on, after the retriers chose to retry.
    ///
    /// Safe to call on every attempt: an instance registered twice, or also part of the chain, is asked once.
    public func admitRetries(through gate: some RetryGate & AnyObject) {
        roles?.add(gate: gate)
    }

    /// Registers a budget: asked before every retry and every hedge of the request, and told how its attempts end if
    /// `observes`.
    func admitRetriesAndHedges(through part: some AttemptObserver & RetryGate & HedgeGate, observes: Bool) {
        roles?.add(budget: part, observes: observes)
    }

    /// Tells `part` how each attempt and the request end, as ``observe(_:)`` does, and asks it before every hedge of the
    /// request: a pacer, which spends nothing for a hedge.
    func observeAndAdmitHedges(through part: some AttemptObserver & HedgeGate) {
        roles?.add(hedgeCheck: part)
    }

    /// Has `part` settle the attempts it let through, told at once when each ends, and admit the request's retries:
    /// the library's own parts' lighter way to hear how their attempts end (a breaker's permit).
    func settleAndAdmitRetries(through part: some AttemptAccountant) {
        roles?.add(accountant: part)
    }

    /// Has `part` say where the request's retries go, before the gates are asked about them (see ``RetryRouter``),
    /// unless another part routes the request already; returns whether `part` routes it (without registrations, it
    /// does).
    func routeRetries(through part: some RetryRouter) -> Bool {
        roles?.route(through: part) ?? true
    }

    /// Validates every response of the request from now on with `validator`, after the validator in effect accepted
    /// it: how a part in the chain fails a successful response (a 200 whose body says "try again").
    ///
    /// Safe to call on every attempt: an instance registered twice validates each response once. Validators
    /// registered this way run in the order they registered.
    public func validateResponses(with validator: some ResponseValidator & AnyObject) {
        roles?.add(validator: validator)
    }

    /// Asks `retrier` about every failed attempt of the request from now on, before the chain's retriers.
    func decideRetries(with retrier: some RegisteredRetrier) {
        roles?.add(retrier: retrier)
    }

    /// Registers the observers and gates of an ``Interceptor``, once per request.
    func register(_ group: RoleGroup) {
        roles?.add(group: group)
    }

    /// Whether `scope` secured the request's redirects, that is, adapted one of its attempts; `nil` for a context that
    /// cannot register, which cannot tell.
    func secures(with scope: some CredentialScope) -> Bool? {
        roles?.holds(scope: scope)
    }

    /// Secures `request`, which a part moved from `sent` to another origin, for the credentials registered so far
    /// (see ``Redirection/secureMove(_:from:scopes:applied:)``): each credential a scope applied to this attempt is
    /// taken off, then applied again where in scope. A context that cannot register cannot tell them, and drops every
    /// header a redirect to another origin drops.
    func secureMove(_ request: inout URLRequest, from sent: URL) {
        Redirection.secureMove(
            &request, from: sent, scopes: roles?.scopes, applied: ledger?.credentialsApplied(to: attempt) ?? [])
    }

    /// Notes that `scope` applied `credential` to this attempt, so that a part that moves the attempt to another origin
    /// takes that very credential off, even if the scope's credential changed since (a refresh, a logout).
    func note(_ credential: some Sendable, appliedBy scope: some CredentialScope) {
        ledger?.note(credential, appliedBy: scope, to: attempt)
    }

    /// Secures every redirect hop of the request from now on with `scope`: a hop to another origin drops its
    /// credential's headers, and a hop to one of its hosts gets the credential.
    func secureRedirects(with scope: some CredentialScope) {
        roles?.add(scope: scope)
    }
}
