/// The circuit breaker's state machine: pure, with the time passed in, so every transition is testable in isolation.
///
/// The ``CircuitBreaker`` class keeps one behind its lock. Times are durations since the breaker's clock origin.
struct CircuitBreakerMachine: Sendable {
    enum Phase: Sendable, Equatable {
        case closed
        case open(until: Duration)
        /// The trial calls in flight, each with the time its permit was issued, and how many trials succeeded in a
        /// row so far.
        case halfOpen(trials: [Trial], successes: Int)
        case forcedOpen
        case forcedClosed
    }

    /// A trial call in flight: its permit's number and when it was let through.
    struct Trial: Sendable, Equatable {
        let id: Int
        let issued: Duration
    }

    /// A permit to send one attempt, handed back with the attempt's verdict.
    struct Permit: Sendable, Hashable {
        /// Outcomes of attempts admitted before the last transition say nothing about the current phase.
        let generation: Int
        /// The trial's number, for a trial call of a half-open breaker; `nil` otherwise.
        let trial: Int?

        var isTrial: Bool { trial != nil }

        /// A permit whose outcome is never counted: of no generation the machine enters.
        static let uncounted = Permit(generation: -1, trial: nil)
    }

    enum Admission: Sendable, Equatable {
        case admitted(Permit)
        /// `retryAfter` is when the breaker next lets a call through; `nil` when that is unknown (forced open, or
        /// half-open with every trial call in flight).
        case rejected(retryAfter: Duration?)
    }

    let configuration: CircuitBreaker.Configuration
    private(set) var phase: Phase = .closed
    private(set) var generation = 0
    private var consecutiveFailures = 0
    /// How many times the breaker opened since it was last closed: what ``CircuitBreaker/Configuration/breakDuration``
    /// is asked about.
    private(set) var openings = 0
    private var nextTrial = 0
    private var window: FailureWindow
    /// The calls the slow-call rule reads, a slow one counted as a failed one; empty without a rule.
    private var slowCalls: FailureWindow

    init(configuration: CircuitBreaker.Configuration) {
        self.configuration = configuration
        self.window = FailureWindow(configuration.tripCondition)
        self.slowCalls = FailureWindow(counting: configuration.slowCallRule?.window)
    }

    /// The state the phase is in, kept beside it: reading it (on every update) and asking whether the breaker is
    /// closed then need no look into the phase, an enum whose payloads make each switch on it a call into the runtime.
    private(set) var state: CircuitBreaker.State = .closed

    private static func state(of phase: Phase) -> CircuitBreaker.State {
        switch phase {
        case .closed: .closed
        case .open: .open
        case .halfOpen: .halfOpen
        case .forcedOpen: .forcedOpen
        case .forcedClosed: .forcedClosed
        }
    }

    /// Whether the machine decides at `now` as a new one would: closed (not forced), no failure or slow call counted,
    /// no opening remembered.
    func isAtRest(at now: Duration) -> Bool {
        guard state == .closed, consecutiveFailures == 0, openings == 0 else { return false }
        var time = LazyTime { now }
        return window.totals(time: &time).failures == 0 && slowCalls.totals(time: &time).failures == 0
    }

    /// The state at `now`, without moving anything: an open breaker whose time is up reads as half-open, and becomes
    /// half-open when the next attempt is admitted.
    func state(at now: Duration) -> CircuitBreaker.State {
        if case .open(let until) = phase, now >= until { return .halfOpen }
        return state
    }

    /// Whether an attempt is admitted now without a trial and without changing anything: closed, or forced closed.
    var admitsFreely: Bool { state == .closed || state == .forcedClosed }

    /// Moves an open breaker whose time is up to half-open.
    mutating func advance(time: inout LazyTime, transitions: inout [CircuitBreaker.State]) {
        if case .open(let until) = phase, time.now() >= until {
            enter(.halfOpen(trials: [], successes: 0), transitions: &transitions)
        }
    }

    /// Whether a retry is refused now: only a closed breaker grants retries. An open breaker would refuse the retry,
    /// or let it compete for a trial whose place a fresh request should have; a half-open one keeps its trials for
    /// fresh requests, but for the retry of a request whose own trial told the breaker nothing (`retriesTrial`: the
    /// device's network was down, a later part stopped it), which may take the trial again while one is free. The
    /// refusal carries the time until the breaker lets a trial through (`nil` when forced open or half-open), or there
    /// is no refusal at all.
    func refusalOfRetry(time: inout LazyTime, retriesTrial: Bool = false) -> Duration?? {
        if admitsFreely { return nil }
        return switch phase {
        case .closed, .forcedClosed: nil
        case .open(let until): .some(max(until - time.now(), .zero))
        case .halfOpen(let trials, _) where retriesTrial && trials.count < configuration.halfOpenTrialCalls: nil
        case .forcedOpen, .halfOpen: .some(nil)
        }
    }

