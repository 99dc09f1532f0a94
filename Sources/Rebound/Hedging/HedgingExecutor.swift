import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A hedged round: the attempts a request has in flight at once, in place of one attempt (see ``Hedging``), run for
/// the request's machine, of which it reads what the action that starts it holds (``RequestMachine/RoundStart``) and
/// which it never changes: the round returns its attempts, winner and losers, for the machine to record.
///
/// The executor drives the round's state machine (``HedgeRound``), which keeps all the round knows. The executor runs
/// each attempt in flight, each question to the retriers about a failure while others are in flight, and the hedging
/// timer in a task of its own, which reports through one stream; its loop reads the reports in the order they came,
/// feeds each to the round with the time, and performs the step the round returns. It is the only code of a round that
/// awaits, starts a task, reads the clock or asks a part that keeps state (a hedge gate, a learner, an endpoint group).
///
/// The tasks are unstructured (started through `Spawn`, like a race's), so that the loop goes on at once when an
/// attempt wins, even if a loser ignores cancellation: the round's end cancels the loser and ends the stream, and the
/// loser's report, if it ever comes, is dropped.
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
        let clock = plan.session.clock
        // A learned delay is the host's, asked for as the first attempt is sent, and its learner hears how long the
        // round took to answer.
        var learning: Learning?
        var round = HedgeRound(
            plan: plan, atStart: atStart, delay: hedging.learner == nil ? .fixed(hedging.delay) : .learned)
        let (reports, reporter) = AsyncStream.makeStream(of: HedgeRound.Report.self)
        // What each attempt handed to the transport, and when; written from the attempts' tasks as they hand it over,
        // so that a loser's record says whether it was sent, even when the round ended before its report was read.
        let handoffs = Locked<[Int: Handoff]>([:])
        // Every task of the round (its attempts, its questions to the retriers), cancelled when it ends, and the one
        // timer, set for when the round's next hedge is due.
        var tasks: [Task<Void, Never>] = []
        var timer: (due: Duration, task: Task<Void, Never>)?
        let first = round.start(at: clock.now())
        tasks.append(run(first.number, first.attempt, reporter: reporter, handoffs: handoffs))
        // What ends the round; `nil` when the task was cancelled (the stream then ends).
        var ending: HedgeRound.Ending?
        rounds: for await report in reports {
            // Cancelled: what is still queued is not read, and the round ends with its newest attempt.
            if Task.isCancelled { break }
            var now = clock.now()
            switch round.handle(report, now: now) {
            case .goOn:
                break
            case .ask(let number, let question, let limit):
                let plan = plan
                tasks.append(
                    Spawn.task {
                        let answer =
                            if let limit {
                                await plan.retryResult(for: question, within: limit)
                            } else {
                                await plan.retryResult(for: question)
                            }
                        reporter.yield(.answered(number: number, answer: answer))
                    })
            case .answerAtOnce(let number):
                reporter.yield(.answered(number: number, answer: .answered(.doNotRetry)))
            case .learnDelay(let sent):
                // A request that may not be repeated, as its adapters sent it, is never hedged, and neither counts for
                // the host nor teaches it anything (an `IdempotencyKeyAdapter`'s key makes a POST one that may be);
                // a learner with too few answers gives no delay, and the round sends no hedge. A request counts once,
                // at its first round: its retries' rounds add no share of a hedge.
                if let learner = hedging.learner, plan.mayBeRepeated(sent),
                    let key = learner.key(for: plan.originalRequest)
                {
                    learning = Learning(learner: learner, key: key)
                    round.delayLearned(learner.startRound(for: key, counts: atStart.attempts.isEmpty), now: now)
                } else {
                    round.delayLearned(nil, now: now)
                }
            case .tellGranted:
                // The hedging delay that report started runs while the observers hear.
                setTimer(&timer, for: round.due, reporter: reporter)
                await tellGranted(round.takeGranted(), of: round.records)
                // The observers may have taken their time: a hedge due now is judged at the time they were done.
                now = clock.now()
            case .end(let end):
                ending = end
                break rounds
            }
            // A hedge the round would start now: the parts say whether it starts.
            if !Task.isCancelled, let hedge = round.nextHedge(now: now) {
                switch admit(hedge, quiet: round.quiet, learning: learning, now: now) {
                case .started(let learnerCounted):
                    let next = round.start(at: now)
                    if learnerCounted { learning?.counted.append(next.number) }
                    tasks.append(run(next.number, next.attempt, reporter: reporter, handoffs: handoffs))
                case .held(let until):
                    round.hedgeNotStarted(heldUntil: until)
                case .refused:
                    round.hedgeNotStarted(heldUntil: nil)
                }
            }
            setTimer(&timer, for: round.due, reporter: reporter)
        }
        // The round ends: what still runs is cancelled, and the ended stream drops whatever it reports later.
        for task in tasks { task.cancel() }
        timer?.task.cancel()
        reporter.finish()
        let handedOver = handoffs.withLock { $0 }
        let (result, losers) = round.end(with: ending, handoffs: handedOver, now: clock.now())
        // A hedge the learner counted that never reached the transport (an adapter stopped it, or the round ended
        // before it was sent) gives its share back: only hedges sent are extra load on the host.
        if let learning {
            for number in learning.counted where handedOver[number] == nil {
                learning.learner.hedgeNotSent(for: learning.key)
            }
        }
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
            let winnerSent = handedOver[winner.number]?.at, let onWire = winner.timeOnWire,
            let firstSent = handedOver[first.number]?.at
        {
            learning.learner.learn(winnerSent + onWire - firstSent, for: learning.key)
        }
        return result
    }

    /// A round's learner, the key of the host whose delay it gives and whose hedges it caps, and the hedges of the
    /// round it counted against that cap.
    struct Learning {
        let learner: HedgingDelayLearner
        let key: String
        var counted: [Int] = []
    }

    /// What the parts said of a hedge the round would start.
    enum Admission {
        /// Every part let it through: it starts now, counted against the learner's cap when `learnerCounted`.
        case started(learnerCounted: Bool)
        /// Its host asked for quiet until `until`: the next hedge is due then.
        case held(until: Duration)
        /// A part refused it, or it may not be repeated: no new hedge starts in this round.
        case refused
    }

    /// Runs attempt `number` in a task of its own, which notes what it hands to the transport in `handoffs` and
    /// reports to `reporter`: when it hands its request over, and when it ends.
    private func run(
        _ number: Int, _ attempt: HedgeRound.InFlight, reporter: AsyncStream<HedgeRound.Report>.Continuation,
        handoffs: Locked<[Int: Handoff]>
    ) -> Task<Void, Never> {
        let plan = plan
        let limit = atStart.time.limits?.limit(of: .attempt, now: attempt.start)
        let (base, repeatedOnly) = (attempt.base, attempt.hedge > 0)
        return Spawn.task {
            let onSend: @Sendable (Handoff) -> Void = { handoff in
                handoffs.withLock { $0[number] = handoff }
                reporter.yield(.sent(number: number, request: handoff.request))
            }
            let result =
                if let limit {
                    await plan.attempt(base, number: number, within: limit, onSend: onSend, repeatedOnly: repeatedOnly)
                } else {
                    await plan.attempt(base, number: number, onSend: onSend, repeatedOnly: repeatedOnly)
                }
            reporter.yield(.finished(number: number, result: result))
        }
    }

    /// Keeps `timer` set for when the round's next hedge is `due`, if it is due at a time: a timer set for another
    /// time is cancelled, and a new one reports ``HedgeRound/Report/tick(at:)`` when the time comes.
    private func setTimer(
        _ timer: inout (due: Duration, task: Task<Void, Never>)?, for due: HedgeRound.Due,
        reporter: AsyncStream<HedgeRound.Report>.Continuation
    ) {
        let time: Duration? = if case .at(let time) = due { time } else { nil }
        guard timer?.due != time else { return }
        timer?.task.cancel()
        timer = time.map { time in
            let clock = plan.session.clock
            let delay = time - clock.now()
            return (
                time,
                Spawn.task {
                    do {
                        try await clock.sleep(delay)
                    } catch {
                        return  // Cancelled: the round ended, or the timer was replaced.
                    }
                    reporter.yield(.tick(at: time))
                }
            )
        }
    }

    /// Has the parts settle the failures whose retry the retriers granted mid-round, and tells the observers of each,
    /// in order, as retried without delay: the request went on with the attempts in flight.
    private func tellGranted(_ granted: [(number: Int, failed: AttemptResult)], of records: [RequestMachine.Recorded])
        async
    {
        let clock = plan.session.clock
        for (number, failed) in granted {
            let report = RequestMachine.Report(
                attempt: number, data: failed.data, elapsed: clock.now() - atStart.time.start)
            if let outcome = plan.settle(report, decision: .retry(after: .zero), of: records.lazy.map(\.attempt)) {
                await plan.tell(outcome)
            }
        }
    }

    /// Whether `hedge` starts now, asking in order: an endpoint group that routes the request, where it goes; a host
    /// that asked for quiet (`quiet`), whether its time passed at `now`; the round's learner, whether the host's cap on
    /// hedges allows it (before the gates: a hedge it refuses spends nothing of a budget; not for a hedge in place of
    /// a retry that says nothing about the host's health, ``Attempt/retryIsFree``); whether the request may be
    /// repeated; and every hedge gate registered (a throttle, a breaker, a limiter, a pacer, a budget), in order, about
    /// it going there, in place of the retry of the failure that made it due, if one did: the first refusal wins. A
    /// per-host gate judges the endpoint's host. A hedge that does not start gives back what was taken for it: the
    /// group forgets the endpoint it picked, and the learner the share it took.
    private func admit(_ hedge: HedgeRound.Hedge, quiet: HostQuiet, learning: Learning?, now: Duration) -> Admission {
        let router = plan.registered?.router
        let request =
            router?.destination(ofHedge: hedge.judged, number: hedge.number, of: plan.requestID) ?? hedge.judged
        // Every way the hedge does not start gives the group the endpoint it picked back.
        func notStarted(_ admission: Admission) -> Admission {
            router?.hedgeRefused(hedge.number, of: plan.requestID)
            return admission
        }
        if let until = quiet.until(for: request), now < until { return notStarted(.held(until: until)) }
        // A hedge in place of a retry that says nothing about the host's health (after a 401, or a failure of the
        // device's own network) is that retry, not extra load: the learner's cap does not count it.
        let capped = hedge.retrying?.retryIsFree == true ? nil : learning
        if let capped, !capped.learner.admitsHedge(for: capped.key) { return notStarted(.refused) }
        var admitted = plan.mayBeRepeated(request)
        if admitted, let roles = plan.registered {
            admitted = roles.hedgeGates.allSatisfy { gate in
                gate.admitHedge(request, of: plan.requestID, attempt: hedge.number, after: hedge.retrying, roles: roles)
                    == nil
            }
            // A hedge refused never starts, and the next attempt takes its number: what a part in shadow mode hid of
            // it goes.
            if admitted { roles.ledger.startsHedge(hedge.number) } else { roles.ledger.hedgeRefused(hedge.number) }
        }
        guard admitted else {
            if let capped { capped.learner.hedgeNotStarted(for: capped.key) }
            return notStarted(.refused)
        }
        return .started(learnerCounted: capped != nil)
    }
}
