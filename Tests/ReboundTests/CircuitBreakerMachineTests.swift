import Foundation
import Testing

@testable import Rebound

/// The breaker's machine on plain values: the time is passed in, nothing awaits.
@Suite("CircuitBreakerMachine")
struct CircuitBreakerMachineTests {
    typealias Machine = CircuitBreakerMachine

    /// A machine and the time it is driven at.
    struct Driver {
        var machine: Machine
        var now: Duration = .zero
        var transitions: [CircuitBreaker.State] = []

        init(_ configuration: CircuitBreaker.Configuration) {
            machine = Machine(configuration: configuration)
        }

        /// Admits an attempt now; `nil` when the machine refuses it.
        mutating func admit() -> Machine.Permit? {
            var time = LazyTime { [now] in now }
            guard case .admitted(let permit) = machine.admit(time: &time, transitions: &transitions) else { return nil }
            return permit
        }

        /// Counts `verdict` of the attempt sent with `permit`, now: an attempt 5 s on the wire when `slow`, 1 ms
        /// otherwise.
        mutating func record(_ verdict: CircuitBreaker.Verdict, _ permit: Machine.Permit, slow: Bool = false) {
            var time = LazyTime { [now] in now }
            machine.record(
                verdict, permit: permit, timeOnWire: slow ? .seconds(5) : .milliseconds(1), time: &time,
                transitions: &transitions)
        }

        /// Admits one attempt and counts `verdict` of it at once.
        mutating func call(_ verdict: CircuitBreaker.Verdict, slow: Bool = false) {
            guard let permit = admit() else {
                Issue.record("the machine refused an attempt in \(machine.phase)")
                return
            }
            record(verdict, permit, slow: slow)
        }

        /// The state now.
        var state: CircuitBreaker.State { machine.state(at: now) }
    }

    /// A breaker that opens at its first failure for 1 s, closing after `successes` trial successes in a row.
    static func closingAfter(
        _ successes: Int, trials: Int = 1, slowCallRule: CircuitBreaker.SlowCallRule? = nil
    ) -> CircuitBreaker.Configuration {
        CircuitBreaker.Configuration(
            tripCondition: .consecutiveFailures(1), openDuration: .seconds(1), halfOpenTrialCalls: trials,
            trialSuccessesToClose: successes, slowCallRule: slowCallRule)
    }

    // MARK: - Closing on evidence

    @Test func oneTrialSuccessClosesByDefault() {
        var driver = Driver(.init(tripCondition: .consecutiveFailures(1), openDuration: .seconds(1)))
        driver.call(.failure)
        driver.now = .seconds(1)
        driver.call(.success)

        #expect(driver.state == .closed)
        #expect(driver.transitions == [.open, .halfOpen, .closed])
    }

    @Test func aHalfOpenBreakerClosesOnlyAfterTheTrialSuccessesAsked() {
        var driver = Driver(Self.closingAfter(3))
        driver.call(.failure)
        driver.now = .seconds(1)

        driver.call(.success)
        #expect(driver.state == .halfOpen)
        // Each success frees its place: the next call is the next trial.
        driver.call(.success)
        #expect(driver.state == .halfOpen)
        driver.call(.success)
        #expect(driver.state == .closed)
        #expect(driver.transitions == [.open, .halfOpen, .closed])
    }

    @Test func aFailedTrialOpensAgainAndTheCountStartsOver() {
        var driver = Driver(Self.closingAfter(3))
        driver.call(.failure)
        driver.now = .seconds(1)
        driver.call(.success)
        driver.call(.success)
        driver.call(.failure)
        #expect(driver.state == .open)

        // The next half-open period needs three successes again, not one.
        driver.now = .seconds(3)
        driver.call(.success)
        driver.call(.success)
        #expect(driver.state == .halfOpen)
        driver.call(.success)
        #expect(driver.state == .closed)
    }

    @Test func aHalfOpenBreakerGrantsARetryOnlyToARequestWhoseTrialToldItNothingAndOnlyWhileATrialIsFree() {
        var driver = Driver(Self.closingAfter(1))
        func refusesRetry(retriesTrial: Bool) -> Bool {
            var time = LazyTime { [now = driver.now] in now }
            return driver.machine.refusalOfRetry(time: &time, retriesTrial: retriesTrial) != nil
        }
        #expect(!refusesRetry(retriesTrial: false), "closed: every retry is granted")
        driver.call(.failure)
        #expect(refusesRetry(retriesTrial: true), "open: no retry, whatever its trial")
        driver.now = .seconds(1)
        let trial = driver.admit()
        #expect(trial != nil)
        // The trial is out: no retry takes another's place, not even one whose own trial told nothing.
        #expect(refusesRetry(retriesTrial: true))
        driver.record(.ignored, trial!)
        #expect(driver.state == .halfOpen)
        #expect(refusesRetry(retriesTrial: false), "half-open: a retry keeps away from the fresh requests' trial")
        #expect(!refusesRetry(retriesTrial: true), "the request whose trial told nothing may take it again")
    }

    @Test func anIgnoredTrialNeitherCountsNorBreaksTheRun() {
        var driver = Driver(Self.closingAfter(2))
        driver.call(.failure)
        driver.now = .seconds(1)
        driver.call(.success)
        driver.call(.ignored)
        #expect(driver.state == .halfOpen)
        driver.call(.success)
        #expect(driver.state == .closed)
    }

