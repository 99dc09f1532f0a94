import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A hedged round as a pure state machine: what the round knows, and how each report of its tasks changes it. Its
/// driver (`HedgingExecutor.execute()`) runs the attempts, the questions to the retriers and the timer in tasks of
/// their own, reads their reports in the order they came, feeds each here with the time it read, and performs the
/// ``Step`` that comes back; it asks the parts whether a hedge the round would start may start
/// (``nextHedge(now:)``), and tells the round what they said.
///
/// ```
///   start(at:) ──▶ attempts in flight ──(a success; an attempt cancelled or cut by the deadline; the last attempt in
///        ▲               │                flight failing; a response no retrier would retry; the deadline or
///        │               │                cancellation cutting a question; nothing in flight or asked after a hedge
///        │               │                that never left)──▶ end
///        │               │ a failure while others are in flight: recorded, and the retriers asked about it
///        │               ▼
///        └──(a hedge is due: the delay passed after the newest attempt was sent, or the retriers would retry a
///            failure; the settings, the time left and the parts allow)
/// ```
///
/// Nothing here awaits, reads a clock or calls a part that keeps state: the time comes with each report, and it reads
/// only settings (what the chain's retry policies read of a response, which methods may be repeated, which endpoint of
/// a group a URL is at).
struct HedgeRound {
    /// What the round's tasks report, in the order it happened.
    enum Report: Sendable {
        /// Attempt `number` handed `request` to the transport.
        case sent(number: Int, request: URLRequest)
        /// Attempt `number` ended.
        case finished(number: Int, result: AttemptResult)
        /// The retriers answered about attempt `number`'s failure: `.answered`, or how the question ended without one.
        case answered(number: Int, answer: RequestMachine.RetriersAnswer)
        /// The timer set for time `at` fired: the hedging delay, or the quiet a failure asked for, passed.
        case tick(at: Duration)
    }

    /// What the driver does after the round took a report.
    enum Step {
        /// Nothing more: the driver reads the next report, after it starts a hedge if one is due
        /// (``nextHedge(now:)``), as after every step but the end.
        case goOn
        /// Ask the retriers `question` about attempt `number`'s failure, within `limit`, in a task of the round, which
        /// reports their answer.
        case ask(number: Int, question: RequestMachine.Question, limit: TimeLimit?)
        /// Report at once that the retriers decline attempt `number`'s failure, which is never retried: a report like
        /// any answer, read in its turn after those already queued.
        case answerAtOnce(number: Int)
        /// Settle and tell the retries the retriers granted meanwhile (``takeGranted()``): the request went on with an
        /// attempt that was sent.
        case tellGranted
        /// Ask the round's learner for the host's delay, now that the round's first attempt sent `sent` (the request as
        /// its adapters made it, which is judged for whether it may be repeated), and tell the round
        /// (``delayLearned(_:now:)``).
        case learnDelay(sent: URLRequest)
        /// End the round.
        case end(Ending)
    }

    /// When the round's next hedge is due.
    enum Due: Equatable {
        /// The delay after the newest attempt hands its request to the transport: time it spends waiting on the
        /// client (for a concurrency limiter's place, say) is not the server being slow.
        case afterSend
        /// At this time on the session's clock, which the driver's timer reports (``Report/tick(at:)``).
        case at(Duration)
        /// Now, once the newest attempt was sent and the settings, the time left and the parts allow.
        case now
    }

    /// An attempt in flight: which hedge of the round it is (0 for the first attempt), the request its adapters start
    /// from, and when it started.
    struct InFlight {
        let hedge: Int
        let base: URLRequest
        let start: Duration
    }

    /// The newest request the round handed to the transport: attempt `number`'s, adapted from `base`.
    struct Sent {
        let number: Int
        let request: URLRequest
        let base: URLRequest
    }

    /// A hedge the round would start now: attempt `number`, which the hedge gates judge as `judged` (the newest request
    /// sent, or what ``judged(after:movedTo:)`` makes of it), in place of the retry of `retrying` if a failure the
    /// retriers would retry made it due.
    struct Hedge {
        let number: Int
        let judged: URLRequest
        let retrying: Attempt?
    }

