import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a retrier knows about the request whose attempt just failed.
public struct RetryRequest: Sendable {
    /// An identifier shared by every attempt of one request, and different between requests.
    public var requestID: UUID { storage.value.requestID }
    /// The label the caller gave the request, for retriers that treat kinds of request differently; `nil` if none.
    public var label: String? { storage.value.label }
    /// The request as the caller passed it to the session, before any adapter ran.
    public var originalRequest: URLRequest { storage.value.original.request }
    /// The request sent in the failed attempt; `nil` if an adapter failed before it could be sent.
    public var lastRequest: URLRequest? { storage.value.lastRequest }
    /// The failed attempt's response; `nil` if it got none. Built from ``responseHead`` on first use when the transport
    /// answered without an `HTTPURLResponse`.
    public var response: HTTPURLResponse? { storage.value.response?.httpURLResponse }
    /// The status and header fields of the failed attempt's response; `nil` if it got none.
    public var responseHead: ResponseHead? { storage.value.response }
    /// The failed attempt's response body; `nil` if it got no response.
    public var data: Data? { storage.value.data }
    /// Every attempt so far, in order; the last one is the attempt that just failed.
    public var attempts: [Attempt] { storage.value.attempts }

    /// The fields, in one box: a retry request is passed along as one reference.
    private struct Fields: Sendable {
        let requestID: UUID
        let label: String?
        let original: OriginalRequest
        let lastRequest: URLRequest?
        let response: ResponseHead?
        let data: Data?
        let attempts: [Attempt]
        let roles: RegisteredRoles?
        let backoffWait: BackoffWait?
        var retryTarget: URLRequest? = nil
        var retrySource: URLRequest? = nil
        var destination: URLRequest? = nil
        var roundQuiet = HostQuiet()
        var movedMidRound = false
    }

    private let storage: Box<Fields>

    /// Creates a retry request; the session creates these, and test code may too (`destination`, `nil` by default,
    /// as an ``EndpointGroup`` that moves the retry to another endpoint sets it).
    public init(
        requestID: UUID = UUID(), label: String? = nil, originalRequest: URLRequest, lastRequest: URLRequest? = nil,
        response: HTTPURLResponse? = nil, data: Data? = nil, attempts: [Attempt] = [], destination: URLRequest? = nil
    ) {
        self.init(
            requestID: requestID, label: label, original: .request(originalRequest), lastRequest: lastRequest,
            responseHead: response.map(ResponseHead.init), data: data, attempts: attempts, roles: nil, backoffWait: nil,
            destination: destination)
    }

    init(
        requestID: UUID, label: String?, original: OriginalRequest, lastRequest: URLRequest?,
        responseHead response: ResponseHead?, data: Data?, attempts: [Attempt], roles: RegisteredRoles?,
        backoffWait: BackoffWait?, destination: URLRequest? = nil
    ) {
        storage = Box(
            Fields(
                requestID: requestID, label: label, original: original, lastRequest: lastRequest,
                response: response, data: data, attempts: attempts, roles: roles, backoffWait: backoffWait,
                destination: destination))
    }

    /// The caller's request, or what it is made of.
    var original: OriginalRequest { storage.value.original }

    /// The failed attempt's context, through which a retrier registers as an observer or a gate for the rest of the
    /// request (see ``RequestContext/observe(_:)``); one made outside a session registers nothing.
    public var context: RequestContext {
        RequestContext(
            requestID: requestID, attempt: Swift.max(attempts.count, 1), label: label, roles: storage.value.roles,
            maximumAttempts: nil)
    }

    /// The request's registrations; `nil` for a retry request made outside a session.
    var roles: RegisteredRoles? { storage.value.roles }

    /// The request's ledger, in the same record as its registrations; `nil` when the request keeps none.
    var ledger: RequestLedger? { storage.value.roles.map { $0.ledger } }  // See `RequestContext.ledger`.

    /// The endpoint an ``EndpointGroup`` sent `attempt` to, as an outcome a part builds of it names it; `nil` when no
    /// group routed the request.
    func placement(of attempt: Attempt) -> EndpointGroup.Placement? {
        roles?.placement(of: attempt)
    }

    /// Has the half-open breakers that gave the failed attempt a trial count it now, as the retry's gates would later:
    /// a retrier calls it before it waits for something that may need the same host (a credential's refresh), which the
    /// trial's place is then free for.
    func settleTrials() {
        guard let roles, let attempt = attempts.last else { return }
        for part in roles.accountants {
            part.settleTrial(attempt, of: requestID, ledger: roles.ledger) {
                AttemptOutcome(
                    requestID: requestID, label: label, original: original, attempt: attempt, data: data,
                    decision: .retry(after: .zero), endpoint: placement(of: attempt))
            }
        }
    }

