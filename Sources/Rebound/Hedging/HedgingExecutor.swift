import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A hedged round: the attempts a request has in flight at once, in place of one attempt (see ``Hedging``), run for
/// the request's machine, whose records it adds to.
struct HedgingExecutor {
    /// The attempts of a round in flight, by number: which hedge each is and when it started.
    typealias InFlight = [Int: (hedge: Int, start: Duration)]

    /// What a round ends with: the result the request goes on with, recorded last, and the retriers' answer about it
    /// if the round asked them already.
    struct RoundResult {
        let result: AttemptResult
        let answer: RetryResult?
    }

    let plan: RequestPlan
    let hedging: Hedging

    /// Runs one hedged round and returns the result the request goes on with, recorded last: the winner, the
    /// failure that ended the round (with the retriers' answer if they were asked already), or what ended it
    /// (cancellation, the deadline). Every other attempt of the round is recorded, settled and told to the observers
    /// before it, a loser with ``AttemptDecision/cancelled``.
    ///
    /// The round starts its first attempt. When `delay` passes with no answer after the newest attempt handed its
    /// request to the transport, and at once after a failure the retriers would retry while others are in flight (once
    /// the newest attempt was handed over), it starts a hedge, if the settings, the request and the hedge gates allow.
    /// A success wins; a failure with a response that no retrier would retry ends the round; so does the last attempt
    /// in flight failing.
    func execute(from roundBase: URLRequest, in machine: inout RequestMachine) async -> RoundResult {
        let round = HedgeRound()
        let clock = plan.session.clock
        var inFlight: InFlight = [:]
        var hedges = 0
        // The newest attempt until it hands its request to the transport: no hedge starts before that.
        var unsent: Int? = start(roundBase, hedge: 0, in: round, inFlight: &inFlight, machine: machine)
        var newestSent: URLRequest?
        var stopped = false
        // The delay before the next hedge counts from when the newest attempt reached the transport: time it spent
        // waiting on the client (for a concurrency limiter's place, say) is not the server being slow.
        var due = hedging.delay == .zero
        while true {
            guard let event = await round.next() else {
                return await endRound(round, inFlight: inFlight, with: nil, in: &machine)
            }
            switch event {
            case .tick:
                due = true
            case .sent(let number, let request):
                if number == unsent {
                    unsent = nil
                    if !due { round.tick(after: hedging.delay, clock: clock) }
                }
                newestSent = request
            case .finished(let number, let result):
                guard let started = inFlight.removeValue(forKey: number) else { continue }
                if number == unsent { unsent = nil }
                machine.record(result, number: number, since: started.start, now: clock.now(), hedge: started.hedge)
                guard case .failure(let reason) = result.kind, !inFlight.isEmpty else {
                    // A success, cancellation, the deadline, or the last attempt in flight failing: the round is over.
                    return await endRound(round, inFlight: inFlight, with: result, in: &machine)
                }
                // Others are in flight: would the retriers retry this one?
                let answer: RetryResult? =
                    reason.isNonRetryable ? .doNotRetry : await askMidRound(about: result, in: &machine)
                guard let answer else {
                    // The deadline came, or the task was cancelled, while they decided: the machine finds out.
                    return await endRound(round, inFlight: inFlight, with: result, in: &machine)
                }
                if answer.delay == nil, result.response != nil {
                    // A response no retrier would retry is the answer: it ends them all.
                    return await endRound(round, inFlight: inFlight, with: result, answer: answer, in: &machine)
                }
                if let request = answer.request { machine.retarget(request) }
                // The request goes on at once with the attempts in flight, and the next hedge if it may start.
                await plan.tell(machine.report(of: result, decision: .retry(after: .zero), now: clock.now()))
                if answer.delay != nil { due = true }
            }
            guard due, unsent == nil, !stopped, let sent = newestSent,
                mayStartAnother(inFlight: inFlight, machine: machine)
            else { continue }
            let number = machine.attempts.count + inFlight.count + 1
            guard admitsHedge(sent, number: number, machine: machine) else {
                // Not a request to repeat, or a gate refused: no more hedges in this round.
                stopped = true
                continue
            }
            hedges += 1
            // The next delay counts from when this hedge is sent: a tick of the attempt before it no longer counts.
            round.cancelTick()
            unsent = start(machine.nextBase, hedge: hedges, in: round, inFlight: &inFlight, machine: machine)
            due = hedging.delay == .zero
        }
    }

