import Testing

@testable import Rebound

/// The credential's refresh as a pure state machine: every transition driven with plain values, without clocks,
/// tasks or I/O. Waiters and timers are names; times are plain durations.
@Suite("AuthenticationRefreshMachine")
struct AuthenticationRefreshMachineTests {
    /// A machine whose waiters and timers are names.
    typealias Machine = AuthenticationRefreshMachine<Token, String, String>

    /// A machine holding `credential`, with the interceptor's defaults unless told otherwise.
    func machine(
        credential: Token? = Token(value: 1), limit: AuthenticationRefreshLimit = .default,
        timeout: Duration = .seconds(10)
    ) -> Machine {
        Machine(credential: credential, limit: limit, timeout: timeout)
    }

    @Test func startsIdleWithTheCredentialGiven() {
        let machine = machine()

        #expect(machine.credential == Token(value: 1))
        #expect(machine.generation == 0)
        #expect(machine.phase == .idle)
        #expect(machine.refreshCount == 0)
        #expect(machine.waiterCount == 0 && !machine.isRefreshing)
        #expect(machine.unfinishedCalls == 0)
    }

    @Test func aRequestWhileIdleStartsRefreshOneAndWaitsForIt() {
        var machine = machine()

        let asked = machine.request("a", at: .seconds(5))

        #expect(asked == .start(refresh: 1, of: Token(value: 1)))
        #expect(machine.phase == .refreshing(Machine.Refresh(id: 1, generation: 0, waiters: [0: "a"])))
        #expect(machine.refreshCount == 1)
        #expect(machine.recentStarts == [.seconds(5)])
        #expect(machine.unfinishedCalls == 1)
    }

