import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A hedged round: the attempts a request has in flight at once, in place of one attempt (see ``Hedging``), run for
/// the request's machine, of which it reads what the action that starts it holds (``RequestMachine/RoundStart``) and
/// which it never changes: the round returns its attempts, winner and losers, for the machine to record.
///
/// Each attempt in flight, each question to the retriers about a failure while others are in flight, and the hedging
/// timer runs in a task of its own, which reports to the round's loop through one stream; the loop reads the reports
/// in the order they came and alone keeps the round's state (``HedgeRound``).
struct HedgingExecutor {
    /// What a round ends with: its attempts, in the order it recorded them (failures while others were in flight as
    /// each ended, then the losers, then the one the request goes on with), that last one's result, how the retriers'
    /// question about it ended if the round asked them already (their answer, or the deadline or cancellation that
    /// cut it), the request a retrier moved the request to meanwhile, if any, and the times before which the hosts that
    /// answered its failures asked that no attempt reach them, if they did.
    final class RoundResult {
        let records: [RequestMachine.Recorded]
        let result: AttemptResult
        let answer: RequestMachine.RetriersAnswer?
        let target: URLRequest?
        let quiet: HostQuiet

        init(
            records: [RequestMachine.Recorded], result: AttemptResult, answer: RequestMachine.RetriersAnswer?,
            target: URLRequest?, quiet: HostQuiet
        ) {
            self.records = records
            self.result = result
            self.answer = answer
            self.target = target
            self.quiet = quiet
        }
    }

    let plan: RequestPlan
    /// What the round reads of the request as it starts: the request it starts from, the settings, the attempts
    /// recorded before it, the request's time, the request its hedges start from, and what its questions to the
    /// retriers carry besides (the last request a failed attempt sent, the backoff wait).
    let atStart: RequestMachine.RoundStart

    /// The hedging settings of the round.
    var hedging: Hedging { atStart.hedging }

