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
        var action = machine.start(from: first)
        while true {
            switch action {
            case .attempt(let request, let number, let limit):
                if Task.isCancelled {
                    action = machine.cancelled(now: clock.now())
                    continue
                }
                let result = await attempt(request, number: number, within: limit)
                action = machine.attemptEnded(result, now: clock.now(), admittedByBreaker: admittedByBreaker)
            case .hedgedRound(let request, let hedging):
                if Task.isCancelled {
                    action = machine.cancelled(now: clock.now())
                    continue
                }
                let round = await HedgingExecutor(plan: self, hedging: hedging).execute(from: request, in: &machine)
                action = machine.roundEnded(
                    round.result, answer: round.answer, now: clock.now(), admittedByBreaker: admittedByBreaker)
            case .askRetriers(let question, let limit):
                let answer = await retryResult(for: question, within: limit)
                action = machine.retriersAnswered(answer, now: clock.now())
            case .askGates(let retry, let error, let delay):
                action = machine.gatesAnswered(refusal(of: retry, dueTo: error, after: delay), now: clock.now())
            case .report(let report):
                await tell(report)
                action = machine.reported(now: clock.now())
            case .backOff(let delay, let wait):
                let ending = await backOff(for: delay, wait: wait)
                action = machine.backoffEnded(ending, now: clock.now())
            case .finish(let ending, let endsAccounts):
                if hasObservers { await tell(machine.outcome(of: ending, now: clock.now())) }
                if endsAccounts { endAccounts() }
                switch ending {
                case .succeeded(let response): return response
                case .failed(let error): throw error
                case .cancelled: throw CancellationError()
                }
            }
        }
    }

    /// Whether a breaker let an attempt of the request through so far.
    var admittedByBreaker: Bool { registered?.admittedByBreaker == true }

    // MARK: Asking the retriers and the gates

    /// Asks the retriers about a failed attempt within `limit` (the time left before the deadline, if any), even a
    /// retrier that ignores cancellation.
    func retryResult(for question: RequestMachine.Question, within limit: Duration?) async
        -> RequestMachine.RetriersAnswer
    {
        let (request, error) = (question.request, question.error)
        let answer: RetryResult?
        if let limit {
            switch await within(limit, { await self.retryResult(for: request, dueTo: error) }) {
            case .finished(let result): answer = result
            case .limitReached, .cancelled: answer = nil
            }
        } else {
            answer = await retryResult(for: request, dueTo: error)
        }
        // A retrier may take its time; a request cancelled meanwhile ends as cancelled, whatever it answered.
        if Task.isCancelled { return .cancelled }
        return answer.map { .answered($0) } ?? .tooLate
    }

    /// Asks the retriers registered through the context, then the session's, then the request's; the first answer
    /// other than `doNotRetry` wins.
    func retryResult(for request: RetryRequest, dueTo error: ReboundError) async -> RetryResult {
        for retrier in registered?.retriers ?? [] {
            let result = await retrier.retry(request, dueTo: error)
            if case .doNotRetry = result { continue }
            return result
        }
        return await chain?.retry(request, dueTo: error) ?? .doNotRetry
    }

    /// The first refusal of `retry` by the gates: the session's and the request's, then those that registered.
    func refusal(of retry: RetryRequest, dueTo error: ReboundError, after delay: Duration) -> (any Error)? {
        for gate in roles.gates + registeredGates {
            if let denial = gate.admitRetry(retry, dueTo: error, after: delay) { return denial }
        }
        return nil
    }

    // MARK: The backoff before a retry

    /// Sleeps the backoff before a retry on the session's clock; a breaker that granted the retry ends `wait` if it
    /// opens meanwhile.
    func backOff(for delay: Duration, wait: BackoffWait?) async -> BackoffWait.Ending {
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

    /// Has the parts that let the reported attempt through settle it (``AttemptAccountant``), at once and in order,
    /// then tells the observers.
    func tell(_ report: RequestMachine.Report) async {
        var outcome: AttemptOutcome?
        // Built once, and only for a part or an observer that reads it.
        func built() -> AttemptOutcome {
            if let outcome { return outcome }
            let made = report.outcome(in: self)
            outcome = made
            return made
        }
        var observed = listsObservers
        if let registered {
            let (accountants, hasObservers) = registered.accountantsAndObservers
            for part in accountants {
                part.settle(report.attempt, of: requestID, roles: registered, outcome: built)
            }
            observed = observed || hasObservers
        }
        guard observed else { return }
        let told = built()
        await forEachObserver { await $0.attemptDidFinish(told) }
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

    /// Whether any observer is to be told: one the session or the request was given, or one that registered so far.
    var hasObservers: Bool {
        listsObservers || registered?.hasObservers == true
    }

    /// Tells the parts that settle their attempts that the request ended.
    func endAccounts() {
        guard let accountants = registered?.accountantsAndObservers.accountants, !accountants.isEmpty else {
            return
        }
        for part in accountants { part.requestEnded(requestID) }
    }
}
