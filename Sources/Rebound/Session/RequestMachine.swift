import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Everything one request knows, as a pure state machine: each event of the request's life (an attempt ended, an
/// endpoint group picked where the retry goes, the retriers answered, the gates answered, the backoff ended) returns
/// the next ``Action``, which the driver (`RequestPlan.execute(startingWith:)`) performs before it feeds back the next
/// event. An event whose outcome the machine knows without asking (a hedged round asked the retriers already; no gate
/// could be asked) it feeds itself.
///
/// ```
///            start
///              │
///   ┌──▶ attempting ──(success, cancelled, cut by the deadline, a failure never retried)────┐
///   │          │ failure                                                                    │
///   │          ▼                                                                            │
///   │      deciding ──(no retry, too late, cancelled, a retry past the deadline)────────────┤
///   │          │ retry (after a delay, or none)                                             │
///   │          ▼                                                                            ▼
///   │      admitting ──(a gate refused)──────────────────────────────────────────────▶ finished
///   │          │ granted: the attempt reported                                              ▲
///   │          ▼                                                                            │
///   └──── backing off ──(cancelled, a gate that granted the retry ended the wait)───────────┘
/// ```
///
/// Nothing here awaits, reads a clock or calls a part: the time comes with each event, and what a part says comes back
/// as an event. A decision travels with its payload: the error a request ends with is in the action that ends it, the
/// report of an attempt in the action that follows it (``Action/backOff(_:wait:report:)``,
/// ``Action/finish(_:endsAccounts:report:)``), the breaker's admission arrives with the attempt's end, a hedged round's
/// attempts (winner and losers) with the round's end, and the failure a backoff would end with is the payload of
/// ``Phase/backingOff(ending:)``. Events that cannot happen in the current
/// phase trap, naming it.
struct RequestMachine {
    /// Where the request is in its life.
    enum Phase {
        /// Attempt `number` (or a hedged round that begins with it) is in flight since `start`, on the session's clock.
        case attempting(number: Int, start: Duration)
        /// The retriers are asked about the failed attempt (after an endpoint group that routes the request picked
        /// where the retry goes).
        case deciding(Question)
        /// The retriers chose to retry after `delay`; the gates are asked about `retry`, which starts from `target`
        /// (the request a retrier handed over, if any).
        case admitting(Question, delay: Duration, target: URLRequest?)
        /// The request sleeps before its next attempt; a gate that ends the sleep ends the request with `ending`, the
        /// failed attempt's error with the gate's error as the reason.
        case backingOff(ending: ReboundError)
        /// The request ended (``Action/finish(_:endsAccounts:report:)`` says how).
        case finished
    }

    /// What the driver does next.
    enum Action {
        /// Make attempt `number` from `request`, within `limit` of the request's time.
        case attempt(URLRequest, number: Int, limit: TimeLimit?)
        /// Make a hedged round from what `start` holds of the request (its first attempt is the request's next).
        case hedgedRound(RoundStart)
        /// Ask the endpoint group that routes the request, if one registered, where the retry after `retry`'s failed
        /// attempt will go.
        case route(RetryRequest)
        /// Ask the retriers (those that registered, then the chain's) about a failed attempt, within `limit`.
        case askRetriers(Question, limit: TimeLimit?)
        /// Ask the gates, in order, whether `retry` may go after `delay`; the first refusal wins. Only for a request
        /// that may have a gate (`RequestPlan.mayHaveGates`): for any other, the machine grants the retry itself.
        case askGates(RetryRequest, dueTo: ReboundError, delay: Duration)
        /// Report the failed attempt (settle it with the parts that let it through, then tell the observers), then
        /// sleep `delay` before the next attempt (none when it is zero); `wait` is the sleep a breaker that granted the
        /// retry can end.
        case backOff(Duration, wait: BackoffWait?, report: Report)
        /// Report the last attempt, when `report` says, then end the request with `ending`: tell the observers, have
        /// the parts forget what they keep for the request when `endsAccounts`, and return or throw.
        case finish(Ending, endsAccounts: Bool, report: Report?)
    }