    /// Runs one hedged round and returns its attempts and the result the request goes on with, recorded last: the
    /// winner, the failure that ended the round (with the retriers' answer if they were asked already), or what ended
    /// it (cancellation, the deadline). Every other attempt of the round is recorded before it, and settled and told to
    /// the observers as a loser, with ``AttemptDecision/cancelled``, before the round returns.
    ///
    /// The round starts its first attempt. When `delay` passes with no answer after the newest attempt handed its
    /// request to the transport, and at once after a failure the retriers would retry while others are in flight (once
    /// the newest attempt was handed over), it starts a hedge, if the settings, the request and the hedge gates allow,
    /// and not before the time a failure's `Retry-After` asked for (or its `retry-after-ms`, or never again after its
    /// `x-should-retry: false`, where the chain's retry policies read them). A success wins; a failure with a response
    /// that no retrier would retry ends the round; so does the last attempt in flight failing, unless it is a hedge
    /// that never left (a part refused it before it was sent): the round then waits for the questions still open and
    /// ends as though the hedge had not started, with the newest failure it sent and the retriers' answer about it. A
    /// failure the retriers decline for the attempts the request made (a retry limit, a repeated failure), or decline
    /// with no response (a part refused the attempt before it was sent, a lost connection they do not retry), starts no
    /// new hedge, and the attempts in flight go on.
    ///
    /// The retriers are asked about a failure while others are in flight in a task of their own: the round goes on
    /// meanwhile, so a slow retrier (a token refresh, the offline retrier's wait) never holds back an answer that
    /// came. A failure whose question the round no longer needs (another attempt won, or the round ended otherwise)
    /// is told to the observers as a loser, with ``AttemptDecision/cancelled``.
    func execute() async -> RoundResult {
        let roundBase = atStart.request
        let clock = plan.session.clock
        // A learned delay is the host's, and its learner hears how long the round took to answer; a learner with too
        // few answers gives none, and the round sends no hedge. A request that may not be repeated is never hedged,
        // and neither counts for the host nor teaches it anything.
        var learning: (learner: HedgingDelayLearner, key: String)?
        var delay: Duration? = hedging.delay
        if let learner = hedging.learner {
            let key = plan.mayBeRepeated(roundBase) ? learner.key(for: plan.originalRequest) : nil
            // A request counts once, at its first round: its retries' rounds add no share of a hedge.
            delay = key.flatMap { learner.startRound(for: $0, counts: atStart.attempts.isEmpty) }
            learning = key.map { (learner, $0) }
        }
        let (reports, reporter) = AsyncStream.makeStream(of: HedgeRound.Report.self)
        var round = HedgeRound(reporter: reporter, recordedBefore: atStart.attempts.count)
        let first = start(roundBase, hedge: 0, in: &round)
        // The newest attempt until it hands its request to the transport: no hedge starts before that.
        var unsent: Int? = first
        var newestSent: HedgeRound.Sent?
        var hedges = 0
        // No delay: no hedge in this round.
        var stopped = delay == nil
        let hedgeDelay = delay ?? .zero
        // The delay before the next hedge counts from when the newest attempt reached the transport: time it spent
        // waiting on the client (for a concurrency limiter's place, say) is not the server being slow.
        var due = hedgeDelay == .zero
        // The failure the retriers would retry whose retry the next hedge is, when one starts it.
        var retrying: Attempt?
        // What ends the round; `nil` when the task was cancelled (the stream then ends).
        var ending: HedgeRound.Ending?
        rounds: for await report in reports {
            // Cancelled: what is still queued is not read, and the round ends with its newest attempt.
            if Task.isCancelled { break }
            switch report {
            case .tick(let timer):
                // A tick of a timer replaced or stopped since (one queued as a hedge started) is dropped.
                guard round.timer?.id == timer else { continue }
                round.timer = nil
                due = true
            case .sent(let number, let request):
                if number == unsent {
                    unsent = nil
                    if !due { round.setTimer(after: hedgeDelay, clock: clock) }
                }
                if let base = round.inFlight[number]?.base {
                    newestSent = HedgeRound.Sent(number: number, request: request, base: base)
                }
                // The request goes on with an attempt sent: the retries granted meanwhile are told.
                if !round.granted.isEmpty { await tellGranted(in: &round) }
            case .finished(let number, let result):
                guard let attempt = round.inFlight.removeValue(forKey: number) else { continue }
                if number == unsent { unsent = nil }
                let now = clock.now()
                // A success, cancellation, the deadline, or the last attempt in flight failing ends the round; but not a
                // hedge refused before it was sent (a part had no room for it when it reached it, a breaker opened):
                // the round goes on without it, as though it had not started.
                guard case .failure(let reason) = result.kind,
                    !round.inFlight.isEmpty || (attempt.hedge > 0 && result.sent == nil && reason.isNonRetryable)
                else {
                    ending = .finished(number, attempt, result, at: now)
                    break rounds
                }
                round.records.append(
                    RequestMachine.Recorded(
                        result, number: number, since: attempt.start, now: now, hedge: attempt.hedge))
                if let head = result.response {
                    if let asked = plan.quietAsked(by: head), asked > .zero {
                        // Under the host the attempt was sent to, before any redirect: the one the next attempts go to.
                        round.noteQuiet(asked, askedBy: result.firstHop ?? result.sent, now: now)
                    }
                    // The server asked for no retry: no new hedge either.
                    if plan.asksNoRetry(head) { stopped = true }
                }
                // Others are in flight: would the retriers retry this one? Asked in a task of their own; a failure
                // that is never retried has its answer at once. Asked mid-round, with no backoff to follow: the
                // machine makes the backoff wait when the round ends.
                if reason.isNonRetryable {
                    round.asking[number] = (result, nil)
                    reporter.yield(.answered(number: number, answer: .answered(.doNotRetry)))
                    // Declined with no response: no new hedge starts after it (see `noAttemptFollows`), not even
                    // before that answer is read.
                    if result.response == nil { stopped = true }
                } else {
                    let question = atStart.question(
                        about: result, failingFor: reason, plan: plan, after: round.records)
                    let limit = atStart.time.limits?.limit(of: .decision, now: now)
                    let plan = plan
                    round.asking[number] = (
                        result,
                        Spawn.task {
                            let answer =
                                if let limit {
                                    await plan.retryResult(for: question, within: limit)
                                } else {
                                    await plan.retryResult(for: question)
                                }
                            reporter.yield(.answered(number: number, answer: answer))
                        }
                    )
                }
            case .answered(let number, let answer):
                guard let (failed, _) = round.asking.removeValue(forKey: number) else { continue }
                guard case .answered(let result) = answer else {
                    // The deadline came, or the task was cancelled, while they decided: that ends the round, and the
                    // request.
                    ending = .decided(number, failed, answer: answer)
                    break rounds
                }
                // Declined for the attempts the request made (its retry limit, a repeated failure), not for what the
                // failure was; declined with no response to end the round with (a part refused the attempt before it
                // was sent, a lost connection they do not retry); or a retry of the newest attempt that the hedging
                // settings leave no attempt for, in this round or after it (an attempt started since goes on in its
                // place, as after any failure).
                let noAttemptFollows =
                    result.limitsAttempts || (result.delay == nil && failed.response == nil)
                    || (result.delay != nil && number == round.attemptsMade
                        && round.attemptsMade >= hedging.maximumAttempts)
                if noAttemptFollows {
                    // The attempts in flight go on, no new hedge starts, and this one is told as a loser when the
                    // round ends.
                    round.declined[number] = (failed, result)
                    stopped = true
                } else if result.delay == nil {
                    // A response no retrier would retry is the answer: it ends them all.
                    ending = .decided(number, failed, answer: answer)
                    break rounds
                } else {
                    if let request = result.request { round.move(to: request) }
                    // The request goes on at once with the attempts in flight, and the next hedge if it may start:
                    // told so as soon as an attempt in flight was sent (not one still in an adapter, which may never
                    // leave).
                    round.granted[number] = (failed, result)
                    if round.inFlight.keys.contains(where: { $0 != unsent }) { await tellGranted(in: &round) }
                    if result.delay != nil {
                        due = true
                        retrying = round.records.last { $0.attempt.number == number }?.attempt
                    }
                }
            }
            // Nothing in flight and no question open: the last attempt was a hedge that never left.
            if round.inFlight.isEmpty, round.asking.isEmpty {
                ending = round.endingWithNothingInFlight()
                break rounds
            }
            // A hedge may start once its delay passed and the newest attempt was sent, while the settings and the
            // time left allow another attempt.
            guard due, unsent == nil, !stopped, let sent = newestSent, round.inFlight.count < hedging.maximumInFlight,
                round.attemptsMade < hedging.maximumAttempts, !Task.isCancelled,
                atStart.time.hasTimeLeft(now: clock.now())
            else { continue }
            let number = round.attemptsMade + 1
            // The hedge, judged as the newest request sent, goes where an endpoint group picks for it, if one routes
            // the request (the pick is forgotten if the hedge does not start now).
            let router = plan.registered?.router
            let judged = round.hedgeToJudge(after: sent, router: router)
            let hedge = router?.destination(ofHedge: judged, number: number, of: plan.requestID) ?? judged
            if let quietUntil = round.quiet.until(for: hedge), case let now = clock.now(), now < quietUntil {
                // Its host asked to wait: the next hedge may start once the time asked for has passed.
                router?.hedgeRefused(number, of: plan.requestID)
                round.setTimer(after: quietUntil - now, clock: clock)
                due = false
                continue
            }
            // A learner's cap on the host's hedges comes before the gates: a hedge it refuses spends nothing of a
            // budget.
            if let learning, !learning.learner.admitsHedge(for: learning.key) {
                router?.hedgeRefused(number, of: plan.requestID)
                stopped = true
                continue
            }
            defer { retrying = nil }
            guard admitsHedge(hedge, number: number, after: retrying) else {
                // The hedge does not start: the learner has it back, and the group forgets the endpoint it picked.
                if let learning { learning.learner.hedgeNotStarted(for: learning.key) }
                router?.hedgeRefused(number, of: plan.requestID)
                // Not a request to repeat, or a gate refused: no more hedges in this round.
                stopped = true
                continue
            }
            hedges += 1
            // The next delay counts from when this hedge is sent: the timer of the attempt before it no longer counts.
            round.setTimer(after: nil, clock: clock)
            unsent = start(round.target ?? atStart.nextBase, hedge: hedges, in: &round)
            due = hedgeDelay == .zero
        }
        let (result, losers) = end(round, with: ending)
        // The parts settle the losers, and the observers hear of them, before the request goes on with the attempt
        // that ended the round.
        for loser in losers {
            if let outcome = plan.settle(loser, decision: .cancelled, of: result.records.lazy.map(\.attempt)) {
                await plan.tell(outcome)
            }
        }
        // A round won by an answer teaches how long the host took to give it: from the round's first attempt reaching
        // the transport to the winner's end, whichever attempt won.
        if let learning, case .success = result.result.kind, let winner = result.records.last?.attempt,
            let winnerSent = round.handoff(of: winner.number)?.at, let onWire = winner.timeOnWire,
            let firstSent = round.handoff(of: first)?.at
        {
            learning.learner.learn(winnerSent + onWire - firstSent, for: learning.key)
        }
        return result
    }

