import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The state of one logical request as it goes through the pipeline, attempt after attempt.
///
/// Two words only: an attempt comes to an ``AttemptResult`` (what happened: success, failure and why, cancelled, cut
/// short by the deadline), and the run turns it into an ``AttemptDecision`` (what follows: succeeded, retry after a
/// delay, failed, cancelled), which the observers are told and `execute()` acts on. The error a failed request ends with is kept in
/// `failure`.
///
/// Memory: a task keeps the memory of its deepest frames (in slabs of about 1 KiB) until it ends, so a request waiting
/// in backoff costs the high-water mark of the pipeline's async frames. Hence the shape: the async functions below only
/// carry references and small enums across their awaits, and everything between awaits happens in synchronous
/// helpers kept out of line (`@inline(never)`), whose temporaries live on the thread's stack instead of the task's.
/// `Benchmarks` section 4 measures it; `Docs/Performance.md` tells how to read the frames' sizes.
///
/// Its methods are all `mutating`, also those that change nothing: a mutating method gets the run by reference, where a
/// non-mutating one gets a copy of it, which an async caller keeps in its frame.
struct RequestRun {
    let plan: RequestPlan
    var attempts: [Attempt] = []
    var lastSentRequest: URLRequest?
    /// The request adapters start from once a retrier answered `retryWithRequest`; `nil`: the caller's.
    var base: URLRequest?
    /// When the request started, on the session's clock: read when the run is made, just before it executes.
    var start: Duration
    /// The error the request ends with, once a decision is ``AttemptDecision/failed``.
    var failure: ReboundError?

    init(_ plan: RequestPlan) {
        self.plan = plan
        self.start = plan.session.clock.now()
    }

    /// How an attempt the deadline cut short is recorded.
    static let deadlineCutShort = ReboundError.Reason.transportFailed(error: URLError(.timedOut))

    /// Runs the request to its end and tells the observers how it ended, on every path: attempt, decide what follows,
    /// tell the observers, act.
    ///
    /// The steps live in files of their own: one attempt (adapt, send, follow redirects, validate) in
    /// `RequestPlan+Attempt.swift` and `RequestPlan+Redirects.swift`; the decision after a failure (the retriers, the
    /// gates, the deadline) in `RequestRun+Decide.swift` and `RequestPlan+Retriers.swift`; what the observers hear in
    /// `RequestRun+Observers.swift`.
    ///
    /// Memory: the attempt, the decision and the backoff run one after the other in frames of their own
    /// (``decision(after:)`` is inlined here), so a request waiting in backoff costs the largest of the three paths, not
    /// their sum, and this frame, which lasts the whole request, stays small.
    @inline(__always)
    mutating func execute() async throws -> Response {
        do {
            while true {
                if Task.isCancelled { throw CancellationError() }
                let result = await attemptOnce()
                let decision = await decision(after: result)
                let observed = settle(result, decision: decision)
                // Nothing that observes, no call: each of these makes a frame of its own.
                if observed { await report(result, decision: decision) }
                switch decision {
                case .succeeded:
                    if observed { await finish(.succeeded) }
                    if attempts.count > 1 { endAccounts() }
                    return response(to: result)
                case .cancelled:
                    throw CancellationError()
                case .failed:
                    throw ending()
                case .retry(let delay):
                    try await backOff(for: delay)
                }
            }
        } catch {
            // A `ReboundError` is the one `fail(with:)` kept; nothing else is thrown but cancellation. Only the decision
            // crosses the await, not the error.
            let decision: AttemptDecision = error is ReboundError ? .failed : .cancelled
            if hasObservers() { await finish(decision) }
            endAccounts()
            if decision == .failed { throw ending() }
            throw CancellationError()
        }
    }

    /// What follows an attempt: for a failure, what the retriers, the gates and the deadline say.
    @inline(__always)
    mutating func decision(after result: AttemptResult) async -> AttemptDecision {
        switch result.kind {
        case .success: .succeeded
        case .cancelled: .cancelled
        case .deadlineReached: deadlineReachedInAttempt()
        case .failure: await afterFailure(result)
        }
    }