    /// What the parts and the observers are told of recorded attempt `attempt`, beside what follows it (the action
    /// that carries the report says: a retry after the backoff's delay, or the request's end); the ``AttemptOutcome``
    /// is built only for a part or an observer that reads it.
    struct Report {
        /// The number of the attempt reported.
        let attempt: Int
        let data: Data?
        /// The time since the request started.
        let elapsed: Duration
    }

    /// How a request ends.
    enum Ending {
        /// With the result of the attempt that succeeded, which the request's `Response` is made of.
        case succeeded(AttemptResult)
        case failed(ReboundError)
        case cancelled

        /// The decision the observers are told, and the error the request ends with.
        var decision: (AttemptDecision, ReboundError?) {
            switch self {
            case .succeeded: (.succeeded, nil)
            case .failed(let error): (.failed, error)
            case .cancelled: (.cancelled, nil)
            }
        }
    }

    /// How the driver's await of the retriers ended.
    enum RetriersAnswer {
        case answered(RetryResult)
        /// The deadline came first.
        case tooLate
        /// The task was cancelled meanwhile.
        case cancelled
    }

    /// How a backoff sleep ended (``BackoffWait/Ending``, or a plain sleep's).
    typealias BackoffEnding = BackoffWait.Ending

    /// What the retriers are asked about a failed attempt.
    struct Question {
        var request: RetryRequest
        let error: ReboundError

        /// The question about `failed`, an attempt of `plan`'s request that failed for `reason`, recorded last of
        /// `attempts`; `lastRequest` is the last request a failed attempt sent, and `backoffWait` the request's.
        init(
            about failed: AttemptResult, failingFor reason: ReboundError.Reason, plan: RequestPlan, attempts: [Attempt],
            lastRequest: URLRequest?, backoffWait: BackoffWait?
        ) {
            error = ReboundError(
                reason: reason, original: plan.original, lastRequest: lastRequest, responseHead: failed.response,
                data: failed.data, attempts: attempts)
            request = RetryRequest(
                requestID: plan.requestID, label: plan.label, original: plan.original, lastRequest: failed.sent,
                responseHead: failed.response, data: failed.data, attempts: attempts, roles: plan.registered,
                backoffWait: backoffWait)
        }

        /// The question about `failed`, an attempt that failed for `reason`, recorded last by `machine`.
        init(about failed: AttemptResult, failingFor reason: ReboundError.Reason, in machine: RequestMachine) {
            self.init(
                about: failed, failingFor: reason, plan: machine.plan, attempts: machine.attempts,
                lastRequest: machine.lastSentRequest, backoffWait: machine.backoffWait)
        }
    }

    let plan: RequestPlan
    /// The request's time: when it started and when it must end, on the session's clock.
    let time: RequestTime
    private(set) var phase: Phase
    private(set) var attempts: [Attempt] = []
    /// The last request a failed attempt sent.
    private var lastSentRequest: URLRequest?
    /// The request adapters start from once a retrier answered `retryWithRequest`; `nil`: the caller's.
    private var base: URLRequest?
    /// The request's backoff wait, which a breaker that grants a retry keeps so that its opening ends the wait: made
    /// once the retriers are first asked about a request a breaker let through; `nil` for every other request.
    private var backoffWait: BackoffWait?

    /// A machine for a request that starts `now`, in the phase of its first attempt.
    init(_ plan: RequestPlan, now: Duration) {
        self.plan = plan
        self.time = RequestTime(start: now, end: plan.deadlineTimer?.end, attemptTimeout: plan.attemptTimeout)
        self.phase = .attempting(number: 1, start: now)
    }

    /// How an attempt the deadline cut short is recorded.
    static let deadlineCutShort = ReboundError.Reason.transportFailed(error: URLError(.timedOut))

