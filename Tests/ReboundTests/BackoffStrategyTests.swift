import Foundation
import Rebound
import Testing

/// xoshiro256** (Blackman and Vigna), seeded the way swift-concurrency-retry's tests seed theirs: the seed and three
/// fixed words, then ten values discarded. Written here from the published algorithm, so that the test can check that
/// Rebound's jitter draws the peer's values from the same generator.
struct Xoshiro: RandomNumberGenerator, Sendable {
    private var state: (UInt64, UInt64, UInt64, UInt64)

    init(seed: UInt64) {
        state = (seed, 18_446_744, 073_709, 551_615)
        for _ in 0..<10 { _ = next() }
    }

    mutating func next() -> UInt64 {
        let result = rotate(state.1 &* 5, 7) &* 9
        let shifted = state.1 << 17
        state.2 ^= state.0
        state.3 ^= state.1
        state.1 ^= state.2
        state.0 ^= state.3
        state.2 ^= shifted
        state.3 = rotate(state.3, 45)
        return result
    }

    private func rotate(_ value: UInt64, _ count: UInt64) -> UInt64 {
        (value << count) | (value >> (64 &- count))
    }
}

/// A generator that always answers the same value.
struct Stuck: RandomNumberGenerator, Sendable {
    let value: UInt64
    mutating func next() -> UInt64 { value }
}

@Suite("BackoffStrategy")
struct BackoffStrategyTests {
    private func delays(_ strategy: BackoffStrategy, _ counts: ClosedRange<Int> = 0...3) -> [Duration] {
        counts.map { strategy.delay(forRetryCount: $0) }
    }

    @Test func theShapesFollowTheirFormulas() {
        #expect(delays(.zero) == [.zero, .zero, .zero, .zero])
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

    @Test func jitterDrawsTheSameValuesAsSwiftConcurrencyRetryFromTheSameGenerator() {
        // The values swift-concurrency-retry's own test expects from `exponential(a: .seconds(3), b: 2)
        // .jitter(using: Xoshiro(seed: 1))`: one draw of the attoseconds below each delay, in turn.
        let strategy = BackoffStrategy.exponential(a: .seconds(3), b: 2).jitter(using: Xoshiro(seed: 1))
        #expect(strategy.duration(0) == .seconds(2) + .nanoseconds(162_894_527) + attoseconds(200_761_519))
        #expect(strategy.duration(1) == .seconds(5) + .nanoseconds(574_149_987) + attoseconds(820_172_283))
        #expect(strategy.duration(2) == .nanoseconds(699_421_850) + attoseconds(917_031_809))
        #expect(strategy.duration(3) == .seconds(8) + .nanoseconds(988_773_637) + attoseconds(185_598_212))
    }

    @Test func aGeneratorStuckOnOneValueGetsADelayNotAnEndlessLoop() {
        // The standard library's draw would loop forever on a generator that always answers 0.
        let zero = BackoffStrategy.constant(.seconds(10)).jitter(using: Stuck(value: 0))
        let high = BackoffStrategy.constant(.seconds(10)).jitter(using: Stuck(value: .max))
        #expect(delays(zero, 0...1) == [.zero, .zero])
        #expect(delays(high, 0...1) == [.seconds(10) - attoseconds(1), .seconds(10) - attoseconds(1)])
    }

    @Test func theGeneratorIsCopiedSoEveryStrategyStartsFromTheSameState() {
        let generator = Xoshiro(seed: 7)
        let first = delays(BackoffStrategy.constant(.seconds(10)).jitter(using: generator))
        let second = delays(BackoffStrategy.constant(.seconds(10)).jitter(using: generator))
        #expect(first == second)
        #expect(Set(first).count == 4)
        #expect(first.allSatisfy { $0 >= .zero && $0 < .seconds(10) })
    }

    @Test func linearAndConstantDelaysAreExactDurations() {
        // In floating point, 1 s + 3 ns rounds; in Duration arithmetic it does not.
        #expect(BackoffStrategy.linear(a: .nanoseconds(1), b: .seconds(1)).duration(3) == .seconds(1) + .nanoseconds(3))
        #expect(
            BackoffStrategy.linear(a: .milliseconds(100), b: .milliseconds(300)).duration(2) == .milliseconds(500))
        #expect(BackoffStrategy.constant(attoseconds(1)).duration(5) == attoseconds(1))
        // The peer's spelling and Rebound's agree.
        let strategy = BackoffStrategy.linear(a: .seconds(3), b: .seconds(2))
        #expect((0...3).map(strategy.duration) == [.seconds(2), .seconds(5), .seconds(8), .seconds(11)])
        #expect((0...3).map(strategy.duration) == delays(strategy))
    }

