/// The credential and its refresh as a value: pure transitions, each taking an event (and the time, where it counts)
/// and answering with the effect the caller carries out after releasing its lock.
///
/// ``AuthenticationInterceptor`` keeps one behind its lock; its waiters are continuations and its timers tasks. The
/// machine is generic over both, so that tests drive every transition with plain values, without tasks or clocks.
/// Times are durations since the interceptor's clock origin.
///
/// One refresh runs at a time (`Phase`). Every refresh started is numbered, so that the result or the timeout of one
/// that already ended is told apart from the running one's: a refresh that timed out is *overdue* until its
/// authenticator call returns, and its late result is dropped.
struct AuthenticationRefreshMachine<Credential: Sendable, Waiter: Sendable, Timer: Sendable>: Sendable {
    /// Whether a refresh is running, and who waits for it.
    enum Phase: Sendable {
        /// No refresh runs: the next request that needs one starts one.
        case idle
        /// One refresh runs, and requests wait for its result.
        case refreshing(Refresh)
    }

    /// The running refresh: its number, the requests waiting for it and the timer that ends it at its time limit.
    struct Refresh: Sendable {
        /// The refresh's number, from 1: what tells its result and its timeout from those of a refresh that ended.
        let id: Int
        /// The ``generation`` of the credential it refreshes: a credential set since is the one requests about to be
        /// sent get, until the refresh's result replaces it.
        let generation: Int
        /// The requests waiting for its result, by their waiter numbers.
        var waiters: [Int: Waiter]
        /// Ends the refresh at its time limit; `nil` until the caller has started it and handed it over.
        var timer: Timer?
    }

    /// What the caller does after a transition, outside its lock.
    enum Effect: Sendable {
        /// Nothing: the request joined the running refresh, or the event came after its refresh ended.
        case none
        /// Call the authenticator's refresh of `credential` as refresh `id`, in a task of its own that nothing cancels,
        /// and start a timer that reports `refreshTimedOut(_:)` at the time limit.
        case startRefresh(id: Int, credential: Credential)
        /// Cancel `cancelling` (the ended refresh's timer, when there is one to stop) and resume `waiters`, in the
        /// order they came, with `result`.
        case resume([Waiter], with: Result<Credential, any Error>, cancelling: Timer?)
        /// Cancel a timer handed over after its refresh had already ended.
        case cancelTimer(Timer)
    }

    /// How many refreshes may start within a window of time.
    let limit: AuthenticationRefreshLimit
    /// How long a refresh may run before its waiters fail with ``AuthenticationError/refreshTimedOut(after:)``.
    let timeout: Duration
    /// The credential requests are sent with; `nil` until one is set.
    private(set) var credential: Credential?
    /// Counts credential changes, so that a request can tell whether the credential it saw is still current.
    private(set) var generation = 0
    /// Whether a refresh runs, and who waits for it.
    private(set) var phase: Phase = .idle
    /// When the refreshes counted against `limit` started; those older than its window are dropped when the next
    /// refresh is asked for.
    private(set) var recentStarts: [Duration] = []
    /// How many refreshes have started, which is also the number of the last one.
    private(set) var refreshCount = 0
    /// The refreshes that timed out whose authenticator call has not returned yet; their results will be dropped.
    private(set) var overdue: Set<Int> = []
    /// The number the next waiting request gets.
    private var nextWaiter = 0

    /// Creates an idle machine holding `credential`.
    init(credential: Credential?, limit: AuthenticationRefreshLimit, timeout: Duration) {
        self.credential = credential
        self.limit = limit
        self.timeout = timeout
    }

    /// Whether a refresh is running.
    var isRefreshing: Bool {
        if case .refreshing = phase { return true }
        return false
    }

    /// How many requests wait for the running refresh.
    var waiterCount: Int {
        if case .refreshing(let refresh) = phase { return refresh.waiters.count }
        return 0
    }

    /// How many authenticator calls have not had their result handled: the running refresh's and the overdue ones.
    var unfinishedCalls: Int {
        overdue.count + (isRefreshing ? 1 : 0)
    }

    /// Replaces the credential for every request from now on; a running refresh goes on, and its result replaces this.
    mutating func replaceCredential(with credential: Credential?) {
        self.credential = credential
        generation += 1
    }

    /// Numbers a request about to wait, so that its cancellation can find it.
    mutating func makeWaiterID() -> Int {
        defer { nextWaiter += 1 }
        return nextWaiter
    }