    /// Starts the next attempt of the round in a task of its own and returns its number.
    func start(_ base: URLRequest, hedge: Int, in round: inout HedgeRound) -> Int {
        let number = round.attemptsMade + 1
        // The request's first attempt starts with the request.
        let attemptStart = number == 1 ? atStart.time.start : plan.session.clock.now()
        let (plan, reporter, handoffs) = (plan, round.reporter, round.handoffs)
        let limit = atStart.time.limits?.limit(of: .attempt, now: attemptStart)
        let task = Spawn.task {
            let onSend: @Sendable (Handoff) -> Void = { handoff in
                handoffs.withLock { $0[number] = handoff }
                reporter.yield(.sent(number: number, request: handoff.request))
            }
            let result =
                if let limit {
                    await plan.attempt(base, number: number, within: limit, onSend: onSend, repeatedOnly: hedge > 0)
                } else {
                    await plan.attempt(base, number: number, onSend: onSend, repeatedOnly: hedge > 0)
                }
            reporter.yield(.finished(number: number, result: result))
        }
        round.inFlight[number] = HedgeRound.InFlight(hedge: hedge, base: base, start: attemptStart, task: task)
        return number
    }

    /// Has the parts settle the failures whose retry the retriers granted mid-round, and tells the observers of each,
    /// in order, as retried without delay: the request went on with the attempts in flight.
    func tellGranted(in round: inout HedgeRound) async {
        let clock = plan.session.clock
        for (number, granted) in round.granted.sorted(by: { $0.key < $1.key }) {
            let report = RequestMachine.Report(
                attempt: number, data: granted.failed.data, elapsed: clock.now() - atStart.time.start)
            let recorded = round.records.lazy.map(\.attempt)
            if let outcome = plan.settle(report, decision: .retry(after: .zero), of: recorded) {
                await plan.tell(outcome)
            }
        }
        round.granted = [:]
    }