    /// The request's backoff wait, which a breaker that grants a retry keeps to end it early; `nil` outside a session
    /// and for a request no breaker let through.
    var backoffWait: BackoffWait? { storage.value.backoffWait }

    /// Where the retry goes, when it does not start from the caller's request: the request its adapters start from,
    /// when a retrier moved the request (`.retryWithRequest`, a fallback host) now or before, or the endpoint an
    /// ``EndpointGroup`` sends it to; `nil` when the retry starts from the caller's request, as every retry does
    /// without one.
    var retryTarget: URLRequest? { storage.value.retryTarget }

    /// The request the failed attempt's adapters started from, when ``retryTarget`` is a request the retry's adapters
    /// start from too: a per-host part compares the two, as the adapters have not run on the target yet. `nil` when the
    /// target is where the retry goes (an endpoint a group chose).
    var retrySource: URLRequest? { storage.value.retrySource }

    /// The request the retry will be sent as, when an ``EndpointGroup`` picked, before the retriers were asked,
    /// another endpoint than the failed attempt's (the retry's attempt takes it if it is still in rotation then); `nil`
    /// when no group moves the retry, or the retriers were asked in a hedged round (its hedges are routed as they
    /// start).
    public var destination: URLRequest? { storage.value.destination }

    /// Whether the retry goes to another host than the one that answered the failed attempt (an endpoint group sends it
    /// elsewhere, ``destination``): a delay that answer asked for (`Retry-After`, `retry-after-ms`) is that host's,
    /// and a retrier that reads one itself should not hold such a retry for it, as ``RetryPolicy`` does not.
    public var leavesAnsweringHost: Bool {
        guard let destination else { return false }
        return CircuitBreakerRegistry.hostKey(for: destination) != CircuitBreakerRegistry.hostKey(for: admittedRequest)
    }

    /// This retry request, for a retry an endpoint group sends as `destination`.
    func routed(to destination: URLRequest) -> RetryRequest {
        var fields = storage.value
        fields.destination = destination
        return RetryRequest(storage: Box(fields))
    }

    /// The times before which the hosts that answered failures of the hedged round the failed attempt ended asked
    /// that no attempt reach them (a 503's `Retry-After` on a hedge): a retry to one of them waits for its time too.
    var roundQuiet: HostQuiet { storage.value.roundQuiet }

    /// Whether a retrier moved the request during the hedged round the failed attempt ended, which may then have
    /// started from the request before the move or after it.
    var movedMidRound: Bool { storage.value.movedMidRound }

    /// This retry request, for a failure that ended a hedged round in which hosts asked for `quiet`, or a retrier
    /// moved the request.
    func after(round quiet: HostQuiet, movedMidRound: Bool) -> RetryRequest {
        var fields = storage.value
        (fields.roundQuiet, fields.movedMidRound) = (quiet, movedMidRound)
        return RetryRequest(storage: Box(fields))
    }

    /// This retry request, as the gates are asked about a retry that goes to `target`, or whose adapters start from
    /// `target` where the failed attempt's started from `source`.
    func retrying(to target: URLRequest, from source: URLRequest? = nil) -> RetryRequest {
        var fields = storage.value
        fields.retryTarget = target
        fields.retrySource = source
        return RetryRequest(storage: Box(fields))
    }

    private init(storage: Box<Fields>) {
        self.storage = storage
    }

    /// How many retries were made before the attempt that just failed: `0` after the first attempt fails.
    public var retryCount: Int { max(attempts.count - 1, 0) }

    /// The request that failed: the last one sent, or the original when no attempt was sent. After redirects it is the
    /// last hop, while a retry sends the first request again: judge whether a retry is safe by that one, as
    /// ``RetryPolicy/isSafeToRetry(_:)`` does.
    public var request: URLRequest { lastRequest ?? originalRequest }

    /// The request the last attempt was adapted to, before any redirect (see `Attempt.admittedRequest`): the host a
    /// per-host part admits a retry under, as it admitted and counted the attempt.
    var admittedRequest: URLRequest { attempts.last?.admittedRequest ?? request }

    /// Whether a retry would send again a request that reached the server and may not be repeated: the last attempt
    /// followed a redirect (its first hop was answered), and the request before it is neither of a method the retry
    /// policies retry by default nor carries an `Idempotency-Key`. A retrier that judges by the response alone (a
    /// credential's 401, a body's signal) asks this before it retries.
    var retryWouldRepeatARedirectedRequest: Bool {
        guard attempts.last?.firstHop != nil else { return false }
        return !admittedRequest.isRepeatable(methods: RetryPolicy.defaultRetryableHTTPMethods)
    }

    /// The failed request's method, `GET` when it sets none: the last hop's after redirects (see ``request``).
    public var method: HTTPMethod { lastRequest?.method ?? storage.value.original.method }
}
