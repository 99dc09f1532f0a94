import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// MARK: - The driver of a request's life

// The request's life, top to bottom: the machine (`RequestMachine`) decides, the driver below performs. It and the
// hedging executor (`HedgingExecutor`) are the only code of a request that awaits.
extension RequestPlan {
    /// Runs the request to its end, starting with `first` (the session's unshared copy of the caller's request, for the
    /// first attempt's adapters to change in place, or the caller's): performs each action the machine returns and
    /// feeds back what came of it, until the machine ends the request.
    ///
    /// - Returns: The response of the first attempt that passed validation.
    /// - Throws: The ``ReboundError`` the request ends with, or `CancellationError`.
    func execute(startingWith first: consuming URLRequest) async throws -> Response {
        let clock = session.clock
        var machine = RequestMachine(self, now: clock.now())
        var action = machine.handle(.start(first: consume first), now: machine.time.start)
        while true {
            let event: RequestMachine.Event
            // Consumed, so that the request an attempt starts from is the adapters' alone to change in place.
            switch consume action {
            case .attempt(let request, let number, let limit):
                if Task.isCancelled {
                    event = .cancelled
                } else if let limit {
                    event = .attemptEnded(
                        await attempt(consume request, number: number, within: limit),
                        admittedByBreaker: admittedByBreaker)
                } else {
                    event = .attemptEnded(
                        await attempt(consume request, number: number), admittedByBreaker: admittedByBreaker)
                }
            case .hedgedRound(let start):
                if Task.isCancelled {
                    event = .cancelled
                } else {
                    let round = await HedgingExecutor(plan: self, atStart: start).execute()
                    event = .roundEnded(round, admittedByBreaker: admittedByBreaker)
                }
            case .route(let retry):
                // The endpoint the group picks, which the retry's attempt then takes if it is still in rotation.
                event = .routed(destination: registered?.router?.destination(ofRetry: retry))
            case .askRetriers(let question, let limit?):
                event = .retriersAnswered(await retryResult(for: question, within: limit))
            case .askRetriers(let question, nil):
                event = .retriersAnswered(await retryResult(for: question))
            case .askGates(let retry, let error, let delay):
                // No gate registered after all: the retry is granted.
                event = .gatesAnswered(refusal: hasGates ? refusal(of: retry, dueTo: error, after: delay) : nil)
            case .backOff(let delay, let wait, let report):
                if let outcome = settle(report, decision: .retry(after: delay), of: machine.attempts) {
                    await tell(outcome)
                }
                event = .backoffEnded(await backOff(for: delay, wait: wait))
            case .finish(let ending, let endsAccounts, let report):
                return try await finish(ending, endsAccounts: endsAccounts, after: report, of: &machine)
            }
            action = machine.handle(event, now: clock.now())
        }
    }

    /// Ends the request with `ending`: marks it ended (every attempt settled, its last one too when `report` says,
    /// which the parts then settle and the observers hear), stops its deadline timer, tells the observers how the
    /// request ended, has the parts forget what they keep for the request when `endsAccounts`, then returns the
    /// response or throws.
    func finish(
        _ ending: RequestMachine.Ending, endsAccounts: Bool, after report: RequestMachine.Report?,
        of machine: inout RequestMachine
    ) async throws -> Response {
        // Ended before anyone hears of it: a part that would count an attempt of the request late no longer does.
        let (decision, error) = ending.decision
        if let outcome = settle(report, decision: decision, error: error, of: machine.attempts, endsRequest: true) {
            await tell(outcome)
        }
        deadlineTimer?.stop()
        let ended = ledger?.ended
        if listsObservers || ended?.hasObservers == true {
            await tell(
                machine.outcome(
                    of: ending, now: session.clock.now(),
                    shadowRefusals: ended.map { $0.shadowRefusals.map { $0.with(label: label) } } ?? [],
                    untold: ended?.untold ?? 0,
                    lastEndpoint: machine.attempts.last.flatMap { registered?.placement(of: $0) }))
        }
        // Then the parts forget what they keep for the request.
        if endsAccounts, let ended { for part in ended.accountants { part.requestEnded(requestID) } }
        switch ending {
        case .succeeded(let result):
            guard let sent = result.sent, let head = result.response else {
                preconditionFailure("a successful attempt has a request and a response")
            }
            // With the record of every attempt.
            return Response(
                data: result.data ?? Data(), head: head, request: sent, original: original, attempts: machine.attempts)
        case .failed(let error): throw error
        case .cancelled: throw CancellationError()
        }
    }

    /// Whether a breaker let an attempt of the request through so far.
    var admittedByBreaker: Bool { ledger?.admittedByBreaker == true }

