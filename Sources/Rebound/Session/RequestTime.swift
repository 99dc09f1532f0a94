/// When a request started and when it must end, on the session's clock: the one record of its deadline, and the one
/// rule for how long each awaited step of it may take.
///
/// Every step the request awaits (an attempt, the retriers' decision) is given the time left, and a backoff that would
/// end after the deadline is not slept: the request ends at its deadline even when awaited work ignores cancellation.
struct RequestTime: Sendable {
    /// When the request started.
    let start: Duration
    /// When the request must end; `nil` without a deadline.
    let end: Duration?
    /// How long one attempt may take at most; `nil` for no limit but the deadline.
    let attemptTimeout: Duration?

    init(start: Duration, deadline: Duration?, attemptTimeout: Duration?) {
        self.start = start
        self.end = deadline.map { start + $0 }
        self.attemptTimeout = attemptTimeout
    }

    /// The time left before the deadline, `now`; `nil` without a deadline.
    func remaining(now: Duration) -> Duration? {
        end.map { $0 - now }
    }

    /// How long an attempt that starts `now` may take: the time left, or the attempt timeout when it comes first;
    /// `nil` for no limit.
    func attemptLimit(now: Duration) -> TimeLimit? {
        let remaining = remaining(now: now)
        if let attemptTimeout, remaining.map({ attemptTimeout < $0 }) ?? true { return .attemptTimeout(attemptTimeout) }
        return remaining.map(TimeLimit.deadline)
    }

    /// Whether a wait of `delay` from `now` ends by the deadline.
    func allows(_ delay: Duration, from now: Duration) -> Bool {
        end.map { now + delay <= $0 } ?? true
    }

    /// Whether the deadline is still to come, `now`.
    func hasTimeLeft(now: Duration) -> Bool {
        end.map { now < $0 } ?? true
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
