import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a hedged round keeps while its loop (`HedgingExecutor.execute()`) runs: the attempts in flight, the questions
/// to the retriers still unanswered and the hedging timer, each a task of its own that reports through one stream,
/// which the loop reads in the order the reports came; the attempts that ended, recorded for the machine; the failures
/// the retriers declined for the attempts made; and the request a retrier moved the request to.
///
/// The tasks are unstructured (started through `Spawn`, like a race's), so that the loop goes on at once when an
/// attempt wins, even if a loser ignores cancellation: the round's end cancels the loser and ends the stream, and the
/// loser's report, if it ever comes, is dropped. The loop alone reads and changes a round; only the handoffs are
/// written by the attempts' tasks.
struct HedgeRound {
    /// What the round's loop hears, in the order it happened.
    enum Report: Sendable {
        /// Attempt `number` handed `request` to the transport.
        case sent(number: Int, request: URLRequest)
        /// Attempt `number` ended.
        case finished(number: Int, result: AttemptResult)
        /// The retriers answered about attempt `number`'s failure: `.answered`, or how the question ended without one.
        case answered(number: Int, answer: RequestMachine.RetriersAnswer)
        /// Timer `timer` fired: the hedging delay, or the quiet a failure asked for, passed.
        case tick(timer: Int)
    }

    /// An attempt in flight: which hedge of the round it is (0 for the first attempt), the request its adapters start
    /// from, when it started, and its task.
    struct InFlight {
        let hedge: Int
        let base: URLRequest
        let start: Duration
        let task: Task<Void, Never>
    }

    /// The newest request the round handed to the transport: attempt `number`'s, adapted from `base`.
    struct Sent {
        let number: Int
        let request: URLRequest
        let base: URLRequest
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

    /// Where the round's tasks report.
    let reporter: AsyncStream<Report>.Continuation
    /// The attempts in flight, by number.
    var inFlight: [Int: InFlight] = [:]
    /// The failures the retriers are asked about, by number, until they answer, with the task that asks them (`nil`
    /// for a failure that is never retried, answered at once).
    var asking: [Int: (failed: AttemptResult, task: Task<Void, Never>?)] = [:]
    /// The round's attempts that ended, in the order the round recorded them: the machine adds them to its records when
    /// the round ends.
    var records: [RequestMachine.Recorded] = []
    /// The request a retrier moved the request to mid-round (`retryWithRequest`): the next hedges start from it, and so
    /// does the request's next attempt after the round.
    private(set) var target: URLRequest?
    /// The number of the first attempt that starts from `target`.
    private(set) var firstFromTarget = 1
    /// The times, on the session's clock, before which the hosts that answered the round's failures asked that no
    /// attempt reach them (a 429's or 503's `Retry-After`, as the chain's retry policies read it): no hedge to such a
    /// host starts before its time, nor the request's retry after the round.
    private(set) var quiet = HostQuiet()
    /// The failures the retriers declined for the attempts the request made (a retry limit, a repeated failure), or
    /// would retry with no attempt left in the hedging settings, while others were in flight, by number: told as
    /// losers when the round ends.
    var declined: [Int: (failed: AttemptResult, answer: RetryResult)] = [:]
    /// The failures whose retry the retriers granted while others were in flight, by number, until the request goes on
    /// with an attempt that was sent: told then as retried without delay, or as losers when the round ends first.
    var granted: [Int: (failed: AttemptResult, answer: RetryResult)] = [:]
    /// The timer set last, if it has not fired: a tick of any other is dropped.
    var timer: (id: Int, task: Task<Void, Never>)?
    /// How many timers were set, which numbers the next.
    private var timers = 0
    /// How many attempts the request recorded before the round.
    let recordedBefore: Int
    /// What each attempt handed to the transport, and when; written from the attempts' tasks as they hand it over,
    /// so that a loser's record says whether it was sent, even when the round ended before its report was read.
    let handoffs = Locked<[Int: Handoff]>([:])

    /// A round whose tasks report to `reporter`, of a request that recorded `recordedBefore` attempts before it.
    init(reporter: AsyncStream<Report>.Continuation, recordedBefore: Int) {
        self.reporter = reporter
        self.recordedBefore = recordedBefore
    }