    @Test func aClosureOfTheRetryCountIsTheStrategy() {
        let strategy = BackoffStrategy(duration: { attempt in .seconds(attempt * attempt) })
        #expect(delays(strategy) == [.zero, .seconds(1), .seconds(4), .seconds(9)])
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

@Suite("A backoff left out")
struct DefaultBackoffTests {
    @Test func zeroMeansNoDelayAndNilTheReceiversOwnDelays() {
        #expect(RetryPolicy(backoff: .zero).delay(forRetryCount: 3) == .zero)
        #expect(RetryPolicy(exponentialBackoffScale: 1).delay(forRetryCount: 3) == .seconds(8))
        #expect(RetryPolicy(exponentialBackoffScale: 1, backoff: nil).delay(forRetryCount: 3) == .seconds(8))
        #expect(JSONBodyRetrier(values: ["X"], delay: .seconds(2)).delay(forRetryCount: 4) == .seconds(2))
        #expect(JSONBodyRetrier(values: ["X"], delay: .seconds(2), backoff: nil).delay(forRetryCount: 4) == .seconds(2))
        #expect(JSONBodyRetrier(values: ["X"], backoff: .zero).delay(forRetryCount: 4) == .zero)
    }

    @Test func aBackoffGivenReplacesTheFormula() {
        let policy = RetryPolicy(exponentialBackoffScale: 1, backoff: .constant(.seconds(3)))
        #expect(policy.delay(forRetryCount: 0) == .seconds(3))
        #expect(policy.delay(forRetryCount: 5) == .seconds(3))
        let json = JSONBodyRetrier(values: ["X"], delay: .seconds(2), backoff: .linear(a: .seconds(1), b: .zero))
        #expect(json.delay(forRetryCount: 4) == .seconds(4))
    }
}

@Suite("BackoffStrategy.none, as swift-concurrency-retry spells it")
struct NoneBackoffTests {
    /// A policy that retries 429 and 503, whose delays without a backoff given are 1 s, 2 s, 4 s, 8 s.
    private static let statuses: Set<Int> = [429, 503]

    @Test func noneIsNoDelayLikeZero() {
        let noDelay: BackoffStrategy = .none

        #expect((0...3).map { noDelay.delay(forRetryCount: $0) } == [.zero, .zero, .zero, .zero])
        #expect(BackoffStrategy.none.duration(2) == .zero)
        guard case .backoff(let strategy) = RetryStrategy.backoff(.none) else {
            Issue.record("not a backoff")
            return
        }
        #expect(strategy.delay(forRetryCount: 5) == .zero)
    }

    @Test func noneGivenAsARetryPolicysBackoffIsNoDelayNeverTheDefault() async throws {
        let initialized = RetryPolicy(
            exponentialBackoffScale: 1, retryableHTTPStatusCodes: Self.statuses, backoff: .none)
        let validated = try RetryPolicy.validated(
            exponentialBackoffScale: 1, retryableHTTPStatusCodes: Self.statuses, backoff: .none)
        let retriers: [any RequestRetrier] = [
            .retryPolicy(exponentialBackoffScale: 1, retryableHTTPStatusCodes: Self.statuses, backoff: .none)
        ]
        let fromFactory = try #require(retriers[0] as? RetryPolicy)

        for policy in [initialized, validated, fromFactory] {
            #expect(policy.delay(forRetryCount: 3) == .zero)
            #expect(await decision(policy, status: 503, retryCount: 1).delay == .zero)
            #expect(await decision(policy, status: 429, retryCount: 1).delay == .zero)
        }
    }

    @Test func noneGivenAsTheThrottlingBackoffIsNoDelayAfterA429NeverTheBackoff() async throws {
        let initialized = RetryPolicy(retryableHTTPStatusCodes: Self.statuses, throttlingBackoff: .none)
        let validated = try RetryPolicy.validated(retryableHTTPStatusCodes: Self.statuses, throttlingBackoff: .none)
        let retriers: [any RequestRetrier] = [
            .retryPolicy(retryableHTTPStatusCodes: Self.statuses, throttlingBackoff: .none)
        ]
        let fromFactory = try #require(retriers[0] as? RetryPolicy)

        for policy in [initialized, validated, fromFactory] {
            #expect(policy.throttlingBackoff?.delay(forRetryCount: 1) == .zero)
            #expect(await decision(policy, status: 429, retryCount: 1).delay == .zero)
            #expect(await decision(policy, status: 503, retryCount: 1).delay == .seconds(1))
        }
    }

    @Test func noneGivenAsBothBackoffsOfTheInitializerIsNoDelayForEither() async {
        let policies = [
            RetryPolicy(retryableHTTPStatusCodes: Self.statuses, backoff: .none, throttlingBackoff: .none),
            RetryPolicy(
                retryableHTTPStatusCodes: Self.statuses, backoff: .none, throttlingBackoff: .constant(.seconds(3))),
            RetryPolicy(
                retryableHTTPStatusCodes: Self.statuses, backoff: .constant(.seconds(3)), throttlingBackoff: .none),
        ]
        let expected: [(Duration?, Duration?)] = [(.zero, .zero), (.zero, .seconds(3)), (.seconds(3), .zero)]

        for (policy, (afterA503, afterA429)) in zip(policies, expected) {
            #expect(await decision(policy, status: 503, retryCount: 1).delay == afterA503)
            #expect(await decision(policy, status: 429, retryCount: 1).delay == afterA429)
        }
    }

    @Test func noneGivenToAJSONBodyRetrierIsNoDelayNeverTheConstantDelay() throws {
        let retriers = [
            JSONBodyRetrier(values: ["X"], delay: .seconds(2), backoff: .none),
            JSONBodyRetrier(delay: .seconds(2), backoff: .none) { _ in true },
            try JSONBodyRetrier.validated(values: ["X"], delay: .seconds(2), backoff: .none),
            try JSONBodyRetrier.validated(delay: .seconds(2), backoff: .none) { _ in true },
        ]

        for retrier in retriers {
            #expect(retrier.delay(forRetryCount: 1) == .zero)
        }
    }

    @Test func aBackoffGivenAsItIsStillChecksTheOtherSettingsNamingThem() {
        let policy = #expect(throws: ConfigurationError.self) {
            try RetryPolicy.validated(retryLimit: -1, backoff: .none)
        }
        let json = #expect(throws: ConfigurationError.self) {
            try JSONBodyRetrier.validated(values: [], backoff: .none)
        }

        #expect(policy?.field == "RetryPolicy.retryLimit")
        #expect(json?.field == "JSONBodyRetrier.values")
    }