    /// How a round's hedging delay is given.
    enum Delay {
        /// This delay after the newest attempt was sent; `nil` for a round that sends no hedge.
        case fixed(Duration?)
        /// The delay a learner gives the host, asked for once the round's first attempt was sent
        /// (``Step/learnDelay(sent:)``).
        case learned
    }

    /// What ends a round.
    enum Ending {
        /// Attempt `number` came to `result` at `at`, which ends the round (a success, cancellation, the deadline, or
        /// the last attempt in flight failing); not recorded yet.
        case finished(Int, InFlight, AttemptResult, at: Duration)
        /// The retriers' question about attempt `number`'s failure, recorded when they were asked, ended the round:
        /// with their `answer` (a response no retrier would retry, or any answer once nothing is in flight after a
        /// hedge that never left), or cut by the deadline or cancellation.
        case decided(Int, AttemptResult, answer: RequestMachine.RetriersAnswer)
    }

    let plan: RequestPlan
    /// What the round reads of the request as it starts (``RequestMachine/RoundStart``).
    let atStart: RequestMachine.RoundStart
    /// How long after the newest attempt was sent, with no answer, the next hedge is due; `nil` for a round that sends
    /// no hedge (a learner with too few answers, a request that may not be repeated), and for a delay to be learned
    /// until the first attempt was sent.
    private(set) var delay: Duration?
    /// Whether the delay is still to be learned: the round's first attempt was not sent yet.
    private var learnsDelay: Bool

    /// The attempts in flight, by number.
    private(set) var inFlight: [Int: InFlight] = [:]
    /// The failures the retriers are asked about, by number, until they answer.
    private var asking: [Int: AttemptResult] = [:]
    /// The failures the retriers declined for the attempts the request made (a retry limit, a repeated failure), or
    /// would retry with no attempt left in the hedging settings, while others were in flight, by number: told as
    /// losers when the round ends.
    private var declined: [Int: (failed: AttemptResult, answer: RetryResult)] = [:]
    /// The failures whose retry the retriers granted while others were in flight, by number, until the request goes on
    /// with an attempt that was sent: told then as retried without delay, or as losers when the round ends first.
    private var granted: [Int: (failed: AttemptResult, answer: RetryResult)] = [:]
    /// The round's attempts that ended, in the order the round recorded them: the machine adds them to its records when
    /// the round ends.
    private(set) var records: [RequestMachine.Recorded] = []
    /// The request a retrier moved the request to mid-round (`retryWithRequest`): the next hedges start from it, and so
    /// does the request's next attempt after the round.
    private(set) var target: URLRequest?
    /// The number of the first attempt that starts from `target`.
    private var firstFromTarget = 1
    /// The times, on the session's clock, before which the hosts that answered the round's failures asked that no
    /// attempt reach them (a 429's or 503's `Retry-After`, as the chain's retry policies read it): no hedge to such a
    /// host starts before its time, nor the request's retry after the round.
    private(set) var quiet = HostQuiet()
    /// The newest attempt until it hands its request to the transport: no hedge starts before that.
    private(set) var unsent: Int?
    /// The newest request handed to the transport, which the next hedge is judged as.
    private var newestSent: Sent?
    /// How many hedges started.
    private var hedges = 0
    /// Whether no new hedge starts in this round: it has no delay; a response asked for no retry; a part refused a
    /// hedge; or the retriers declined a failure for the attempts made, or with no response.
    private(set) var stopped: Bool
    /// When the next hedge is due.
    private(set) var due: Due
    /// The failure the retriers would retry whose retry the next hedge is, when one made a hedge due.
    private var retrying: Attempt?