    @Test func requestsDuringARefreshJoinItWhateverCredentialTheySaw() {
        // Given a running refresh
        var machine = machine()
        let seen = machine.generation
        _ = machine.request("a")

        // When requests come that saw the current credential, an older one, or none at all
        let joined = machine.request("b")
        machine.replaceCredential(with: Token(value: 7))
        let stale = machine.request("c", after: seen)
        machine.replaceCredential(with: nil)
        let withNone = machine.request("d")

        // Then each joins the running refresh, which alone will have the newest credential
        #expect([joined, stale, withNone] == [.nothing, .nothing, .nothing])
        #expect(
            machine.phase
                == .refreshing(Machine.Refresh(id: 1, generation: 0, waiters: [0: "a", 1: "b", 2: "c", 3: "d"])))
        #expect(machine.refreshCount == 1)
    }

    @Test func aRequestAboutToBeSentJoinsTheRunningRefreshAndStartsNone() {
        // Given a running refresh
        var machine = machine()
        _ = machine.request("a")

        // When a request about to be sent joins it
        let joined = machine.joinRunningRefresh(waiter: "b", id: machine.makeWaiterID()).asked

        // Then it waits for that refresh's result, and no refresh starts
        #expect(joined == .nothing)
        #expect(machine.phase == .refreshing(Machine.Refresh(id: 1, generation: 0, waiters: [0: "a", 1: "b"])))
        #expect(machine.refreshCount == 1)
        #expect(machine.recentStarts.count == 1)
        #expect(
            machine.refreshFinished(1, with: .success(Token(value: 2))).asked
                == .resume(["a", "b"], with: .credential(Token(value: 2))))
    }

    @Test func aRequestAboutToBeSentAfterACredentialWasSetDuringTheRefreshGetsThatCredential() {
        // Given a running refresh, and a credential set since it started (a new login)
        var machine = machine()
        _ = machine.request("a")
        machine.replaceCredential(with: Token(value: 7))

        // When a request about to be sent asks
        let asked = machine.joinRunningRefresh(waiter: "b", id: machine.makeWaiterID()).asked

        // Then it is sent with the credential set, and the refresh goes on for the request that needed it
        #expect(asked == .resume(["b"], with: .credential(Token(value: 7))))
        #expect(machine.phase == .refreshing(Machine.Refresh(id: 1, generation: 0, waiters: [0: "a"])))
    }

    @Test func aRequestAboutToBeSentWithNoRefreshRunningGetsTheCredentialAtOnce() {
        var machine = machine()
        let now = machine.joinRunningRefresh(waiter: "a", id: machine.makeWaiterID()).asked
        var empty = self.machine(credential: nil)
        let none = empty.joinRunningRefresh(waiter: "b", id: empty.makeWaiterID()).asked

        #expect(now == .resume(["a"], with: .credential(Token(value: 1))))
        #expect(none == .resume(["b"], with: .failure(.missingCredential)))
        #expect(machine.phase == .idle && empty.phase == .idle)
        #expect(machine.refreshCount == 0)
    }

    @Test func theRunningRefreshKeepsTheTimerHandedOver() {
        var machine = machine()
        _ = machine.request("a")

        let asked = machine.timerStarted("timer 1", forRefresh: 1).asked

        #expect(asked == .nothing)
        #expect(
            machine.phase == .refreshing(Machine.Refresh(id: 1, generation: 0, waiters: [0: "a"], timer: "timer 1")))
    }

    @Test func aSuccessfulRefreshBecomesTheCredentialAndResumesEveryWaiterInOrder() {
        // Given three requests waiting for refresh 1, whose timer runs
        var machine = machine()
        for waiter in ["a", "b", "c"] { _ = machine.request(waiter) }
        _ = machine.timerStarted("timer 1", forRefresh: 1)

        // When it returns a new credential
        let asked = machine.refreshFinished(1, with: .success(Token(value: 2))).asked

        // Then the timer stops, every waiter gets the credential, and the machine is idle with it
        #expect(asked == .resume(["a", "b", "c"], with: .credential(Token(value: 2)), cancelling: "timer 1"))
        #expect(machine.credential == Token(value: 2))
        #expect(machine.generation == 1)
        #expect(machine.phase == .idle)
        #expect(machine.unfinishedCalls == 0)
        #expect(machine.refreshCount == 1)
    }

    @Test(arguments: [Answer.error(TestError("refresh denied")), .failure(.refreshCancelled)])
    func aRefreshErrorFailsEveryWaiterAndTheNextRequestRefreshesAgain(error: Answer) throws {
        // Given two requests waiting for refresh 1
        var machine = machine()
        for waiter in ["a", "b"] { _ = machine.request(waiter) }
        _ = machine.timerStarted("timer 1", forRefresh: 1)

        // When it fails
        let asked = machine.refreshFinished(1, with: .failure(try #require(error.thrown))).asked

        // Then each waiter fails with its error, the credential stays, and the next request starts refresh 2
        #expect(asked == .resume(["a", "b"], with: error, cancelling: "timer 1"))
        #expect(machine.credential == Token(value: 1))
        #expect(machine.generation == 0)
        #expect(machine.phase == .idle)
        #expect(machine.request("c") == .start(refresh: 2, of: Token(value: 1)))
    }

    @Test func aRequestForACredentialThatChangedSinceGetsTheCurrentOneWithoutARefresh() {
        // Given a request that saw generation 0, and a caller who set a credential since
        var machine = machine()
        let seen = machine.generation
        machine.replaceCredential(with: Token(value: 7))

        // Then it gets the credential that was set
        #expect(machine.request("a", after: seen) == .resume(["a"], with: .credential(Token(value: 7))))

        // And likewise once another request's refresh has replaced that one
        let seenNow = machine.generation
        _ = machine.request("b")
        _ = machine.refreshFinished(1, with: .success(Token(value: 8)))
        #expect(machine.request("c", after: seenNow) == .resume(["c"], with: .credential(Token(value: 8))))
        #expect(machine.refreshCount == 1)
        #expect(machine.phase == .idle)
    }

    @Test func withoutACredentialARequestFailsWithMissingCredential() {
        var never = machine(credential: nil)
        var removed = machine()
        removed.replaceCredential(with: nil)

        #expect(never.request("a") == .resume(["a"], with: .failure(.missingCredential)))
        // Missing wins over changed: a request that saw an older credential has nothing to use either.
        #expect(removed.request("b", after: 0) == .resume(["b"], with: .failure(.missingCredential)))
        #expect(never.refreshCount == 0 && never.phase == .idle)
        #expect(removed.refreshCount == 0 && removed.phase == .idle)
    }

    @Test func refusesARefreshPastTheLimitWithinTheWindowWithoutCountingTheRefusal() {
        // Given two refreshes started at 0 s and 10 s, with a limit of 2 in 60 s
        var machine = machine(limit: AuthenticationRefreshLimit(maximumCount: 2, window: .seconds(60)))
        for (refresh, start) in [(1, Duration.zero), (2, .seconds(10))] {
            _ = machine.request("r\(refresh)", at: start)
            _ = machine.refreshFinished(refresh, with: .success(Token(value: refresh + 1)))
        }

        // When more requests need a refresh within the window
        let refused = AuthenticationError.excessiveRefresh(count: 2, window: .seconds(60))
        #expect(machine.request("a", at: .seconds(59)) == .resume(["a"], with: .failure(refused)))
        #expect(machine.request("b", at: .seconds(59)) == .resume(["b"], with: .failure(refused)))

        // Then no refresh started, and refusals are not counted
        #expect(machine.refreshCount == 2)
        #expect(machine.recentStarts == [.zero, .seconds(10)])
        #expect(machine.phase == .idle)

        // Once the first start has left the window, one more refresh may start
        #expect(machine.request("c", at: .seconds(60)) == .start(refresh: 3, of: Token(value: 3)))
        #expect(machine.recentStarts == [.seconds(10), .seconds(60)])
    }

    @Test(arguments: [
        (Duration.milliseconds(29_999), false),
        (.seconds(30), true),
        (.seconds(45), true),
    ])
    func aStartLeavesTheWindowExactlyOneWindowLater(at now: Duration, starts: Bool) {
        var machine = machine(limit: AuthenticationRefreshLimit(maximumCount: 1, window: .seconds(30)))
        _ = machine.request("a", at: .zero)
        _ = machine.refreshFinished(1, with: .success(Token(value: 2)))

        let asked = machine.request("b", at: now)

        let refused = AuthenticationError.excessiveRefresh(count: 1, window: .seconds(30))
        #expect(asked == (starts ? .start(refresh: 2, of: Token(value: 2)) : .resume(["b"], with: .failure(refused))))
    }

    @Test func refreshesThatTimedOutCountTowardTheLimit() {
        // Given two refreshes that timed out, with a limit of 2 in 60 s
        var machine = machine(limit: AuthenticationRefreshLimit(maximumCount: 2, window: .seconds(60)))
        for refresh in 1...2 {
            _ = machine.request("r\(refresh)", at: .seconds(refresh))
            _ = machine.refreshTimedOut(refresh)
        }

        // Then both may still run at the token server: a third is not started
        let refused = AuthenticationError.excessiveRefresh(count: 2, window: .seconds(60))
        #expect(machine.request("a", at: .seconds(3)) == .resume(["a"], with: .failure(refused)))
        #expect(machine.refreshCount == 2)
        #expect(machine.overdue == [1, 2])
        #expect(machine.unfinishedCalls == 2)
    }

    @Test func aTimeoutFailsEveryWaiterAndTheNextRequestStartsANewRefresh() {
        // Given two requests waiting for refresh 1, whose timer runs
        var machine = machine(timeout: .seconds(10))
        for waiter in ["a", "b"] { _ = machine.request(waiter) }
        _ = machine.timerStarted("timer 1", forRefresh: 1)

        // When the timer fires
        let asked = machine.refreshTimedOut(1).asked

        // Then both fail with the time limit (the timer that fired needs no cancelling), and the refresh is overdue
        #expect(asked == .resume(["a", "b"], with: .failure(.refreshTimedOut(after: .seconds(10))), cancelling: nil))
        #expect(machine.phase == .idle)
        #expect(machine.overdue == [1])
        #expect(machine.unfinishedCalls == 1)
        #expect(machine.credential == Token(value: 1))
        #expect(machine.request("c") == .start(refresh: 2, of: Token(value: 1)))
        #expect(machine.unfinishedCalls == 2)
    }

    @Test(arguments: [Answer.credential(Token(value: 99)), .error(TestError("late failure"))])
    func aTimedOutRefreshsLateResultIsDroppedAndNotHandedToTheNewerRefresh(late: Answer) throws {
        // Given refresh 1 timed out and request c waits for refresh 2
        var machine = machine()
        _ = machine.request("a")
        _ = machine.refreshTimedOut(1)
        _ = machine.request("c")
        _ = machine.timerStarted("timer 2", forRefresh: 2)

        // When refresh 1's result comes at last
        let asked = machine.refreshFinished(1, with: try #require(late.result)).asked

        // Then it is dropped: refresh 2 still runs for c, and the credential is unchanged
        #expect(asked == .nothing)
        #expect(
            machine.phase == .refreshing(Machine.Refresh(id: 2, generation: 0, waiters: [1: "c"], timer: "timer 2")))
        #expect(machine.credential == Token(value: 1))
        #expect(machine.overdue.isEmpty)
        #expect(machine.unfinishedCalls == 1)

        // And refresh 2's own result is what c gets
        let second = machine.refreshFinished(2, with: .success(Token(value: 2))).asked
        #expect(second == .resume(["c"], with: .credential(Token(value: 2)), cancelling: "timer 2"))
        #expect(machine.unfinishedCalls == 0)
    }

    @Test func aLateResultAfterTheNewerRefreshFinishedDoesNotReplaceItsCredential() {
        var machine = machine()
        _ = machine.request("a")
        _ = machine.refreshTimedOut(1)
        _ = machine.request("b")
        _ = machine.refreshFinished(2, with: .success(Token(value: 2)))

        let asked = machine.refreshFinished(1, with: .success(Token(value: 99))).asked

        #expect(asked == .nothing)
        #expect(machine.credential == Token(value: 2))
        #expect(machine.generation == 1)
        #expect(machine.unfinishedCalls == 0)
    }

    @Test func aTimeoutAfterItsRefreshEndedChangesNothing() {
        // Refresh 1 finished before its timer fired
        var machine = machine()
        _ = machine.request("a")
        _ = machine.refreshFinished(1, with: .success(Token(value: 2)))
        #expect(machine.refreshTimedOut(1).asked == .nothing)
        #expect(machine.phase == .idle && machine.overdue.isEmpty)

        // Refresh 2 runs when refresh 1's timer reports
        _ = machine.request("b")
        #expect(machine.refreshTimedOut(1).asked == .nothing)
        #expect(machine.phase == .refreshing(Machine.Refresh(id: 2, generation: 1, waiters: [1: "b"])))
    }

    /// How a refresh ended before its timer was handed over.
    enum Ended: CaseIterable { case finished, timedOut, supersededByANewerRefresh }

    @Test(arguments: Ended.allCases)
    func aTimerHandedOverAfterItsRefreshEndedIsCancelled(ended: Ended) {
        // Given refresh 1 ended before the caller handed its timer over
        var machine = machine()
        _ = machine.request("a")
        switch ended {
        case .finished:
            _ = machine.refreshFinished(1, with: .success(Token(value: 2)))
        case .timedOut:
            _ = machine.refreshTimedOut(1)
        case .supersededByANewerRefresh:
            _ = machine.refreshTimedOut(1)
            _ = machine.request("b")
        }
        let before = machine.phase

        // When the timer is handed over, it is cancelled, and nothing else changes
        #expect(machine.timerStarted("timer 1", forRefresh: 1).asked == .cancelTimer("timer 1"))
        #expect(machine.phase == before)
    }

    @Test func cancellingOneWaiterResumesItAloneWhileTheOthersKeepWaiting() {
        // Given a, b and c (waiters 0, 1 and 2) wait for refresh 1
        var machine = machine()
        for waiter in ["a", "b", "c"] { _ = machine.request(waiter) }
        _ = machine.timerStarted("timer 1", forRefresh: 1)

        // When b is cancelled
        let asked = machine.waiterCancelled(1).asked

        // Then b alone ends, as cancelled; the refresh runs on for a and c, who get its result
        #expect(asked == .resume(["b"], with: .cancelled))
        #expect(
            machine.phase
                == .refreshing(Machine.Refresh(id: 1, generation: 0, waiters: [0: "a", 2: "c"], timer: "timer 1")))
        let finished = machine.refreshFinished(1, with: .success(Token(value: 2))).asked
        #expect(finished == .resume(["a", "c"], with: .credential(Token(value: 2)), cancelling: "timer 1"))
    }

    @Test func cancellingEveryWaiterLeavesTheRefreshRunningAndItsResultStillLands() {
        var machine = machine()
        _ = machine.request("a")
        _ = machine.timerStarted("timer 1", forRefresh: 1)

        #expect(machine.waiterCancelled(0).asked == .resume(["a"], with: .cancelled))
        #expect(machine.isRefreshing && machine.waiterCount == 0)

        let finished = machine.refreshFinished(1, with: .success(Token(value: 2))).asked
        #expect(finished == .resume([], with: .credential(Token(value: 2)), cancelling: "timer 1"))
        #expect(machine.credential == Token(value: 2))
    }

    @Test func cancellingARequestThatIsNotWaitingChangesNothing() {
        var machine = machine()
        // While idle
        #expect(machine.waiterCancelled(0).asked == .nothing)

        // After its refresh resumed it
        _ = machine.request("a")
        _ = machine.refreshFinished(1, with: .success(Token(value: 2)))
        #expect(machine.waiterCancelled(0).asked == .nothing)

        // A number that does not wait for the running refresh
        _ = machine.request("b")
        let before = machine.phase
        #expect(machine.waiterCancelled(0).asked == .nothing)
        #expect(machine.waiterCancelled(42).asked == .nothing)
        #expect(machine.phase == before)
    }

    @Test func replacingTheCredentialDuringARefreshLetsItRunAndItsResultWins() {
        var machine = machine()
        _ = machine.request("a")

        machine.replaceCredential(with: Token(value: 7))
        #expect(machine.credential == Token(value: 7) && machine.generation == 1)
        #expect(machine.isRefreshing)

        _ = machine.refreshFinished(1, with: .success(Token(value: 2)))
        #expect(machine.credential == Token(value: 2))
        #expect(machine.generation == 2)
    }

    @Test func aResultForARefreshNeverStartedChangesNothing() {
        var machine = machine()
        #expect(machine.refreshFinished(5, with: .success(Token(value: 5))).asked == .nothing)
        #expect(machine.refreshTimedOut(5).asked == .nothing)
        #expect(machine.credential == Token(value: 1) && machine.generation == 0)
        #expect(machine.phase == .idle && machine.overdue.isEmpty)
    }

    @Test func waiterNumbersCountUpAndAreNeverReused() {
        var machine = machine()
        let first = [machine.makeWaiterID(), machine.makeWaiterID()]
        _ = machine.request("a")
        _ = machine.refreshFinished(1, with: .success(Token(value: 2)))

        #expect(first == [0, 1])
        #expect(machine.makeWaiterID() == 3)
    }
}