    /// What happened to the request, as the driver feeds it to ``handle(_:now:)``.
    enum Event {
        /// The request starts; its first attempt starts from `first` (the session's unshared copy of the caller's
        /// request, or the caller's).
        case start(first: URLRequest)
        /// The task was found cancelled before the next attempt.
        case cancelled
        /// The attempt in flight ended with `result`; `admittedByBreaker` says whether a breaker let an attempt of the
        /// request through so far (its grant of a retry then keeps the backoff wait).
        case attemptEnded(AttemptResult, admittedByBreaker: Bool)
        /// A hedged round ended: its attempts, in the order the round recorded them, the one that ended the round last,
        /// with that one's result and what came of the retriers' question about it if the round asked them already,
        /// and the request a retrier moved the request to meanwhile.
        case roundEnded(HedgingExecutor.RoundResult, admittedByBreaker: Bool)
        /// The endpoint group picked where the retry goes: it sends it as `destination`, or where the failed attempt
        /// went when `nil`.
        case routed(destination: URLRequest?)
        /// The retriers answered about the failure in question (or did not, in time).
        case retriersAnswered(RetriersAnswer)
        /// The gates answered about the retry: the first refusal, `nil` when every gate granted it.
        case gatesAnswered(refusal: (any Error)?)
        /// The backoff sleep ended.
        case backoffEnded(BackoffEnding)
    }

    // MARK: Events

    /// The next action after `event`, which happened `now` on the session's clock: the machine's one entry. The event
    /// is consumed: the machine keeps what it needs of it.
    mutating func handle(_ event: consuming Event, now: Duration) -> Action {
        switch (event, phase) {
        case (.start(let first), .attempting(1, _)) where attempts.isEmpty:
            return nextAttempt(from: first, now: now)

        case (.cancelled, _):
            // Found before an attempt: the last one, if any, was reported before its backoff.
            return finish(.cancelled)

        case (.attemptEnded(let result, let admittedByBreaker), .attempting(let number, let start)):
            if let sent = result.failedRequest { lastSentRequest = sent }
            attempts.append(Attempt(recording: result, number: number, since: start, now: now))
            return decide(after: result, answer: nil, admittedByBreaker: admittedByBreaker, now: now)

        case (.roundEnded(let round, let admittedByBreaker), .attempting):
            for recorded in round.records {
                if let sent = recorded.failedRequest { lastSentRequest = sent }
                attempts.append(recorded.attempt)
            }
            if let target = round.target { base = target }
            // The quiet a host asked for in the round holds a retry to that host, wherever a retrier moved the request.
            return decide(
                after: round.result, answer: round.answer, admittedByBreaker: admittedByBreaker, quiet: round.quiet,
                movedMidRound: round.target != nil, now: now)

        case (.routed(let destination), .deciding(var question)):
            // The retriers and the deadline's rule then know whether the retry leaves the host that answered, and the
            // gates judge it by where it goes.
            if let destination {
                question.request = question.request.routed(to: destination)
                phase = .deciding(question)
            }
            return .askRetriers(question, limit: time.limits?.limit(of: .decision, now: now))

        case (.retriersAnswered(.answered(let result)), .deciding(let question)):
            return decide(question, after: result, now: now)
        case (.retriersAnswered(.tooLate), .deciding(let question)):
            return finish(.failed(deadlineExceeded(after: question.error)), reporting: question.error.data, now: now)
        case (.retriersAnswered(.cancelled), .deciding(let question)):
            return finish(.cancelled, reporting: question.error.data, now: now)

        case (.gatesAnswered(let refusal?), .admitting(let question, _, _)):
            return finish(.failed(aborted(question.error, by: refusal)), reporting: question.error.data, now: now)
        case (.gatesAnswered(nil), .admitting(let question, let delay, let target)):
            attempts[attempts.count - 1].retryDelay = delay
            if let target { base = target }
            phase = .backingOff(ending: question.error)
            let report = Report(
                attempt: attempts[attempts.count - 1].number, data: question.error.data, elapsed: now - time.start)
            return .backOff(delay, wait: backoffWait, report: report)

        case (.backoffEnded(.slept), .backingOff):
            return nextAttempt(now: now)
        case (.backoffEnded(.cancelled), .backingOff):
            return finish(.cancelled)
        case (.backoffEnded(.ended(let error)), .backingOff(let failure)):
            // A gate that granted the retry ended the wait (a breaker that opened): as if it had refused the retry.
            return finish(.failed(aborted(failure, by: error)))

        default:
            preconditionFailure("\(event) cannot happen in \(phase)")
        }
    }

    // MARK: Records

    /// The record of an ended attempt, and the request it sent if it failed: the last such request is the one the
    /// request's error names.
    struct Recorded {
        let attempt: Attempt
        let failedRequest: URLRequest?