    /// A round of `plan`'s request from what `atStart` holds, whose hedges are due `delay` after the newest attempt
    /// was sent (none with no delay; at once with zero).
    init(plan: RequestPlan, atStart: RequestMachine.RoundStart, delay: Delay) {
        (self.plan, self.atStart) = (plan, atStart)
        switch delay {
        case .fixed(let fixed): (self.delay, learnsDelay) = (fixed, false)
        case .learned: (self.delay, learnsDelay) = (nil, true)
        }
        // With no delay, and none to learn, the round is stopped from the start: no hedge is ever due.
        stopped = self.delay == nil && !learnsDelay
        due = self.delay == .zero ? .now : .afterSend
    }

    /// How many attempts the request made so far, ended or in flight: the number of the one started last.
    var attemptsMade: Int { atStart.attempts.count + records.count + inFlight.count }

    // MARK: Transitions

    /// Starts the round's next attempt at `now` (the request's own start for its first attempt): the first from the
    /// round's request, a hedge from the request a retrier moved the request to, else the request's next base. The
    /// next hedge's delay counts from when this attempt is sent. Returns the attempt for the driver to run.
    mutating func start(at now: Duration) -> (number: Int, attempt: InFlight) {
        let number = attemptsMade + 1
        let isFirst = number == atStart.attempts.count + 1
        if !isFirst {
            hedges += 1
            retrying = nil
            due = delay == .zero ? .now : .afterSend
        }
        let attempt = InFlight(
            hedge: isFirst ? 0 : hedges, base: isFirst ? atStart.request : target ?? atStart.nextBase,
            start: number == 1 ? atStart.time.start : now)
        inFlight[number] = attempt
        unsent = number
        return (number, attempt)
    }

    /// Takes `report`, which came `now`, and returns what the driver does next.
    mutating func handle(_ report: Report, now: Duration) -> Step {
        switch report {
        case .tick(let time):
            // A tick for another time than the one the round waits for (of a timer replaced or stopped since, queued
            // as a hedge started, say) is dropped.
            if due == .at(time) { due = .now }
            return .goOn
        case .sent(let number, let request):
            // An attempt the round no longer has (cut by its time limit while it was handing its request over) is
            // not the request going on.
            guard let base = inFlight[number]?.base else { return .goOn }
            if number == unsent {
                unsent = nil
                if let delay, due != .now { due = .at(now + delay) }
            }
            newestSent = Sent(number: number, request: request, base: base)
            // The first attempt was sent: the learner gives the delay, judging the request as it was sent.
            if learnsDelay { return .learnDelay(sent: request) }
            // The request goes on with an attempt sent: the retries granted meanwhile are told.
            return granted.isEmpty ? .goOn : .tellGranted
        case .finished(let number, let result):
            guard let attempt = inFlight.removeValue(forKey: number) else { return .goOn }
            if number == unsent { unsent = nil }
            // A success, cancellation, the deadline, or the last attempt in flight failing ends the round; but not a
            // hedge refused before it was sent (a part had no room for it when it reached it, a breaker opened): the
            // round goes on without it, as though it had not started.
            guard case .failure(let reason) = result.kind,
                !inFlight.isEmpty || (attempt.hedge > 0 && result.sent == nil && reason.isNonRetryable)
            else { return .end(.finished(number, attempt, result, at: now)) }
            return failed(number, attempt, result, reason: reason, now: now)
        case .answered(let number, let answer):
            guard let failed = asking.removeValue(forKey: number) else { return .goOn }
            return answered(number, failed, answer: answer)
        }
    }

    /// Records attempt `number`'s failure while others are in flight, notes the quiet its response asked for, and
    /// asks the retriers whether they would retry it: at once for a failure that is never retried, else in a task of
    /// the round. Asked mid-round, with no backoff to follow: the machine makes the backoff wait when the round ends.
    private mutating func failed(
        _ number: Int, _ attempt: InFlight, _ result: AttemptResult, reason: ReboundError.Reason, now: Duration
    ) -> Step {
        records.append(RequestMachine.Recorded(result, number: number, of: attempt, now: now))
        if let head = result.response {
            if let asked = plan.quietAsked(by: head), asked > .zero {
                // Under the host the attempt was sent to, before any redirect: the one the next attempts go to.
                quiet.note(asked, askedBy: result.firstHop ?? result.sent, now: now)
            }
            // The server asked for no retry: no new hedge either.
            if plan.asksNoRetry(head) { stopped = true }
        }
        asking[number] = result
        guard !reason.isNonRetryable else {
            // Declined with no response: no new hedge starts after it (see `answered`), not even before that answer
            // is read.
            if result.response == nil { stopped = true }
            return .answerAtOnce(number: number)
        }
        let question = atStart.question(about: result, failingFor: reason, plan: plan, after: records)
        return .ask(number: number, question: question, limit: atStart.time.limits?.limit(of: .decision, now: now))
    }

