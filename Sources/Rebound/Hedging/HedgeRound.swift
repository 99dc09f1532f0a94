import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a hedged round's loop hears, in the order it happened.
enum HedgeEvent: Sendable {
    /// Attempt `number` handed its request to the transport.
    case sent(number: Int, handoff: Handoff)
    /// Attempt `number` ended.
    case finished(number: Int, result: AttemptResult)
    /// The retriers answered about attempt `number`'s failure: `.answered`, or how the question ended without one.
    case answered(number: Int, answer: RequestMachine.RetriersAnswer)
    /// The hedging delay since the last hedge started passed.
    case tick
}

/// The attempts of one hedged round, the questions to the retriers about its failures and its timer, each in a task of
/// its own, and the queue of what they report to the round's loop (`HedgingExecutor.execute(from:in:)`), which reads
/// them one at a time.
///
/// The tasks are unstructured (started through `Spawn`, like a race's), so that the loop goes on at once when an
/// attempt wins, even if a loser ignores cancellation: the loser is cancelled and its report, if it ever comes, is
/// dropped. Thread-safe: the tasks post from wherever they run.
final class HedgeRound: Sendable {
    private struct State: Sendable {
        var events: [HedgeEvent] = []
        var waiter: CheckedContinuation<HedgeEvent?, Never>?
        var tasks: [Int: Task<Void, Never>] = [:]
        /// The questions to the retriers still unanswered, by the number of the attempt they are about.
        var questions: [Int: Task<Void, Never>] = [:]
        var timer: Task<Void, Never>?
        /// How many timers were set: only the newest one's tick counts (one replaced as it fired is dropped).
        var timers = 0
        /// The requests the attempts in flight handed to the transport, and when.
        var sent: [Int: Handoff] = [:]
        /// The round ended (or its caller was cancelled): nothing is queued any more.
        var ended = false
    }

    private let state = Locked(State())

    /// Starts attempt `number` in a task of its own; `attempt` reports when it hands its request to the transport
    /// through the function it is given.
    func start(
        _ number: Int,
        _ attempt: @escaping @Sendable (_ onSend: @escaping @Sendable (Handoff) -> Void) async -> AttemptResult
    ) {
        let task = Spawn.task {
            let result = await attempt { handoff in self.post(.sent(number: number, handoff: handoff)) }
            self.post(.finished(number: number, result: result))
        }
        let ended = state.withLock { state -> Bool in
            if !state.ended { state.tasks[number] = task }
            return state.ended
        }
        if ended { task.cancel() }
    }

    /// Asks the retriers about attempt `number`'s failure in a task of its own, so that the round goes on while they
    /// decide; `question` returns their answer.
    func ask(_ number: Int, _ question: @escaping @Sendable () async -> RequestMachine.RetriersAnswer) {
        let task = Spawn.task {
            let answer = await question()
            self.post(.answered(number: number, answer: answer))
        }
        let ended = state.withLock { state -> Bool in
            if !state.ended { state.questions[number] = task }
            return state.ended
        }
        if ended { task.cancel() }
    }

    /// Posts ``HedgeEvent/tick`` after `delay` on `clock`, in place of any tick still to come.
    func tick(after delay: Duration, clock: SessionClock) {
        let id = state.withLock { state in
            state.timers += 1
            return state.timers
        }
        let timer = Spawn.task {
            do {
                try await clock.sleep(delay)
            } catch {
                return  // Cancelled: the round ended, or a hedge started and set the next tick.
            }
            self.post(.tick, timer: id)
        }
        let replaced = state.withLock { state -> Task<Void, Never>? in
            if state.ended || state.timers != id { return timer }
            defer { state.timer = timer }
            return state.timer
        }
        replaced?.cancel()
    }

    /// Drops the tick still to come and one already queued, if any: the next delay counts from a later moment.
    func cancelTick() {
        let timer = state.withLock { state -> Task<Void, Never>? in
            state.timers += 1
            state.events.removeAll {
                if case .tick = $0 { return true }
                return false
            }
            defer { state.timer = nil }
            return state.timer
        }
        timer?.cancel()
    }

    /// The next event, waiting for one; `nil` once the calling task is cancelled.
    func next() async -> HedgeEvent? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> HedgeEvent?? in
                    if state.ended { return .some(nil) }
                    if !state.events.isEmpty { return state.events.removeFirst() }
                    state.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                state.ended = true
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: nil)
        }
    }

    /// How many events wait for the loop; for tests.
    var queuedEvents: Int { state.withLock { $0.events.count } }

    /// What attempt `number` handed to the transport and when, if it did.
    func handoff(of number: Int) -> Handoff? {
        state.withLock { $0.sent[number] }
    }

    /// Ends the round: cancels the attempts still in flight, the questions still unanswered and the timer, and drops
    /// whatever they report later.
    func end() {
        let tasks = state.withLock { state -> [Task<Void, Never>] in
            state.ended = true
            state.events = []
            let tasks = Array(state.tasks.values) + Array(state.questions.values) + (state.timer.map { [$0] } ?? [])
            state.tasks = [:]
            state.questions = [:]
            state.timer = nil
            return tasks
        }
        for task in tasks { task.cancel() }
    }

    /// Queues `event` for the loop, or hands it to the loop waiting; a tick from `timer`, if that is not the newest
    /// timer, is dropped.
    func post(_ event: HedgeEvent, timer: Int? = nil) {
        let waiter = state.withLock { state -> CheckedContinuation<HedgeEvent?, Never>? in
            // Kept even after the end: a loser's record says whether it was sent.
            if case .sent(let number, let handoff) = event { state.sent[number] = handoff }
            guard !state.ended, timer == nil || timer == state.timers else { return nil }
            switch event {
            case .sent: break
            case .finished(let number, _): state.tasks[number] = nil
            case .answered(let number, _): state.questions[number] = nil
            case .tick: state.timer = nil
            }
            guard let waiter = state.waiter else {
                state.events.append(event)
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume(returning: event)
    }
}
