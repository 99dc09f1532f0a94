import Foundation
import Rebound
import Testing

/// A generator for tests: a fixed sequence of values, repeated.
struct CyclingGenerator: RandomNumberGenerator, Sendable {
    let values: [UInt64]
    var index = 0

    mutating func next() -> UInt64 {
        defer { index = (index + 1) % values.count }
        return values[index]
    }
}

@Suite("BackoffStrategy")
struct BackoffStrategyTests {
    private func delays(_ strategy: BackoffStrategy, _ counts: ClosedRange<Int> = 0...3) -> [Duration] {
        counts.map { strategy.delay(forRetryCount: $0) }
    }

    @Test func theShapesFollowTheirFormulas() {
        #expect(delays(.none) == [.zero, .zero, .zero, .zero])
        #expect(delays(.constant(.seconds(2))) == [.seconds(2), .seconds(2), .seconds(2), .seconds(2)])
        #expect(
            delays(.linear(a: .seconds(1), b: .milliseconds(500)))
                == [.milliseconds(500), .milliseconds(1_500), .milliseconds(2_500), .milliseconds(3_500)])
        #expect(
            delays(.exponential(a: .milliseconds(500), b: 2))
                == [.milliseconds(500), .seconds(1), .seconds(2), .seconds(4)])
        #expect(
            delays(.exponential(a: .seconds(2), b: 1.5), 0...2) == [.seconds(2), .seconds(3), .milliseconds(4_500)])
    }

    @Test func minAndMaxBoundTheDelay() {
        let bounded = BackoffStrategy.exponential(a: .seconds(1), b: 2).min(.seconds(3)).max(.seconds(5))
        #expect(delays(bounded) == [.seconds(3), .seconds(3), .seconds(4), .seconds(5)])
    }

    @Test(arguments: [100, 1_000, 1_000_000, Int.max])
    func neverOverflows(retryCount: Int) {
        #expect(
            BackoffStrategy.exponential(a: .seconds(1), b: 2).max(.seconds(60)).delay(forRetryCount: retryCount)
                == .seconds(60))
        #expect(
            BackoffStrategy.exponential(a: .seconds(1), b: 2).delay(forRetryCount: retryCount)
                == RetryResult.longestDelay)
        #expect(
            BackoffStrategy.exponential(a: .seconds(1), b: 10).fullJitter(using: .seeded(1)).max(.seconds(30))
                .delay(forRetryCount: retryCount) <= .seconds(30))
        #expect(
            BackoffStrategy.linear(a: .seconds(1_000_000), b: .zero).delay(forRetryCount: retryCount)
                <= RetryResult.longestDelay)
    }

    @Test func negativeDelaysAndRetryCountsAreZero() {
        #expect(BackoffStrategy.linear(a: .seconds(-1), b: .zero).delay(forRetryCount: 3) == .zero)
        #expect(BackoffStrategy.constant(.seconds(-5)).delay(forRetryCount: 0) == .zero)
        #expect(BackoffStrategy.exponential(a: .seconds(1), b: 2).delay(forRetryCount: -4) == .seconds(1))
    }

    @Test func seededJitterIsReproducibleAndWithinItsRange() {
        let base = BackoffStrategy.constant(.seconds(8))
        let first = delays(base.fullJitter(using: .seeded(42)), 0...19)
        let again = delays(base.fullJitter(using: .seeded(42)), 0...19)
        let other = delays(base.fullJitter(using: .seeded(43)), 0...19)

        #expect(first == again)
        #expect(first != other)
        #expect(first.allSatisfy { $0 >= .zero && $0 < .seconds(8) })
        #expect(Set(first).count > 15)
        let equal = delays(base.equalJitter(using: .seeded(42)), 0...19)
        #expect(equal.allSatisfy { $0 >= .seconds(4) && $0 < .seconds(8) })
    }

    @Test func jitterDrawsFromAGivenGenerator() {
        // A generator that always answers all ones draws just under 1; one that answers 0 draws 0.
        let high = BackoffStrategy.constant(.seconds(10)).jitter(using: CyclingGenerator(values: [.max]))
        let zero = BackoffStrategy.constant(.seconds(10)).jitter(using: CyclingGenerator(values: [0]))
        #expect(delays(high, 0...1).allSatisfy { $0 > .milliseconds(9_999) && $0 < .seconds(10) })
        #expect(delays(zero, 0...1) == [.zero, .zero])
    }

    @Test func decorrelatedJitterStaysBetweenBaseAndThreeTimesThePreviousDelayUnderTheCap() {
        let strategy = BackoffStrategy.decorrelatedJitter(base: .seconds(1), cap: .seconds(20), using: .seeded(7))
        var previous: Duration?
        for retryCount in 0..<50 {
            let delay = strategy.delay(forRetryCount: retryCount, previousDelay: previous)
            let upper = min(max(.seconds(1), (previous ?? .seconds(1)) * 3), .seconds(20))
            #expect(delay >= .seconds(1) && delay <= upper, "retry \(retryCount): \(delay)")
            previous = delay
        }
        #expect(strategy.delay(forRetryCount: 9, previousDelay: .seconds(1_000)) <= .seconds(20))
    }

    @Test func aClosureSeesTheRetryCountAndThePreviousDelay() {
        let strategy = BackoffStrategy { retryCount, previous in (previous ?? .seconds(1)) + .seconds(retryCount) }
        #expect(strategy.delay(forRetryCount: 0) == .seconds(1))
        #expect(strategy.delay(forRetryCount: 2, previousDelay: .seconds(3)) == .seconds(5))
    }
}

@Suite("BackoffStrategy.automatic")
struct AutomaticBackoffTests {
    @Test func noneMeansNoDelayInRetryPolicyAndAutomaticMeansItsFormula() throws {
        #expect(RetryPolicy(backoff: .none).delay(forRetryCount: 3) == .zero)
        #expect(RetryPolicy(exponentialBackoffScale: 1).delay(forRetryCount: 3) == .seconds(8))
        #expect(JSONBodyRetrier(values: ["X"], delay: .seconds(2)).delay(forRetryCount: 4) == .seconds(2))
        #expect(JSONBodyRetrier(values: ["X"], backoff: .none).delay(forRetryCount: 4) == .zero)
        #expect(BackoffStrategy.automatic.delay(forRetryCount: 2) == .zero)
    }
}