    /// Whether attempt `number` may start as `hedge`, the request it is judged as
    /// (``HedgeRound/hedgeToJudge(after:router:)``) where an endpoint group sends it, in place of the retry of `failed`
    /// if a failure started it: a request that may be repeated, let through by every hedge gate registered (a
    /// throttle, a breaker, a limiter, a pacer, a budget), in order; a per-host gate judges the endpoint's host.
    func admitsHedge(_ hedge: URLRequest, number: Int, after failed: Attempt?) -> Bool {
        guard plan.mayBeRepeated(hedge) else { return false }
        guard let roles = plan.registered else { return true }
        for gate in roles.hedgeGates {
            guard gate.admitHedge(hedge, of: plan.requestID, attempt: number, after: failed, roles: roles) != nil else {
                continue
            }
            // The hedge never starts, and the next attempt takes its number: what a part in shadow mode hid of it goes.
            roles.ledger.hedgeRefused(number)
            return false
        }
        roles.ledger.startsHedge(number)
        return true
    }

    /// Ends a round with `ending`: cancels the attempts still in flight, the questions still unanswered and the timer,
    /// and ends the stream, which drops whatever they report later; records each attempt it cancelled (sent if it
    /// handed its request over); and returns the round's records with the result of the attempt that ends the round,
    /// recorded after them (with the retriers' answer about it, if any), and the reports of the losers: the failures
    /// whose question is unanswered, then the attempts it cancelled, each by number. With no ending (the task was
    /// cancelled), the newest attempt in flight is the one the request goes on with, recorded last.
    private func end(_ round: HedgeRound, with ending: HedgeRound.Ending?) -> (RoundResult, [RequestMachine.Report]) {
        var round = round
        for attempt in round.inFlight.values { attempt.task.cancel() }
        for question in round.asking.values { question.task?.cancel() }
        round.timer?.task.cancel()
        round.reporter.finish()
        var ending = ending
        if ending == nil, round.inFlight.isEmpty {
            // Cancelled while the round waited with nothing in flight (a hedge never left): the request ends with its
            // newest failure, no loser then.
            let untold = round.untold
            if let number = round.records.last(where: { untold[$0.attempt.number] != nil })?.attempt.number,
                let failed = untold[number]
            {
                round.forget(number)
                ending = .decided(number, failed, answer: .cancelled)
            }
        }
        let clock = plan.session.clock
        let handoffs = round.handoffs.withLock { $0 }
        var cancelled = round.inFlight.sorted { $0.key < $1.key }.map { number, attempt in
            (number, attempt, AttemptResult(.cancelled, sent: handoffs[number]?.request, sentAt: handoffs[number]?.at))
        }
        let newest = ending == nil ? cancelled.popLast() : nil
        var losers = round.untold.sorted { $0.key < $1.key }.map { number, failed in
            RequestMachine.Report(attempt: number, data: failed.data, elapsed: clock.now() - atStart.time.start)
        }
        for (number, loser, result) in cancelled {
            let now = clock.now()
            round.records.append(
                RequestMachine.Recorded(result, number: number, since: loser.start, now: now, hedge: loser.hedge))
            losers.append(RequestMachine.Report(attempt: number, data: nil, elapsed: now - atStart.time.start))
        }
        let result: AttemptResult
        var answer: RequestMachine.RetriersAnswer?
        switch ending {
        case .finished(let number, let attempt, let ended, let at):
            round.records.append(
                RequestMachine.Recorded(ended, number: number, since: attempt.start, now: at, hedge: attempt.hedge))
            result = ended
        case .decided(let number, let failed, let answered):
            // Recorded when the retriers were asked about it: it goes after the losers.
            round.moveLast(attempt: number)
            (result, answer) = (failed, answered)
        case nil:
            if let (number, attempt, cancelled) = newest {
                round.records.append(
                    RequestMachine.Recorded(
                        cancelled, number: number, since: attempt.start, now: clock.now(), hedge: attempt.hedge))
                result = cancelled
            } else {
                result = .cancelledBeforeSending
            }
        }
        let roundResult = RoundResult(
            records: round.records, result: result, answer: answer, target: round.target, quiet: round.quiet)
        return (roundResult, losers)
    }
}

extension RetryResult {
    /// Whether this declines a retry for the attempts the request made (a retry limit, a repeated failure), not for
    /// what the failure was: a hedged round's attempts still in flight go on after it.
    fileprivate var limitsAttempts: Bool {
        guard case .doNotRetryBecause(let rule) = self else { return false }
        return rule == .retryLimit || rule == .repeatedFailure
    }
}