    /// Takes the retriers' `answer` about attempt `number`'s failure `failed`.
    private mutating func answered(
        _ number: Int, _ failed: AttemptResult, answer: RequestMachine.RetriersAnswer
    ) -> Step {
        // The deadline came, or the task was cancelled, while they decided: that ends the round, and the request.
        guard case .answered(let result) = answer else { return .end(.decided(number, failed, answer: answer)) }
        // Declined for the attempts the request made (its retry limit, a repeated failure), not for what the failure
        // was; declined with no response to end the round with (a part refused the attempt before it was sent, a lost
        // connection they do not retry); or a retry of the newest attempt that the hedging settings leave no attempt
        // for, in this round or after it (an attempt started since goes on in its place, as after any failure).
        let noAttemptFollows =
            result.limitsAttempts || (result.delay == nil && failed.response == nil)
            || (result.delay != nil && number == attemptsMade && attemptsMade >= atStart.hedging.maximumAttempts)
        if noAttemptFollows {
            // The attempts in flight go on, no new hedge starts, and this one is told as a loser when the round ends.
            declined[number] = (failed, result)
            stopped = true
        } else if result.delay == nil {
            // A response no retrier would retry is the answer: it ends them all.
            return .end(.decided(number, failed, answer: answer))
        } else {
            if let request = result.request { (target, firstFromTarget) = (request, attemptsMade + 1) }
            // The request goes on at once with the attempts in flight, and with the next hedge if it may start.
            granted[number] = (failed, result)
            due = .now
            retrying = records.last { $0.attempt.number == number }?.attempt
        }
        // Nothing in flight and no question open: the last attempt was a hedge that never left.
        if inFlight.isEmpty, asking.isEmpty { return .end(endingWithNothingInFlight()) }
        // A retry granted is told as soon as an attempt in flight was sent (not one still in an adapter, which may
        // never leave).
        return granted[number] != nil && inFlight.keys.contains { $0 != unsent } ? .tellGranted : .goOn
    }

    /// The hedge the round would start `now`: one is due, the newest attempt was sent, no rule stopped the round's
    /// hedging, the request's deadline is still to come, and the settings allow another attempt in flight and in all.
    /// The driver then asks the parts, and tells the round what they said: ``start(at:)``, or
    /// ``hedgeNotStarted(heldUntil:)``.
    func nextHedge(now: Duration) -> Hedge? {
        guard due == .now, unsent == nil, !stopped, let sent = newestSent,
            inFlight.count < atStart.hedging.maximumInFlight, attemptsMade < atStart.hedging.maximumAttempts,
            atStart.time.end.map({ now < $0 }) ?? true
        else { return nil }
        // After a retrier moved the request mid-round, and until an attempt from the new request was sent, the hedge is
        // the new request.
        let judged =
            if let target, sent.number < firstFromTarget { judged(after: sent, movedTo: target) } else { sent.request }
        return Hedge(number: attemptsMade + 1, judged: judged, retrying: retrying)
    }

    /// Takes the delay the learner gave `now`, as the round's first attempt was sent: the next hedge is due that long
    /// after; with none (too few answers, a request that may not be repeated), the round sends no hedge.
    mutating func delayLearned(_ learned: Duration?, now: Duration) {
        (delay, learnsDelay) = (learned, false)
        guard let learned else {
            stopped = true
            return
        }
        due = learned == .zero ? .now : .at(now + learned)
    }