    @Test func trialsInFlightTogetherEachCountOnce() throws {
        var driver = Driver(Self.closingAfter(3, trials: 2))
        driver.call(.failure)
        driver.now = .seconds(1)
        let (admittedFirst, admittedSecond) = (driver.admit(), driver.admit())
        let first = try #require(admittedFirst)
        let second = try #require(admittedSecond)
        // Two places, both taken.
        #expect(driver.admit() == nil)

        driver.record(.success, first)
        driver.record(.success, second)
        #expect(driver.state == .halfOpen)
        driver.call(.success)
        #expect(driver.state == .closed)
    }

    @Test func aTrialOfAnEarlierHalfOpenPeriodDoesNotCount() throws {
        var driver = Driver(Self.closingAfter(2, trials: 2))
        driver.call(.failure)
        driver.now = .seconds(1)
        let admitted = driver.admit()
        let stale = try #require(admitted)
        driver.call(.failure)
        driver.now = .seconds(3)
        driver.call(.success)

        // The trial admitted before the breaker opened again says nothing about this period.
        driver.record(.success, stale)
        #expect(driver.state == .halfOpen)
    }

    // MARK: - Slow calls

    /// A rule: over 1 s is slow; half of the last 4 calls slow opens the breaker, once there are 4.
    static let halfOfFourSlow = CircuitBreaker.SlowCallRule(
        threshold: .seconds(1), rate: 0.5, window: .count(4), minimumCalls: 4)

    @Test func slowCallsOpenAClosedBreakerOnceTheirShareIsReached() {
        var driver = Driver(.init(slowCallRule: Self.halfOfFourSlow))
        driver.call(.success, slow: true)
        driver.call(.success)
        driver.call(.success, slow: true)
        // Half of three: below the minimum of calls.
        #expect(driver.state == .closed)
        driver.call(.success)
        #expect(driver.state == .open)
    }

    @Test func slowCallsBelowTheShareLeaveTheBreakerClosed() {
        var driver = Driver(.init(slowCallRule: Self.halfOfFourSlow))
        for _ in 0..<3 { driver.call(.success) }
        for _ in 0..<20 {
            driver.call(.success, slow: true)
            driver.call(.success)
            driver.call(.success)
            driver.call(.success)
        }
        // One in four, then the window's last four: at most one slow.
        #expect(driver.state == .closed)
    }

    @Test func slowFailuresCountForBothRules() {
        // Five failures in a row would open it; two slow of four open it first.
        var driver = Driver(.init(slowCallRule: Self.halfOfFourSlow))
        driver.call(.success)
        driver.call(.failure, slow: true)
        driver.call(.success)
        #expect(driver.state == .closed)
        driver.call(.failure, slow: true)
        #expect(driver.state == .open)
    }

    @Test func anIgnoredCallIsNotCountedAsSlow() {
        var driver = Driver(.init(slowCallRule: Self.halfOfFourSlow))
        for _ in 0..<4 { driver.call(.ignored, slow: true) }
        driver.call(.success)
        #expect(driver.state == .closed)
        #expect(driver.machine.isAtRest(at: driver.now))
    }

    @Test func aBreakerWithSlowCallsCountedIsNotAtRest() {
        var driver = Driver(.init(slowCallRule: Self.halfOfFourSlow))
        driver.call(.success, slow: true)
        #expect(!driver.machine.isAtRest(at: driver.now))
    }

    @Test func aSlowTrialOpensTheBreakerAgain() {
        var driver = Driver(Self.closingAfter(1, slowCallRule: Self.halfOfFourSlow))
        driver.call(.failure)
        driver.now = .seconds(1)
        driver.call(.success, slow: true)
        #expect(driver.state == .open)
        driver.now = .seconds(3)
        driver.call(.success)
        #expect(driver.state == .closed)
    }

    @Test func withoutARuleSlownessCountsForNothing() {
        var driver = Driver(Self.closingAfter(1))
        for _ in 0..<200 { driver.call(.success, slow: true) }
        #expect(driver.state == .closed)
        driver.call(.failure)
        driver.now = .seconds(1)
        driver.call(.success, slow: true)
        #expect(driver.state == .closed)
    }

    @Test func aCountWindowShorterThanTheMinimumIsReadOnceFull() {
        let rule = CircuitBreaker.SlowCallRule(threshold: .seconds(1), rate: 0.5, window: .count(4))
        var slow = Driver(.init(slowCallRule: rule))
        slow.call(.success, slow: true)
        slow.call(.success)
        slow.call(.success, slow: true)
        #expect(slow.state == .closed)
        slow.call(.success)
        // Four calls of a minimum of 100: the window is full, and half of it was slow.
        #expect(slow.state == .open)

        var failing = Driver(.init(tripCondition: .failureRate(0.5, window: .count(4), minimumCalls: 100)))
        for verdict in [CircuitBreaker.Verdict.success, .failure, .success] { failing.call(verdict) }
        #expect(failing.state == .closed)
        failing.call(.failure)
        #expect(failing.state == .open)
    }

    @Test func slowCallsInATimeWindowLeaveItAsTheWindowMoves() {
        let rule = CircuitBreaker.SlowCallRule(
            threshold: .seconds(1), rate: 0.5, window: .time(.seconds(10)), minimumCalls: 2)
        var driver = Driver(.init(slowCallRule: rule))
        driver.call(.success, slow: true)
        // Ten seconds on, the slow call has left the window: one fast call of one.
        driver.now = .seconds(10)
        driver.call(.success)
        #expect(driver.state == .closed)
        driver.call(.success, slow: true)
        #expect(driver.state == .open)
    }
}