        /// The record of attempt `number`, the `hedge`-th of its round, that came to `result`, started at `start` and
        /// ended `now`.
        init(_ result: AttemptResult, number: Int, since start: Duration, now: Duration, hedge: Int = 0) {
            attempt = Attempt(recording: result, number: number, since: start, now: now, hedge: hedge)
            failedRequest = result.failedRequest
        }
    }

    /// The request the next attempt's adapters start from: the one a retrier handed over, or the caller's.
    var nextBase: URLRequest { base ?? plan.originalRequest }

    /// What a hedged round reads of the request as it starts, handed to the round with the action that starts it: the
    /// request the round starts from and its settings, the attempts recorded before it, the request's time, the request
    /// its hedges start from, and what a question to the retriers carries besides (the last request a failed attempt
    /// sent, the backoff wait). Nothing in it changes while the round runs; the round's own records come back with its
    /// end (``Event/roundEnded(_:admittedByBreaker:)``).
    final class RoundStart {
        let request: URLRequest
        let hedging: Hedging
        let attempts: [Attempt]
        let time: RequestTime
        let nextBase: URLRequest
        let lastSentRequest: URLRequest?
        let backoffWait: BackoffWait?

        /// What a round of `machine`'s request from `request` under `hedging` reads.
        init(_ request: URLRequest, hedging: Hedging, of machine: RequestMachine) {
            self.request = request
            self.hedging = hedging
            self.attempts = machine.attempts
            self.time = machine.time
            self.nextBase = machine.nextBase
            self.lastSentRequest = machine.lastSentRequest
            self.backoffWait = machine.backoffWait
        }

        /// The question about `failed`, an attempt of the round that failed for `reason`, recorded last of `round`,
        /// the attempts the round recorded so far, after those recorded before it.
        func question(
            about failed: AttemptResult, failingFor reason: ReboundError.Reason, plan: RequestPlan,
            after round: [Recorded]
        ) -> Question {
            Question(
                about: failed, failingFor: reason, plan: plan, attempts: attempts + round.map(\.attempt),
                lastRequest: round.last(where: { $0.failedRequest != nil })?.failedRequest ?? lastSentRequest,
                backoffWait: backoffWait)
        }
    }

    // MARK: Transitions

    /// Starts the next attempt `now`, from `request` (the first attempt's) or else ``nextBase``: a hedged round when
    /// the request hedges, else one attempt within the time left.
    private mutating func nextAttempt(from request: consuming URLRequest? = nil, now: Duration) -> Action {
        let (request, number) = (request ?? nextBase, attempts.count + 1)
        phase = .attempting(number: number, start: now)
        if let hedging = plan.hedging, !plan.original.hasBodyStream {
            return .hedgedRound(RoundStart(request, hedging: hedging, of: self))
        }
        return .attempt(request, number: number, limit: time.limits?.limit(of: .attempt, now: now))
    }

    /// What follows an attempt, recorded last, that came to `result`; `quiet` holds the times before which the hosts
    /// that answered failures of the hedged round it ended asked that no attempt reach them, and `movedMidRound` says
    /// whether a retrier moved the request during that round.
    private mutating func decide(
        after result: AttemptResult, answer: RetriersAnswer?, admittedByBreaker: Bool, quiet: HostQuiet = HostQuiet(),
        movedMidRound: Bool = false, now: Duration
    ) -> Action {
        switch result.kind {
        case .success:
            return finish(.succeeded(result), reporting: result.data, now: now)
        case .cancelled:
            return finish(.cancelled, reporting: result.data, now: now)
        case .deadlineReached:
            return finish(.failed(deadlineExceeded()), reporting: result.data, now: now)
        case .failure(let reason):
            // A failure that is never retried (an open breaker, say) is not offered to the retriers: it ends the
            // request, stopped by the rule whose refusal it is (unless a hedged round says how its question ended).
            if answer == nil, reason.isNonRetryable {
                let rule = StopReason(failure: reason) ?? .notRetried
                let error = failure(reason, response: result.response, data: result.data, stoppedBy: rule)
                return finish(.failed(error), reporting: result.data, now: now)
            }
            // The first question of a request a breaker let through makes its backoff wait, which the breaker keeps
            // when it grants the retry, so that its opening ends the wait.
            if backoffWait == nil, admittedByBreaker { backoffWait = BackoffWait() }
            var question = Question(about: result, failingFor: reason, in: self)
            if !quiet.isEmpty || movedMidRound {
                question.request = question.request.after(round: quiet, movedMidRound: movedMidRound)
            }
            phase = .deciding(question)
            // A hedged round asked already: what came of its question is the retriers' answer, never asked again.
            if let answer { return handle(.retriersAnswered(answer), now: now) }
            // Where a part may have registered as the request's router (an endpoint group), it picks where the retry
            // goes before the retriers are asked.
            if plan.registered != nil { return .route(question.request) }
            return .askRetriers(question, limit: time.limits?.limit(of: .decision, now: now))
        }
    }