    /// Notes that the hedge ``nextHedge(now:)`` gave did not start: its host asked for quiet, and the next hedge is due
    /// at `heldUntil`; or, with no time, a part refused it, and no new hedge starts in this round.
    mutating func hedgeNotStarted(heldUntil: Duration?) {
        if let heldUntil { due = .at(heldUntil) } else { stopped = true }
    }

    /// The failures whose retry the retriers granted mid-round, in order, which the driver settles and tells now: the
    /// request went on with an attempt that was sent.
    mutating func takeGranted() -> [(number: Int, failed: AttemptResult)] {
        defer { granted = [:] }
        return granted.sorted { $0.key < $1.key }.map { ($0.key, $0.value.failed) }
    }

    /// Ends the round with `ending` at `now`, its tasks stopped by the driver: records each attempt still in flight as
    /// cancelled (sent if `handoffs` says it handed its request over), and returns the round's records with the result
    /// of the attempt that ends the round, recorded after them (with the retriers' answer about it, if any), and the
    /// reports of the losers: the failures whose question is unanswered or whose answer was not told, then the attempts
    /// it cancelled, each by number. With no ending (the task was cancelled), the newest attempt in flight is the one
    /// the request goes on with, recorded last; with nothing in flight either, the newest failure not told.
    consuming func end(
        with ending: Ending?, handoffs: [Int: Handoff], now: Duration
    ) -> (HedgingExecutor.RoundResult, losers: [RequestMachine.Report]) {
        var ending = ending
        if ending == nil, inFlight.isEmpty {
            // Cancelled while the round waited with nothing in flight (a hedge never left): the request ends with its
            // newest failure, no loser then.
            let untold = untold
            if let number = records.last(where: { untold[$0.attempt.number] != nil })?.attempt.number,
                let failed = untold[number]
            {
                forget(number)
                ending = .decided(number, failed, answer: .cancelled)
            }
        }
        var cancelled = inFlight.sorted { $0.key < $1.key }.map { number, attempt in
            (number, attempt, AttemptResult(.cancelled, sent: handoffs[number]?.request, sentAt: handoffs[number]?.at))
        }
        let newest = ending == nil ? cancelled.popLast() : nil
        let elapsed = now - atStart.time.start
        var losers = untold.sorted { $0.key < $1.key }.map { number, failed in
            RequestMachine.Report(attempt: number, data: failed.data, elapsed: elapsed)
        }
        for (number, loser, result) in cancelled {
            records.append(RequestMachine.Recorded(result, number: number, of: loser, now: now))
            losers.append(RequestMachine.Report(attempt: number, data: nil, elapsed: elapsed))
        }
        let result: AttemptResult
        var answer: RequestMachine.RetriersAnswer?
        switch ending {
        case .finished(let number, let attempt, let ended, let at):
            records.append(RequestMachine.Recorded(ended, number: number, of: attempt, now: at))
            result = ended
        case .decided(let number, let failed, let answered):
            // Recorded when the retriers were asked about it: it goes after the losers.
            if let index = records.lastIndex(where: { $0.attempt.number == number }) {
                records.append(records.remove(at: index))
            }
            (result, answer) = (failed, answered)
        case nil:
            if let (number, attempt, cancelled) = newest {
                records.append(RequestMachine.Recorded(cancelled, number: number, of: attempt, now: now))
                result = cancelled
            } else {
                result = .cancelledBeforeSending
            }
        }
        let roundResult = HedgingExecutor.RoundResult(
            records: records, result: result, answer: answer, target: target, quiet: quiet)
        return (roundResult, losers)
    }

    // MARK: What the transitions read