    /// Starts the next attempt of the round in a task of its own and returns its number.
    func start(
        _ base: URLRequest, hedge: Int, in round: HedgeRound, inFlight: inout InFlight, machine: RequestMachine
    ) -> Int {
        let number = machine.attempts.count + inFlight.count + 1
        // The request's first attempt starts with the request.
        let attemptStart = number == 1 ? machine.time.start : plan.session.clock.now()
        inFlight[number] = (hedge, attemptStart)
        let plan = plan
        let limit = machine.time.attemptLimit(now: attemptStart)
        round.start(number) { onSend in await plan.attempt(base, number: number, within: limit, onSend: onSend) }
        return number
    }

    /// Whether the settings and the time left let the round start another attempt.
    func mayStartAnother(inFlight: InFlight, machine: RequestMachine) -> Bool {
        guard inFlight.count < hedging.maximumInFlight,
            machine.attempts.count + inFlight.count < hedging.maximumAttempts, !Task.isCancelled
        else { return false }
        return machine.time.hasTimeLeft(now: plan.session.clock.now())
    }

    /// Whether attempt `number` may start as a hedge of `sent`, the newest request of the round: a request that may
    /// be repeated, let through by every hedge gate registered (a throttle, a breaker, a budget), in order.
    func admitsHedge(_ sent: URLRequest, number: Int, machine: RequestMachine) -> Bool {
        guard machine.mayBeRepeated(sent) else { return false }
        guard let roles = plan.registered else { return true }
        for gate in roles.hedgeGates {
            if gate.admitHedge(sent, of: plan.requestID, attempt: number, roles: roles) != nil { return false }
        }
        return true
    }

    /// Asks the retriers about a failed attempt of a round while others are in flight (recorded already); `nil` when
    /// the deadline came or the task was cancelled first.
    func askMidRound(about failed: AttemptResult, in machine: inout RequestMachine) async -> RetryResult? {
        let question = machine.question(about: failed, admittedByBreaker: plan.admittedByBreaker)
        let limit = machine.time.remaining(now: plan.session.clock.now())
        guard case .answered(let answer) = await plan.retryResult(for: question, within: limit) else { return nil }
        return answer
    }

    /// Ends a round: cancels what is in flight, records each such attempt as cancelled, settles it and tells the
    /// observers, then returns `result` (with the retriers' `answer` about it, if any), recorded after them. With no
    /// result (the task was cancelled), the newest attempt in flight is the one the request goes on with, recorded
    /// last.
    func endRound(
        _ round: HedgeRound, inFlight: InFlight, with result: AttemptResult?, answer: RetryResult? = nil,
        in machine: inout RequestMachine
    ) async -> RoundResult {
        round.end()
        let clock = plan.session.clock
        let cancelled = inFlight.sorted { $0.key < $1.key }.map { number, started in
            (number, started, AttemptResult(.cancelled, sent: round.sentRequest(number)))
        }
        // With a result, it was recorded last and stays last; without one, the newest attempt is the machine's to
        // settle and report.
        let deciding = result == nil ? nil : machine.setAsideLastAttempt()
        for (number, started, loser) in cancelled.dropLast(result == nil ? 1 : 0) {
            machine.record(loser, number: number, since: started.start, now: clock.now(), hedge: started.hedge)
            await plan.tell(machine.report(of: loser, decision: .cancelled, now: clock.now()))
        }
        if let result {
            if let deciding { machine.putBack(deciding) }
            return RoundResult(result: result, answer: answer)
        }
        guard let (number, started, newest) = cancelled.last else {
            return RoundResult(result: .cancelledBeforeSending, answer: nil)
        }
        machine.record(newest, number: number, since: started.start, now: clock.now(), hedge: started.hedge)
        return RoundResult(result: newest, answer: nil)
    }
}