    // MARK: Asking the retriers and the gates

    /// Asks the retriers about a failed attempt within `limit`, the time left before the deadline
    /// (``RequestTime/Limits/limit(of:now:)``: the request's deadline timer cuts the question when it comes), even a
    /// retrier that ignores cancellation.
    @inline(never)
    func retryResult(for question: RequestMachine.Question, within limit: TimeLimit) async
        -> RequestMachine.RetriersAnswer
    {
        switch await within(limit, { await self.retryResult(for: question) }) {
        case .finished(let answer): Task.isCancelled ? .cancelled : answer
        case .limitReached: Task.isCancelled ? .cancelled : .tooLate
        case .cancelled: .cancelled
        }
    }

    /// Asks the retriers registered through the context, then the session's, then the request's, about a failed
    /// attempt; the first answer that does not pass on (``RetryResult/passesOn``) wins, and when all pass on, the first
    /// reason given (``RetryResult/then(_:)``). A retrier may take its time: a request cancelled meanwhile ends as
    /// cancelled, whatever it answered.
    func retryResult(for question: RequestMachine.Question) async -> RequestMachine.RetriersAnswer {
        let (request, error) = (question.request, question.error)
        var declined = RetryResult.doNotRetry
        for retrier in registered?.retriers ?? [] {
            let answer = await retrier.retry(request, dueTo: error)
            guard answer.passesOn else { return Task.isCancelled ? .cancelled : .answered(answer) }
            declined = declined.then(answer)
        }
        for retrier in chain?.retriers ?? [] {
            let answer = await retrier.retry(request, dueTo: error)
            guard answer.passesOn else { return Task.isCancelled ? .cancelled : .answered(answer) }
            declined = declined.then(answer)
        }
        return Task.isCancelled ? .cancelled : .answered(declined)
    }

    /// The first refusal of `retry` by the gates: the session's and the request's, then those that registered.
    func refusal(of retry: RetryRequest, dueTo error: ReboundError, after delay: Duration) -> (any Error)? {
        // A retry an endpoint group sends to another endpoint is judged as going there (a per-host part by the
        // endpoint's host), as a retry a retrier moved to another request is; a retrier's target wins, and is judged
        // as the host it names: the group, not the host the failed attempt went to, picks where it goes.
        var retry = retry
        if let router = registered?.router,
            let target = retry.retryTarget ?? retry.destination ?? router.destination(ofRetry: retry)
        {
            retry = retry.retrying(to: target)
        }
        for gate in roles.gates + registeredGates {
            if let denial = gate.admitRetry(retry, dueTo: error, after: delay) { return denial }
        }
        return nil
    }

    // MARK: The backoff before a retry

    /// Sleeps the backoff before a retry on the session's clock; a breaker that granted the retry ends `wait` if it
    /// opens meanwhile.
    @inline(never)
    func backOff(for delay: Duration, wait: BackoffWait?) async -> BackoffWait.Ending {
        // No delay, no sleep: the next attempt follows at once.
        guard delay > .zero else { return .slept }
        if let wait { return await wait.sleep(for: delay, on: session.clock) }
        do {
            try await session.clock.sleep(delay)
            return .slept
        } catch {
            // Clocks throw from `sleep` only when the sleeping task is cancelled.
            return .cancelled
        }
    }

    // MARK: What the parts and the observers are told

    /// Marks the reported attempt, one of `attempts`, settled (and the request ended, when `endsRequest`), has the
    /// parts that let it through settle it (``AttemptAccountant``), at once and in order, and returns what the
    /// observers are to be told of it, with `decision` and, when it is ``AttemptDecision/failed``, the `error` the
    /// request ends with; `nil` when no observer is to be told, or nothing is reported.
    func settle(
        _ report: consuming RequestMachine.Report?, decision: AttemptDecision, error: ReboundError? = nil,
        of attempts: some BidirectionalCollection<Attempt>, endsRequest: Bool = false
    ) -> AttemptOutcome? {
        // A request keeps a ledger exactly when it keeps registrations (`registered`).
        let settlement = ledger.map { $0.settling(attempt: report?.attempt, endsRequest: endsRequest) } ?? .nobody
        // Nothing reported, or no part or observer to tell: the attempt's record is not read.
        guard let report, !settlement.accountants.isEmpty || settlement.hasObservers || listsObservers else {
            return nil
        }
        guard let attempt = attempts.last(where: { $0.number == report.attempt }) else {
            preconditionFailure("attempt \(report.attempt) is reported before it is recorded")
        }
        /// The outcome, with the refusals of parts in shadow mode not told yet, and the endpoint a group sent the
        /// attempt to.
        func outcome(_ shadowRefusals: ArraySlice<ShadowRefusal>) -> AttemptOutcome {
            AttemptOutcome(
                requestID: requestID, label: label, original: original, attempt: attempt, data: report.data,
                elapsed: report.elapsed, decision: decision, error: error,
                shadowRefusals: shadowRefusals.isEmpty ? [] : shadowRefusals.map { $0.with(label: label) },
                endpoint: registered?.placement(of: attempt))
        }
        // The outcome, built once, for the first part that reads it (a breaker with a `classify` of its own) and the
        // observers.
        var built: AttemptOutcome?
        if let ledger {
            for part in settlement.accountants {
                part.settle(attempt, of: requestID, ledger: ledger) {
                    if let built { return built }
                    let made = outcome(settlement.untold)
                    built = made
                    return made
                }
            }
        }
        guard listsObservers || settlement.hasObservers else { return nil }
        return built ?? outcome(settlement.untold)
    }