    @Test func nilAnOptionalOrNoBackoffStillMeansTheDefault() async {
        let left: BackoffStrategy? = nil
        let policies = [
            RetryPolicy(exponentialBackoffScale: 1, retryableHTTPStatusCodes: Self.statuses),
            RetryPolicy(exponentialBackoffScale: 1, retryableHTTPStatusCodes: Self.statuses, backoff: nil),
            RetryPolicy(exponentialBackoffScale: 1, retryableHTTPStatusCodes: Self.statuses, backoff: left),
            RetryPolicy(
                exponentialBackoffScale: 1, retryableHTTPStatusCodes: Self.statuses, backoff: BackoffStrategy?.none,
                throttlingBackoff: nil),
        ]

        #expect(RetryPolicy().delay(forRetryCount: 1) == .seconds(1))
        #expect(RetryPolicy(retryLimit: 3).delay(forRetryCount: 1) == .seconds(1))
        for policy in policies {
            #expect(policy.delay(forRetryCount: 3) == .seconds(8))
            #expect(policy.throttlingBackoff == nil)
            #expect(await decision(policy, status: 429, retryCount: 1).delay == .seconds(2))
        }
        #expect(
            JSONBodyRetrier(values: ["X"], delay: .seconds(2), backoff: left).delay(forRetryCount: 1) == .seconds(2))
    }
}

/// A duration of `count` attoseconds.
private func attoseconds(_ count: Int64) -> Duration {
    Duration(secondsComponent: 0, attosecondsComponent: count)
}