/// What a transition asked for, in a form tests compare.
enum Asked: Equatable {
    case nothing
    case start(refresh: Int, of: Token)
    case resume([String], with: Answer, cancelling: String? = nil)
    case cancelTimer(String)
}

/// A result handed to waiters, its error as one of the kinds the tests make.
enum Answer: Equatable, Sendable {
    case credential(Token)
    case failure(AuthenticationError)
    case cancelled
    case error(TestError)
    case other(String)

    /// The answer a result stands for.
    init(_ result: Result<Token, any Error>) {
        switch result {
        case .success(let token): self = .credential(token)
        case .failure(let error as AuthenticationError): self = .failure(error)
        case .failure(is CancellationError): self = .cancelled
        case .failure(let error as TestError): self = .error(error)
        case .failure(let error): self = .other("\(error)")
        }
    }

    /// The error to finish a refresh with; `nil` for a credential.
    var thrown: (any Error)? {
        switch self {
        case .credential: nil
        case .failure(let error): error
        case .cancelled: CancellationError()
        case .error(let error): error
        case .other(let text): TestError(text)
        }
    }

    /// The result to finish a refresh with.
    var result: Result<Token, any Error>? {
        if case .credential(let token) = self { return .success(token) }
        return thrown.map { .failure($0) }
    }
}

extension AuthenticationRefreshMachine.Effect where Credential == Token, Waiter == String, Timer == String {
    /// The effect, in a form tests compare.
    var asked: Asked {
        switch self {
        case .none: .nothing
        case .startRefresh(let id, let credential): .start(refresh: id, of: credential)
        case .resume(let waiters, let result, let timer): .resume(waiters, with: Answer(result), cancelling: timer)
        case .cancelTimer(let timer): .cancelTimer(timer)
        }
    }
}

extension AuthenticationRefreshMachine where Credential == Token, Waiter == String, Timer == String {
    /// `waiter` asks, under the next waiter number, for a refresh of the credential it saw at `generation` (the
    /// current one by default), at `now`.
    mutating func request(_ waiter: String, after generation: Int? = nil, at now: Duration = .zero) -> Asked {
        requestRefresh(after: generation ?? self.generation, waiter: waiter, id: makeWaiterID(), at: now).asked
    }
}