    /// A request (`waiter`, numbered `id`) needs the credential it saw at `generation` refreshed, at `now`: it joins
    /// the running refresh, gets a credential that changed since, starts a refresh, or is refused.
    mutating func requestRefresh(after generation: Int, waiter: Waiter, id: Int, at now: Duration) -> Effect {
        // Whatever this request saw, the running refresh's result is the newest credential there will be.
        if var refresh = takeRefresh() {
            refresh.waiters[id] = waiter
            phase = .refreshing(refresh)
            return .none
        }
        guard let credential else {
            return .resume([waiter], with: .failure(AuthenticationError.missingCredential), cancelling: nil)
        }
        // Someone refreshed (or set) the credential since this request looked: it uses theirs.
        if generation != self.generation {
            return .resume([waiter], with: .success(credential), cancelling: nil)
        }
        let windowStart = now - limit.window
        recentStarts.removeAll { $0 <= windowStart }
        guard recentStarts.count < limit.maximumCount else {
            let refused = AuthenticationError.excessiveRefresh(count: recentStarts.count, window: limit.window)
            return .resume([waiter], with: .failure(refused), cancelling: nil)
        }
        recentStarts.append(now)
        refreshCount += 1
        phase = .refreshing(Refresh(id: refreshCount, generation: generation, waiters: [id: waiter]))
        return .startRefresh(id: refreshCount, credential: credential)
    }

    /// A request (`waiter`, numbered `id`) about to be sent while a refresh may be running: it joins the running
    /// refresh, to be sent with its result rather than with the credential it replaces, or gets the credential at once
    /// when none runs or one was set since the refresh started.
    mutating func joinRunningRefresh(waiter: Waiter, id: Int) -> Effect {
        if case .refreshing(let running) = phase, running.generation == generation, var refresh = takeRefresh() {
            refresh.waiters[id] = waiter
            phase = .refreshing(refresh)
            return .none
        }
        guard let credential else {
            return .resume([waiter], with: .failure(AuthenticationError.missingCredential), cancelling: nil)
        }
        return .resume([waiter], with: .success(credential), cancelling: nil)
    }

    /// The caller started the timer of refresh `id`: the refresh keeps it, or, already ended, has it cancelled.
    mutating func timerStarted(_ timer: Timer, forRefresh id: Int) -> Effect {
        guard var refresh = takeRefresh(id) else { return .cancelTimer(timer) }
        refresh.timer = timer
        phase = .refreshing(refresh)
        return .none
    }

    /// The authenticator's call for refresh `id` returned `result`: a success becomes the credential, and every
    /// waiter gets the result; the late result of a refresh that timed out is dropped.
    mutating func refreshFinished(_ id: Int, with result: Result<Credential, any Error>) -> Effect {
        guard let refresh = takeRefresh(id) else {
            // Timed out: a newer credential (or a newer refresh's) must not be replaced by this one.
            overdue.remove(id)
            return .none
        }
        if case .success(let fresh) = result { replaceCredential(with: fresh) }
        return .resume(refresh.waitersInOrder, with: result, cancelling: refresh.timer)
    }

    /// Refresh `id` reached its time limit: its waiters fail with ``AuthenticationError/refreshTimedOut(after:)``, and
    /// it becomes overdue, so that the next request starts a new one.
    mutating func refreshTimedOut(_ id: Int) -> Effect {
        // Finished first: the timer lost the race with the result.
        guard let refresh = takeRefresh(id) else { return .none }
        overdue.insert(id)
        let timedOut = AuthenticationError.refreshTimedOut(after: timeout)
        // The timer is what reports this, so there is no timer left to cancel.
        return .resume(refresh.waitersInOrder, with: .failure(timedOut), cancelling: nil)
    }

    /// The request numbered `id` was cancelled: it stops waiting, alone, and the refresh goes on for the others and
    /// for the next requests.
    mutating func waiterCancelled(_ id: Int) -> Effect {
        guard var refresh = takeRefresh() else { return .none }
        let waiter = refresh.waiters.removeValue(forKey: id)
        phase = .refreshing(refresh)
        // Not waiting (it never started to, or its refresh already resumed it): nothing to undo.
        guard let waiter else { return .none }
        return .resume([waiter], with: .failure(CancellationError()), cancelling: nil)
    }

    /// Takes the running refresh out of the phase, leaving it idle, so that its waiters change in place instead of
    /// being copied; `nil`, and nothing changed, when no refresh runs or the running one is not numbered `id`.
    private mutating func takeRefresh(_ id: Int? = nil) -> Refresh? {
        guard case .refreshing(let refresh) = phase, id == nil || id == refresh.id else { return nil }
        phase = .idle
        return refresh
    }
}

extension AuthenticationRefreshMachine.Refresh {
    /// The waiters in the order they came.
    var waitersInOrder: [Waiter] {
        waiters.sorted { $0.key < $1.key }.map(\.value)
    }
}

extension AuthenticationRefreshMachine.Phase: Equatable where Waiter: Equatable, Timer: Equatable {}

extension AuthenticationRefreshMachine.Refresh: Equatable where Waiter: Equatable, Timer: Equatable {}