    /// What follows the retriers' answer about `question`: a retry after its delay, unless the deadline comes first
    /// or a gate refuses it, or the failure the request ends with.
    private mutating func decide(_ question: Question, after result: RetryResult, now: Duration) -> Action {
        let error = question.error
        guard let chosen = result.delay else {
            let ending: ReboundError =
                switch result {
                // Stopping with the very failure the retriers were asked about ends the request with it, unwrapped.
                case .doNotRetryWithError(let given as ReboundError) where given.isSame(as: error):
                    error.stopped(by: StopReason(failure: error.reason) ?? .notRetried)
                case .doNotRetryWithError(let abort): aborted(error, by: abort)
                case .doNotRetryBecause(let rule): error.stopped(by: rule)
                // A failure that is a part's refusal (an open breaker, a throttle in an adapter) ended by that rule.
                default: error.stopped(by: StopReason(failure: error.reason) ?? .notRetried)
                }
            return finish(.failed(ending), reporting: error.data, now: now)
        }
        // A retry waits, too, until the time the host it goes to asked for in the hedged round (a 503's `Retry-After`
        // on a hedge, which the retriers were not asked about last): no attempt reaches it before.
        let quiet =
            question.request.roundQuiet.isEmpty ? .zero : quietLeft(after: question, goingTo: result.request, now: now)
        let delay = Swift.max(chosen, quiet)
        // Retries and hedges together stay within the hedging settings' attempts, for a request that may be repeated,
        // judged as a retry sends it: as adapted, before any redirect.
        if let hedging = plan.hedging, attempts.count >= hedging.maximumAttempts,
            plan.mayBeRepeated(question.request.admittedRequest)
        {
            return finish(.failed(error.stopped(by: .retryLimit)), reporting: error.data, now: now)
        }
        // A stream in the request adapters start from was consumed by this attempt: a retry would send it empty or
        // half. (A stream an adapter sets is made anew for each attempt; one a retrier hands over is taken as fresh.)
        if result.request == nil, base.map({ $0.httpBodyStream != nil }) ?? plan.original.hasBodyStream {
            return finish(.failed(aborted(error, by: StreamBodyNotReplayable())), reporting: error.data, now: now)
        }
        // Backoff never sleeps past the deadline: a delay that would end after it ends the request now. So does a
        // server's `Retry-After` (on a 429 or 503) that ends after it, whatever delay the retriers chose: a retry
        // before the time the server asked for would meet the same answer, so one rule holds for every chain. A retry
        // to another request (a fallback host), or to another endpoint of a group, was not asked to wait by this
        // response. Without a deadline, no wait ends after it.
        if time.end != nil {
            let answered =
                result.request == nil && !question.request.leavesAnsweringHost
                ? error.responseHead.flatMap(plan.askedDelay(by:)) ?? .zero : .zero
            let asked = Swift.max(answered, quiet)
            if !time.allows(Swift.max(delay, asked), from: now) {
                let rule: StopReason = time.allows(asked, from: now) ? .deadline : .retryAfterPastDeadline
                return finish(.failed(deadlineExceeded(after: error, stoppedBy: rule)), reporting: error.data, now: now)
            }
        }
        phase = .admitting(question, delay: delay, target: result.request)
        // No gate to ask, nor any that could have registered: the retry is granted.
        guard plan.mayHaveGates else { return handle(.gatesAnswered(refusal: nil), now: now) }
        // The gates are told where a retry goes when it does not start from the caller's request (a fallback host), so
        // that a host's breaker decides only about retries to its host; and where the failed attempt started from,
        // unless a move mid-round leaves that unknown.
        let source = question.request.movedMidRound ? nil : nextBase
        let retry = (result.request ?? base).map { question.request.retrying(to: $0, from: source) } ?? question.request
        return .askGates(retry, dueTo: error, delay: delay)
    }