    /// Sleeps the backoff before a retry on the session's clock; a breaker that granted the retry ends the wait if it
    /// opens meanwhile.
    ///
    /// Out of line: inlined, its state would make the frame of `Session.send` 144 bytes larger for the whole request.
    ///
    /// - Throws: `CancellationError` when the task is cancelled, or the ``ReboundError`` the request ends with when a
    ///   gate ended the wait.
    @inline(never)
    mutating func backOff(for delay: Duration) async throws {
        guard delay > .zero else { return }
        if let wait = plan.registered?.backoffWait {
            switch await wait.sleep(for: delay, on: plan.session.clock) {
            case .slept: return
            case .cancelled: throw CancellationError()
            case .ended(let error): throw endedInBackoff(by: error)
            }
        }
        do {
            try await plan.session.clock.sleep(delay)
        } catch {
            // Clocks throw from `sleep` only when the sleeping task is cancelled.
            throw CancellationError()
        }
    }

    /// Makes one attempt and records it; a request to hedge makes a hedged round instead (``hedgedAttempts(_:)``).
    @inline(never)
    mutating func attemptOnce() async -> AttemptResult {
        if let hedging = plan.hedging, !plan.original.hasBodyStream { return await hedgedAttempts(hedging) }
        let number = attempts.count + 1
        // The first attempt starts with the request, whose start was just read.
        let attemptStart = number == 1 ? start : plan.session.clock.now()
        // Without a deadline or an attempt timeout, no race and no frame for one.
        let result: AttemptResult
        if plan.isRaced {
            result = await plan.attempt(nextBase(), number: number, startedAfter: attemptStart - start)
        } else {
            result = await plan.attempt(nextBase(), number: number)
        }
        record(result, number: number, since: attemptStart)
        return result
    }

    /// The request the next attempt's adapters start from: for the first attempt, a request equal to the caller's with
    /// storage of its own if the session made one (``RegisteredRoles/takeUnshared()``), so that an adapter setting a
    /// header changes it in place (the caller's request shares its storage, and Foundation copies shared storage on
    /// the first change: about 2 µs on Linux, a copy that normalizes the method again); otherwise `base`, or the
    /// caller's request when no retrier replaced it.
    /// Returned owned, so that the unshared request's only reference travels to the adapters. (Kept with the
    /// registrations rather than here: 16 bytes more in this struct would grow the frame that lasts the whole
    /// request.)
    @inline(never)
    mutating func nextBase() -> URLRequest {
        if attempts.isEmpty, let request = plan.registered?.takeUnshared() { return request }
        return base ?? plan.originalRequest
    }

    /// Records an attempt, the `hedge`-th of its round.
    @inline(never)
    mutating func record(_ result: AttemptResult, number: Int, since attemptStart: Duration, hedge: Int = 0) {
        let duration = plan.session.clock.now() - attemptStart
        let failure: ReboundError.Reason? =
            switch result.kind {
            case .failure(let reason): reason
            case .deadlineReached: Self.deadlineCutShort
            // A cancelled attempt is recorded too, for the observers; the request ends with `CancellationError`.
            case .success, .cancelled: nil
            }
        if case .failure = result.kind, let sent = result.sent { lastSentRequest = sent }
        let attempt = Attempt(
            number: number, request: result.sent, firstHop: result.firstHop, responseHead: result.response,
            failure: failure, duration: duration, hedge: hedge)
        // The first attempt makes an array of one, as a literal does: appending to an empty array takes a slower,
        // colder path (a generic copy and a metadata lookup).
        if attempts.isEmpty {
            attempts = [attempt]
        } else {
            attempts.append(attempt)
        }
    }

    /// The response of a successful attempt.
    @inline(never)
    mutating func response(to result: AttemptResult) -> Response {
        guard let sent = result.sent, let response = result.response else {
            preconditionFailure("a successful attempt has a request and a response")
        }
        return Response(
            data: result.data ?? Data(), head: response, request: sent,
            original: plan.original, attempts: attempts)
    }
}