    /// Tells the observers how an attempt ended.
    func tell(_ outcome: AttemptOutcome) async {
        await forEachObserver { await $0.attemptDidFinish(outcome) }
    }

    /// Tells the observers how the request ended.
    func tell(_ outcome: RequestOutcome) async {
        await forEachObserver { await $0.requestDidFinish(outcome) }
    }

    /// Tells the observers about a redirect an attempt follows.
    func tell(_ hop: RedirectHop) async {
        await forEachObserver { await $0.attemptWasRedirected(hop) }
    }

    /// Calls `body` with each observer, in the order they are told: the session's and the request's, then those that
    /// registered so far.
    func forEachObserver(_ body: (any AttemptObserver) async -> Void) async {
        let registered = registeredObservers
        for observer in roles.observers {
            await body(observer)
        }
        for registration in registered {
            guard case .observer(let observer) = registration.entry else { continue }
            await body(observer)
        }
    }
}

// MARK: - The request's time

/// When a request started and, if it has time limits, when it must end (on the session's clock: the end its
/// ``DeadlineTimer`` keeps, the one record of the deadline) and how long one attempt may take, with the one rule for
/// how long each awaited step of it may take.
///
/// Every step the request awaits (an attempt, the retriers' decision) is given the time left, and a backoff that would
/// end after the deadline is not slept: the request ends at its deadline even when awaited work ignores cancellation.
struct RequestTime: Sendable {
    /// When the request started.
    let start: Duration
    /// The request's time limits; `nil` when it has neither a deadline nor an attempt timeout, so no step it awaits
    /// has a limit.
    let limits: Limits?

    /// The time of a request that started at `start` and must end by `end` (`nil` for no deadline), each attempt
    /// within `attemptTimeout` (`nil` for no limit but the deadline).
    init(start: Duration, end: Duration?, attemptTimeout: Duration?) {
        self.start = start
        self.limits = end == nil && attemptTimeout == nil ? nil : Limits(end: end, attemptTimeout: attemptTimeout)
    }

    /// When the request must end; `nil` without a deadline.
    var end: Duration? { limits?.end }

    /// A step of the request that is awaited under a time limit.
    enum Step {
        /// An attempt (or a hedged round's attempt).
        case attempt
        /// The retriers' decision about a failed attempt.
        case decision
    }

    /// A request's time limits: at least one of a deadline and an attempt timeout.
    struct Limits: Sendable {
        /// When the request must end; `nil` without a deadline.
        let end: Duration?
        /// How long one attempt may take at most; `nil` for no limit but the deadline.
        let attemptTimeout: Duration?

        /// How long `step`, which starts `now`, may take: the time left before the deadline, or for an attempt its
        /// timeout when that comes first; `nil` for no limit. The one rule for every awaited step of the request.
        func limit(of step: Step, now: Duration) -> TimeLimit? {
            let remaining = end.map { $0 - now }
            if step == .attempt, let attemptTimeout, remaining.map({ attemptTimeout < $0 }) ?? true {
                return .attemptTimeout(attemptTimeout)
            }
            return remaining.map(TimeLimit.deadline)
        }
    }

    /// Whether a wait of `delay` from `now` ends by the deadline.
    func allows(_ delay: Duration, from now: Duration) -> Bool {
        end.map { now + delay <= $0 } ?? true
    }
}

/// A time limit on one awaited step of a request, and which limit it is.
enum TimeLimit: Sendable, Equatable {
    /// The time left before the request's deadline.
    case deadline(Duration)
    /// The attempt timeout, which comes before the deadline.
    case attemptTimeout(Duration)

    var duration: Duration {
        switch self {
        case .deadline(let duration), .attemptTimeout(let duration): duration
        }
    }
}