    /// How long, from `now`, a retry about `question` must still wait for the quiet its host asked for in the hedged
    /// round: the host of `target`, where a retrier moves the retry now, or else of the request a retrier moved it to
    /// mid-round, else of the endpoint a group sends it to, else of the failed attempt.
    private func quietLeft(after question: Question, goingTo target: URLRequest?, now: Duration) -> Duration {
        let goesTo =
            target ?? (question.request.movedMidRound ? base : nil) ?? question.request.destination
            ?? question.request.admittedRequest
        return question.request.roundQuiet.until(for: goesTo).map { Swift.max($0 - now, .zero) } ?? .zero
    }

    /// Ends the request with `ending`, once the last recorded attempt, whose body was `data`, is reported with it.
    private mutating func finish(_ ending: Ending, reporting data: Data?, now: Duration) -> Action {
        guard let number = attempts.last?.number else { preconditionFailure("a report follows a recorded attempt") }
        // A part keeps something for a request only once it granted it a retry.
        let endsAccounts: Bool = if case .succeeded = ending { attempts.count > 1 } else { true }
        phase = .finished
        let report = Report(attempt: number, data: data, elapsed: now - time.start)
        return .finish(ending, endsAccounts: endsAccounts, report: report)
    }

    /// Ends the request with `ending` (cancelled, or failed) with nothing left to report: its last attempt was reported
    /// before its backoff, or none was made.
    private mutating func finish(_ ending: Ending) -> Action {
        phase = .finished
        return .finish(ending, endsAccounts: true, report: nil)
    }

    /// What the observers are told of the request's end, `now`, with the refusals parts in shadow mode would have made
    /// (the last `untold` of them told with no attempt) and the endpoint a group sent the last attempt to.
    func outcome(
        of ending: Ending, now: Duration, shadowRefusals: [ShadowRefusal] = [], untold: Int = 0,
        lastEndpoint: EndpointGroup.Placement? = nil
    ) -> RequestOutcome {
        let (decision, error) = ending.decision
        return RequestOutcome(
            requestID: plan.requestID, label: plan.label, original: plan.original, attempts: attempts,
            elapsed: now - time.start, decision: decision, error: error, shadowRefusals: shadowRefusals,
            untoldShadowRefusals: untold, lastEndpoint: lastEndpoint)
    }

    // MARK: Errors

    /// The error a failed attempt ends the request with, when `reason` is why; `stop` is the rule that ends the
    /// request, `nil` for the error the retriers are asked about.
    func failure(
        _ reason: ReboundError.Reason, response: ResponseHead?, data: Data?, stoppedBy stop: StopReason? = nil
    ) -> ReboundError {
        ReboundError(
            reason: reason, original: plan.original, lastRequest: lastSentRequest, responseHead: response, data: data,
            attempts: attempts, stopReason: stop)
    }

    /// `error` with `abort` as the reason the request stops, and `error`'s reason as the original: stopped by the rule
    /// whose refusal `abort` is, or by a retrier's error.
    private func aborted(_ error: ReboundError, by abort: any Error) -> ReboundError {
        failure(
            .retryAborted(error: abort, original: error.reason), response: error.responseHead, data: error.data,
            stoppedBy: StopReason(refusal: abort) ?? .retrierError)
    }

    /// The deadline error after `error`, with its response and body; with none, after an attempt the deadline cut
    /// short.
    private func deadlineExceeded(after error: ReboundError? = nil, stoppedBy rule: StopReason = .deadline)
        -> ReboundError
    {
        failure(
            .deadlineExceeded(deadline: plan.deadline ?? .zero, last: error?.reason ?? Self.deadlineCutShort),
            response: error?.responseHead, data: error?.data, stoppedBy: rule)
    }
}