    /// The request the hedge gates judge the round's next hedge by after a retrier moved the request mid-round to
    /// `target`, until an attempt from it was sent: `target`, with the header fields the adapters gave the newest
    /// attempt `sent` that it does not set (an idempotency key an adapter added), as going to its host; or, where an
    /// adapter sent the newest attempt to another host than its own request named (and not the endpoint group that
    /// routes the request, which so moved it knowingly), as going where that attempt went, its host not being known
    /// before its adapters run. The hedge is sent only if its own adapted request may be repeated
    /// (`RequestPlan.attempt(_:number:sending:onSend:repeatedOnly:)`).
    private func judged(after sent: Sent, movedTo target: URLRequest) -> URLRequest {
        var judged = target
        // What the adapters gave the newest attempt they give the hedge too; a field the caller wrote on the old
        // request (its own idempotency key) the new request does not carry.
        for (name, value) in sent.request.allHTTPHeaderFields ?? [:]
        where sent.base.value(forHTTPHeaderField: name) != value && judged.value(forHTTPHeaderField: name) == nil {
            judged.setValue(value, forHTTPHeaderField: name)
        }
        let movedByAdapter =
            CircuitBreakerRegistry.hostKey(for: sent.request) != CircuitBreakerRegistry.hostKey(for: sent.base)
        let router = plan.registered?.router
        let routed = router.map { $0.placement(of: sent.request) != nil && $0.placement(of: sent.base) != nil } ?? false
        if movedByAdapter, !routed { judged.url = sent.request.url }
        return judged
    }

    /// How a round ends with nothing in flight and no question open, its last attempt a hedge that never left (told as
    /// a loser; it keeps its number): as though the hedge had not started, with the failure the round recorded last of
    /// those it sent and the retriers' answer about it (a retry they granted, or a failure they declined), or else
    /// with the last it recorded.
    private mutating func endingWithNothingInFlight() -> Ending {
        let answered = granted.merging(declined) { granted, _ in granted }
        let sent = records.last { answered[$0.attempt.number]?.failed.sent != nil }
        guard let number = (sent ?? records.last { answered[$0.attempt.number] != nil })?.attempt.number,
            let chosen = answered[number]
        else {
            preconditionFailure("a round with nothing in flight and no question open declined its last attempt")
        }
        forget(number)
        return .decided(number, chosen.failed, answer: .answered(chosen.answer))
    }

    /// The failures the round recorded and has not told yet, by number: those whose question is open, and those whose
    /// answer (declined, or a retry granted) waits for the round's end or for an attempt sent.
    private var untold: [Int: AttemptResult] {
        let answered = declined.merging(granted) { declined, _ in declined }.mapValues(\.failed)
        return asking.merging(answered) { asked, _ in asked }
    }

    /// Drops attempt `number` from the failures not told yet: the round ends with it.
    private mutating func forget(_ number: Int) {
        (asking[number], declined[number], granted[number]) = (nil, nil, nil)
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

extension RequestMachine.Recorded {
    /// The record of the round's attempt `number`, in flight as `attempt`, that came to `result` `now`.
    init(_ result: AttemptResult, number: Int, of attempt: HedgeRound.InFlight, now: Duration) {
        self.init(result, number: number, since: attempt.start, now: now, hedge: attempt.hedge)
    }
}

/// The times before which hosts asked that no attempt reach them, by host (``CircuitBreakerRegistry/hostKey(for:)``):
/// a delay a response asks for is its host's, so it holds an attempt to that host and none to another (an endpoint
/// group's other endpoint, a fallback a retrier moved the request to).
struct HostQuiet: Sendable {
    private var until: [String: Duration] = [:]

    /// Whether no host asked for quiet.
    var isEmpty: Bool { until.isEmpty }

    /// Notes that the host `sent` went to asked, at `now`, that no attempt reach it for `asked`.
    mutating func note(_ asked: Duration, askedBy sent: URLRequest?, now: Duration) {
        let key = sent.flatMap(CircuitBreakerRegistry.hostKey(for:)) ?? ""
        until[key] = Swift.max(until[key] ?? now, now + asked)
    }

    /// The time before which no attempt may reach the host `request` goes to; `nil` when that host asked for none.
    func until(for request: URLRequest) -> Duration? {
        guard !until.isEmpty else { return nil }
        return until[CircuitBreakerRegistry.hostKey(for: request) ?? ""]
    }
}
