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
    /// the newest attempt was handed over), it starts a hedge, if the settings, the request and the hedge gates allow,
    /// and not before the time a failure's `Retry-After` asked for (or its `retry-after-ms`, or never again after its
    /// `x-should-retry: false`, where the chain's retry policies read them). A success wins; a failure with a response that no
    /// retrier would retry ends the round; so does the last attempt in flight failing.
    ///
    /// The retriers are asked about a failure while others are in flight in a task of their own: the round goes on
    /// meanwhile, so a slow retrier (a token refresh, the offline retrier's wait) never holds back an answer that
    /// came. A failure whose question the round no longer needs (another attempt won, or the round ended otherwise)
    /// is told to the observers as a loser, with ``AttemptDecision/cancelled``.
    func execute(from roundBase: URLRequest, in machine: inout RequestMachine) async -> RoundResult {
        // A learned delay is the host's, and its learner hears how long the round took to answer. A request that may not
        // be repeated is never hedged, and neither counts for the host nor teaches it anything.
        guard let learner = hedging.learner else {
            return await run(HedgeRound(), from: roundBase, delay: hedging.delay, learning: nil, in: &machine)
        }
        guard machine.mayBeRepeated(roundBase), let key = learner.key(for: plan.originalRequest) else {
            return await run(HedgeRound(), from: roundBase, delay: nil, learning: nil, in: &machine)
        }
        let round = HedgeRound()
        let first = machine.attempts.count + 1
        // A request counts once, at its first round: its retries' rounds add no share of a hedge.
        let delay = learner.startRound(for: key, counts: first == 1)
        let result = await run(round, from: roundBase, delay: delay, learning: (learner, key), in: &machine)
        // A round won by an answer teaches how long the host took to give it: from the round's first attempt reaching
        // the transport to the winner's end, whichever attempt won.
        if case .success = result.result.kind, let winner = machine.attempts.last,
            let winnerSent = round.handoff(of: winner.number)?.at, let onWire = winner.timeOnWire,
            let firstSent = round.handoff(of: first)?.at
        {
            learner.learn(winnerSent + onWire - firstSent, for: key)
        }
        return result
    }

    /// Runs the round: hedges after `delay`, and none when it is `nil` (a learner with too few answers); a learner in
    /// `learning` caps the hedges of its host.
    private func run(
        _ round: HedgeRound, from roundBase: URLRequest, delay: Duration?,
        learning: (learner: HedgingDelayLearner, key: String)?, in machine: inout RequestMachine
    ) async -> RoundResult {
        let clock = plan.session.clock
        var inFlight: InFlight = [:]
        /// The failures the retriers are asked about, by number, until they answer.
        var asking: [Int: AttemptResult] = [:]
        var hedges = 0
        // The newest attempt until it hands its request to the transport: no hedge starts before that.
        var unsent: Int? = start(roundBase, hedge: 0, in: round, inFlight: &inFlight, for: machine)
        var newestSent: URLRequest?
        // No delay yet: no hedge in this round.
        var stopped = delay == nil
        let delay = delay ?? .zero
        // The delay before the next hedge counts from when the newest attempt reached the transport: time it spent
        // waiting on the client (for a concurrency limiter's place, say) is not the server being slow.
        var due = delay == .zero
        // No hedge starts before the time a failure asked for, as the chain's retry policies read it.
        var quietUntil: Duration?
        while true {
            guard let event = await round.next() else {
                return await endRound(round, inFlight: inFlight, asking: asking, with: nil, in: &machine)
            }
            switch event {
            case .tick:
                due = true
            case .sent(let number, let handoff):
                if number == unsent {
                    unsent = nil
                    if !due { round.tick(after: delay, clock: clock) }
                }
                newestSent = handoff.request
            case .finished(let number, let result):
                guard let started = inFlight.removeValue(forKey: number) else { continue }
                if number == unsent { unsent = nil }
                let now = clock.now()
                machine.record(result, number: number, since: started.start, now: now, hedge: started.hedge)
                guard case .failure(let reason) = result.kind, !inFlight.isEmpty else {
                    // A success, cancellation, the deadline, or the last attempt in flight failing: the round is over.
                    return await endRound(
                        round, inFlight: inFlight, asking: asking, with: (number, result), in: &machine)
                }
                if let head = result.response {
                    if let asked = plan.askedDelay(by: head), asked > .zero {
                        quietUntil = Swift.max(quietUntil ?? now, now + asked)
                    }
                    // The server asked for no retry: no new hedge either.
                    if plan.asksNoRetry(head) { stopped = true }
                }
                // Others are in flight: would the retriers retry this one? Asked in a task of their own.
                asking[number] = result
                if reason.isNonRetryable {
                    round.post(.answered(number: number, answer: .answered(.doNotRetry)))
                } else {
                    // Asked mid-round, with no backoff to follow: the machine makes the backoff wait when the round
                    // ends.
                    let question = RequestMachine.Question(about: result, failingFor: reason, in: machine)
                    let limit = machine.time.limits?.limit(of: .decision, now: now)
                    let plan = plan
                    round.ask(number) {
                        guard let limit else { return await plan.retryResult(for: question) }
                        return await plan.retryResult(for: question, within: limit)
                    }
                }
            case .answered(let number, let answer):
                guard let failed = asking.removeValue(forKey: number) else { continue }
                guard case .answered(let answer) = answer else {
                    // The deadline came, or the task was cancelled, while they decided: the machine finds out.
                    return await endRound(
                        round, inFlight: inFlight, asking: asking, with: (number, failed), in: &machine)
                }
                if answer.delay == nil, failed.response != nil {
                    // A response no retrier would retry is the answer: it ends them all.
                    return await endRound(
                        round, inFlight: inFlight, asking: asking, with: (number, failed), answer: answer,
                        in: &machine)
                }
                if let request = answer.request { machine.retarget(request) }
                // The request goes on at once with the attempts in flight, and the next hedge if it may start.
                await tell(attempt: number, data: failed.data, decision: .retry(after: .zero), in: machine)
                if answer.delay != nil { due = true }
            }
            // A hedge may start once its delay passed and the newest attempt was sent, while the settings and the
            // time left allow another attempt.
            guard due, unsent == nil, !stopped, let sent = newestSent, inFlight.count < hedging.maximumInFlight,
                machine.attempts.count + inFlight.count < hedging.maximumAttempts, !Task.isCancelled,
                machine.time.hasTimeLeft(now: clock.now())
            else { continue }
            if let quietUntil, case let now = clock.now(), now < quietUntil {
                // Asked to wait: the next hedge may start once the time asked for has passed.
                round.tick(after: quietUntil - now, clock: clock)
                due = false
                continue
            }
            // A learner's cap on the host's hedges comes first: a hedge it refuses spends nothing of a budget.
            if let learning, !learning.learner.admitsHedge(for: learning.key) {
                stopped = true
                continue
            }
            let number = machine.attempts.count + inFlight.count + 1
            guard admitsHedge(sent, number: number, for: machine) else {
                // The hedge does not start: the learner has it back.
                if let learning { learning.learner.hedgeNotStarted(for: learning.key) }
                // Not a request to repeat, or a gate refused: no more hedges in this round.
                stopped = true
                continue
            }
            hedges += 1
            // The next delay counts from when this hedge is sent: a tick of the attempt before it no longer counts.
            round.cancelTick()
            unsent = start(machine.nextBase, hedge: hedges, in: round, inFlight: &inFlight, for: machine)
            due = delay == .zero
        }
    }

    /// Starts the next attempt of the round in a task of its own and returns its number.
    func start(
        _ base: URLRequest, hedge: Int, in round: HedgeRound, inFlight: inout InFlight, for machine: RequestMachine
    ) -> Int {
        let number = machine.attempts.count + inFlight.count + 1
        // The request's first attempt starts with the request.
        let attemptStart = number == 1 ? machine.time.start : plan.session.clock.now()
        inFlight[number] = (hedge, attemptStart)
        let plan = plan
        let limit = machine.time.limits?.limit(of: .attempt, now: attemptStart)
        round.start(number) { onSend in
            guard let limit else { return await plan.attempt(base, number: number, onSend: onSend) }
            return await plan.attempt(base, number: number, within: limit, onSend: onSend)
        }
        return number
    }

    /// Whether attempt `number` may start as a hedge of `sent`, the newest request of the round: a request that may
    /// be repeated, let through by every hedge gate registered (a throttle, a breaker, a budget), in order.
    func admitsHedge(_ sent: URLRequest, number: Int, for machine: RequestMachine) -> Bool {
        guard machine.mayBeRepeated(sent) else { return false }
        guard let roles = plan.registered else { return true }
        // A hedge an endpoint group sends to another endpoint is judged as going there (a per-host gate by the
        // endpoint's host).
        let hedge = roles.router?.destination(ofHedge: sent, number: number, of: plan.requestID) ?? sent
        for gate in roles.hedgeGates {
            guard gate.admitHedge(hedge, of: plan.requestID, attempt: number, roles: roles) != nil else { continue }
            // The hedge never starts, and the next attempt takes its number: what a part in shadow mode hid of it goes,
            // and so does the endpoint a group picked for it.
            roles.hedgeRefused(number)
            roles.router?.hedgeRefused(number, of: plan.requestID)
            return false
        }
        roles.startsHedge(number)
        return true
    }

    /// Has the parts settle recorded attempt `number` of the round and tells the observers, with `decision`: a loser's
    /// (``AttemptDecision/cancelled``), or a retry without delay for a failure while others are in flight.
    func tell(attempt number: Int, data: Data?, decision: AttemptDecision, in machine: RequestMachine) async {
        let now = plan.session.clock.now()
        let report = RequestMachine.Report(attempt: number, data: data, elapsed: now - machine.time.start)
        if let outcome = plan.settle(report, decision: decision, of: machine.attempts) { await plan.tell(outcome) }
    }

    /// Ends a round: cancels what is in flight and the questions still unanswered, records each attempt in flight as
    /// cancelled, settles it and tells the observers (a failure whose question is unanswered too, as a loser), then
    /// returns the `ending` attempt's result (with the retriers' `answer` about it, if any), recorded after them. With
    /// no ending (the task was cancelled), the newest attempt in flight is the one the request goes on with, recorded
    /// last.
    func endRound(
        _ round: HedgeRound, inFlight: InFlight, asking: [Int: AttemptResult],
        with ending: (number: Int, result: AttemptResult)?, answer: RetryResult? = nil,
        in machine: inout RequestMachine
    ) async -> RoundResult {
        round.end()
        let clock = plan.session.clock
        let cancelled = inFlight.sorted { $0.key < $1.key }.map { number, started in
            let handoff = round.handoff(of: number)
            return (number, started, AttemptResult(.cancelled, sent: handoff?.request, sentAt: handoff?.at))
        }
        // The attempt that ends the round goes after the others, once they are recorded; without one, the newest
        // attempt is the machine's to settle and report.
        for (number, failed) in asking.sorted(by: { $0.key < $1.key }) {
            await tell(attempt: number, data: failed.data, decision: .cancelled, in: machine)
        }
        for (number, started, loser) in cancelled.dropLast(ending == nil ? 1 : 0) {
            machine.record(loser, number: number, since: started.start, now: clock.now(), hedge: started.hedge)
            await tell(attempt: number, data: nil, decision: .cancelled, in: machine)
        }
        if let ending {
            machine.moveLast(attempt: ending.number)
            return RoundResult(result: ending.result, answer: answer)
        }
        guard let (number, started, newest) = cancelled.last else {
            return RoundResult(result: .cancelledBeforeSending, answer: nil)
        }
        machine.record(newest, number: number, since: started.start, now: clock.now(), hedge: started.hedge)
        return RoundResult(result: newest, answer: nil)
    }
}