    /// How many attempts the request made so far, ended or in flight: the number of the one started last.
    var attemptsMade: Int { recordedBefore + records.count + inFlight.count }

    /// Moves the record of attempt `number` after every other: the attempt that ends the round, recorded when the
    /// retriers were asked about it, goes after the attempts the round cancelled, as the one the request goes on with.
    mutating func moveLast(attempt number: Int) {
        guard let index = records.lastIndex(where: { $0.attempt.number == number }) else { return }
        records.append(records.remove(at: index))
    }

    /// Sets a timer that reports ``Report/tick(timer:)`` after `delay` on `clock`, in place of the one set before;
    /// with no delay, only stops the one set before.
    mutating func setTimer(after delay: Duration?, clock: SessionClock) {
        timer?.task.cancel()
        timer = nil
        guard let delay else { return }
        timers += 1
        let (id, reporter) = (timers, reporter)
        let task = Spawn.task {
            do {
                try await clock.sleep(delay)
            } catch {
                return  // Cancelled: the round ended, or the timer was replaced.
            }
            reporter.yield(.tick(timer: id))
        }
        timer = (id, task)
    }

    /// Moves the request to `request`, which the retriers gave for a failure while others were in flight: the next
    /// attempt starts from it.
    mutating func move(to request: URLRequest) {
        (target, firstFromTarget) = (request, attemptsMade + 1)
    }

    /// Notes that a failure of `sent`, at `now`, asked that no attempt reach its host for `asked`.
    mutating func noteQuiet(_ asked: Duration, askedBy sent: URLRequest?, now: Duration) {
        quiet.note(asked, askedBy: sent, now: now)
    }

    /// The request the hedge gates judge the round's next hedge by: the newest request handed to the transport. After a
    /// retrier moved the request mid-round, and until an attempt from the new request was sent, the hedge starts from
    /// that request: it is judged as the new request, with the header fields the adapters gave the newest attempt that
    /// it does not set (an idempotency key an adapter added), as going to its host; or, where an adapter sent the
    /// newest attempt to another host than its own request named (and not the endpoint group `router`, which routes
    /// that request and so moved it knowingly), as going where that attempt went, its host not being known before its
    /// adapters run. The hedge is sent only if its own adapted request may be repeated
    /// (`RequestPlan.attempt(_:number:sending:onSend:repeatedOnly:)`).
    func hedgeToJudge(after sent: Sent, router: (any RetryRouter)?) -> URLRequest {
        guard let target, sent.number < firstFromTarget else { return sent.request }
        var judged = target
        // What the adapters gave the newest attempt they give the hedge too; a field the caller wrote on the old
        // request (its own idempotency key) the new request does not carry.
        for (name, value) in sent.request.allHTTPHeaderFields ?? [:]
        where sent.base.value(forHTTPHeaderField: name) != value && judged.value(forHTTPHeaderField: name) == nil {
            judged.setValue(value, forHTTPHeaderField: name)
        }
        let movedByAdapter =
            CircuitBreakerRegistry.hostKey(for: sent.request) != CircuitBreakerRegistry.hostKey(for: sent.base)
        let routed = router.map { $0.placement(of: sent.request) != nil && $0.placement(of: sent.base) != nil } ?? false
        if movedByAdapter, !routed { judged.url = sent.request.url }
        return judged
    }

    /// How a round ends with nothing in flight and no question open, its last attempt a hedge that never left (told as
    /// a loser; it keeps its number): as though the hedge had not started, with the failure the round recorded last of
    /// those it sent and the retriers' answer about it (a retry they granted, or a failure they declined), or else
    /// with the last it recorded.
    mutating func endingWithNothingInFlight() -> Ending {
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
    var untold: [Int: AttemptResult] {
        let answered = declined.merging(granted) { declined, _ in declined }.mapValues(\.failed)
        return asking.mapValues(\.failed).merging(answered) { asked, _ in asked }
    }

    /// Drops attempt `number` from the failures not told yet: the round ends with it.
    mutating func forget(_ number: Int) {
        (asking[number], declined[number], granted[number]) = (nil, nil, nil)
    }

    /// What attempt `number` handed to the transport and when, if it did.
    func handoff(of number: Int) -> Handoff? {
        handoffs.withLock { $0[number] }
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