    mutating func admit(time: inout LazyTime, transitions: inout [CircuitBreaker.State]) -> Admission {
        if admitsFreely { return .admitted(Permit(generation: generation, trial: nil)) }
        advance(time: &time, transitions: &transitions)
        switch phase {
        case .closed, .forcedClosed:
            return .admitted(Permit(generation: generation, trial: nil))
        case .open(let until):
            return .rejected(retryAfter: until - time.now())
        case .forcedOpen:
            return .rejected(retryAfter: nil)
        case .halfOpen(var trials, let successes):
            let now = time.now()
            // A trial whose outcome never came gives its place up, so that the breaker cannot stay half-open for good.
            trials.removeAll { now - $0.issued >= configuration.trialTimeout }
            guard trials.count < configuration.halfOpenTrialCalls else {
                phase = .halfOpen(trials: trials, successes: successes)
                return .rejected(retryAfter: nil)
            }
            nextTrial += 1
            trials.append(Trial(id: nextTrial, issued: now))
            phase = .halfOpen(trials: trials, successes: successes)
            return .admitted(Permit(generation: generation, trial: nextTrial))
        }
    }

    /// Counts the verdict of an attempt sent with `permit`, which spent `timeOnWire` on the wire (`nil`: unknown, or
    /// never sent), for the slow-call rule.
    ///
    /// `openAtLeast` lengthens the open time when this verdict trips the breaker (a `Retry-After` the server sent).
    mutating func record(
        _ verdict: CircuitBreaker.Verdict, permit: Permit, timeOnWire: Duration? = nil, time: inout LazyTime,
        openAtLeast: Duration = .zero, transitions: inout [CircuitBreaker.State]
    ) {
        // An attempt admitted before the last transition says nothing about the phase the breaker is in now.
        guard permit.generation == generation else { return }
        let slow = configuration.slowCallRule?.isSlow(timeOnWire) ?? false
        if state == .closed {
            recordWhileClosed(verdict, slow: slow, time: &time, openAtLeast: openAtLeast, transitions: &transitions)
            return
        }
        switch phase {
        case .halfOpen(var trials, let successes):
            switch verdict {
            case .success where !slow:
                // Enough trials succeeded in a row: the upstream is back. Otherwise the trial's place goes to the next
                // call, which must succeed too.
                if successes + 1 >= configuration.trialSuccessesToClose {
                    enter(.closed, transitions: &transitions)
                } else {
                    trials.removeAll { $0.id == permit.trial }
                    phase = .halfOpen(trials: trials, successes: successes + 1)
                }
            case .success, .failure:
                // A slow trial is no sign that the upstream is back: it opens the breaker again, as a failed one does.
                trip(time: &time, openAtLeast: openAtLeast, transitions: &transitions)
            case .ignored:
                // The trial told us nothing: give its place back so that another call can try.
                trials.removeAll { $0.id == permit.trial }
                phase = .halfOpen(trials: trials, successes: successes)
            }
        case .closed:
            recordWhileClosed(verdict, slow: slow, time: &time, openAtLeast: openAtLeast, transitions: &transitions)
        case .open, .forcedOpen, .forcedClosed:
            // Open: nothing admitted in this generation can report. Forced closed: failures never trip it.
            return
        }
    }

    /// Counts an attempt's verdict while closed: a failure, or a share of slow calls, may trip the breaker.
    private mutating func recordWhileClosed(
        _ verdict: CircuitBreaker.Verdict, slow: Bool, time: inout LazyTime, openAtLeast: Duration,
        transitions: inout [CircuitBreaker.State]
    ) {
        let failed: Bool
        switch verdict {
        case .ignored:
            return
        case .success:
            consecutiveFailures = 0
            failed = false
        case .failure:
            consecutiveFailures += 1
            failed = true
        }
        window.record(failed: failed, time: &time)
        slowCalls.record(failed: slow, time: &time)
        if (failed && failuresTrip(time: &time)) || slowCallsTrip(time: &time) {
            trip(time: &time, openAtLeast: openAtLeast, transitions: &transitions)
        }
    }

    mutating func forceOpen(transitions: inout [CircuitBreaker.State]) {
        enter(.forcedOpen, transitions: &transitions)
    }

    mutating func forceClosed(transitions: inout [CircuitBreaker.State]) {
        enter(.forcedClosed, transitions: &transitions)
    }

    mutating func reset(transitions: inout [CircuitBreaker.State]) {
        enter(.closed, transitions: &transitions)
    }

    /// Whether the failures counted meet the trip condition.
    private func failuresTrip(time: inout LazyTime) -> Bool {
        switch configuration.tripCondition {
        case .consecutiveFailures(let threshold):
            return consecutiveFailures >= threshold
        case .failureRate(let rate, let counted, let minimumCalls):
            return Self.reaches(rate, in: window, over: counted, minimumCalls: minimumCalls, time: &time)
        }
    }

    /// Whether the slow calls counted reach the slow-call rule's share; never without a rule.
    private func slowCallsTrip(time: inout LazyTime) -> Bool {
        guard let rule = configuration.slowCallRule else { return false }
        return Self.reaches(rule.rate, in: slowCalls, over: rule.window, minimumCalls: rule.minimumCalls, time: &time)
    }

    /// Whether the share of failures (or slow calls) `window` counted over `counted` reaches `rate`, once it holds
    /// `minimumCalls` calls; a count window shorter than that is read once it is full, as resilience4j reads it.
    private static func reaches(
        _ rate: Double, in window: FailureWindow, over counted: CircuitBreaker.Window, minimumCalls: Int,
        time: inout LazyTime
    ) -> Bool {
        let minimumCalls = if case .count(let size) = counted { Swift.min(minimumCalls, size) } else { minimumCalls }
        let (calls, failures) = window.totals(time: &time)
        return calls >= minimumCalls && Double(failures) >= rate * Double(calls)
    }

    private mutating func trip(time: inout LazyTime, openAtLeast: Duration, transitions: inout [CircuitBreaker.State]) {
        let now = time.now()
        let duration = configuration.breakDuration.delay(forRetryCount: openings)
        enter(.open(until: now + max(duration, openAtLeast)), transitions: &transitions)
        openings += 1
    }

    /// Enters `next`, starting a new generation and clearing the counts, and notes the transition.
    private mutating func enter(_ next: Phase, transitions: inout [CircuitBreaker.State]) {
        let before = state
        phase = next
        state = Self.state(of: next)
        generation += 1
        consecutiveFailures = 0
        // Closing (or a reset, or forcing) starts the break durations over; a failed trial's opening does not.
        switch next {
        case .open, .halfOpen: break
        case .closed, .forcedOpen, .forcedClosed: openings = 0
        }
        window = FailureWindow(configuration.tripCondition)
        slowCalls = FailureWindow(counting: configuration.slowCallRule?.window)
        if state != before { transitions.append(state) }
    }
}

/// The calls and failures a failure rate is measured over, or the calls and slow calls of a slow-call rule.
struct FailureWindow: Sendable {
    private enum Storage: Sendable {
        case none
        /// A ring of the last calls' results.
        case count(ring: [Bool], next: Int, filled: Int, failures: Int)
        /// Ten buckets, each a tenth of the window wide, holding the calls and failures that ended in it.
        case time(width: Duration, buckets: [Bucket])
    }

    struct Bucket: Sendable {
        var slice: Int64 = .min
        var calls = 0
        var failures = 0
    }

    private static let bucketCount = 10
    private var storage: Storage

    /// The window a trip condition reads: none for consecutive failures.
    init(_ condition: CircuitBreaker.TripCondition) {
        switch condition {
        case .consecutiveFailures: self.init(counting: nil)
        case .failureRate(_, let window, _): self.init(counting: window)
        }
    }

    /// A window of the calls of `window`; `nil` for none, which counts nothing.
    init(counting window: CircuitBreaker.Window?) {
        switch window {
        case nil:
            storage = .none
        case .count(let size):
            storage = .count(ring: Array(repeating: false, count: size), next: 0, filled: 0, failures: 0)
        case .time(let duration):
            storage = .time(
                width: duration / Self.bucketCount, buckets: Array(repeating: Bucket(), count: Self.bucketCount))
        }
    }

    mutating func record(failed: Bool, time: inout LazyTime) {
        switch storage {
        case .none:
            return
        case .count(var ring, let next, let filled, var failures):
            // The storage lets go of the ring first, so that the ring is changed in place rather than copied.
            storage = .none
            if filled == ring.count, ring[next] { failures -= 1 }
            ring[next] = failed
            if failed { failures += 1 }
            storage = .count(
                ring: ring, next: (next + 1) % ring.count, filled: min(filled + 1, ring.count), failures: failures)
        case .time(let width, var buckets):
            storage = .none
            let slice = Self.slice(of: time.now(), width: width)
            let index = Int(slice.magnitude % UInt64(Self.bucketCount))
            if buckets[index].slice != slice { buckets[index] = Bucket(slice: slice) }
            buckets[index].calls += 1
            if failed { buckets[index].failures += 1 }
            storage = .time(width: width, buckets: buckets)
        }
    }

    func totals(time: inout LazyTime) -> (calls: Int, failures: Int) {
        switch storage {
        case .none:
            return (0, 0)
        case .count(_, _, let filled, let failures):
            return (filled, failures)
        case .time(let width, let buckets):
            let current = Self.slice(of: time.now(), width: width)
            let live = buckets.filter { $0.slice > current - Int64(Self.bucketCount) && $0.slice <= current }
            return (live.reduce(0) { $0 + $1.calls }, live.reduce(0) { $0 + $1.failures })
        }
    }

    private static func slice(of now: Duration, width: Duration) -> Int64 {
        let ratio = now / width
        guard ratio.isFinite else { return 0 }
        return Int64(max(min(ratio.rounded(.down), 1e18), -1e18))
    }
}

/// The breaker's clock as one update reads it: on first use, and the same value after that. A closed breaker admits an
/// attempt and counts a success without reading it (unless it counts failures or slow calls in a time window).
struct LazyTime {
    private let read: () -> Duration
    private var value: Duration?

    init(_ read: @escaping () -> Duration) {
        self.read = read
    }

    /// The time, read on first use.
    mutating func now() -> Duration {
        if let value { return value }
        let now = read()
        value = now
        return now
    }
}
