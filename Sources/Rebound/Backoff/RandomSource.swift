/// Where jitter gets its randomness: the system's generator, or a seeded one whose delays are reproducible.
///
/// A source is shared by every request that uses the strategy holding it, so it is a class with its generator behind
/// a lock. With ``seeded(_:)`` the sequence of numbers, and so of jittered delays, is the same on every run.
public final class RandomSource: Sendable {
    /// The generator behind its lock; `nil` for the system's, which needs none.
    private let locked: Locked<any RandomNumberGenerator & Sendable>?

    private init(locked: Locked<any RandomNumberGenerator & Sendable>?) {
        self.locked = locked
    }

    /// The system's random number generator, the default.
    public static let system = RandomSource(locked: nil)

    /// A generator seeded with `seed` (SplitMix64): the same seed gives the same numbers on every run and platform.
    public static func seeded(_ seed: UInt64) -> RandomSource {
        RandomSource(locked: Locked(SplitMix64(state: seed)))
    }

    /// A source drawing from a copy of `generator`, kept behind a lock.
    public convenience init(_ generator: some RandomNumberGenerator & Sendable) {
        self.init(locked: Locked(generator))
    }

    /// A uniformly distributed number in `0 ..< 1`.
    public func unitInterval() -> Double {
        withGenerator { Double.random(in: 0..<1, using: &$0) }
    }

    /// Runs `body` with exclusive use of the generator (the system's needs no lock).
    private func withGenerator<Result>(_ body: (inout AnyGenerator) -> Result) -> Result {
        guard let locked else {
            var system = AnyGenerator(base: SystemRandomNumberGenerator())
            return body(&system)
        }
        return locked.withLock { generator in
            var any = AnyGenerator(base: generator)
            defer { generator = any.base }
            return body(&any)
        }
    }
}

extension RandomSource {
    /// A duration drawn uniformly in `0 ..< upper` (which must be longer than zero), to the attosecond.
    ///
    /// The draw is the standard library's `Int128.random(in: 0 ..< attoseconds, using:)`, step for step, so a
    /// generator gives the same durations here as in swift-concurrency-retry's jitter. Where `Int128` is not available
    /// (Apple systems before macOS 15 and iOS 18), it is `upper` times ``unitInterval()``.
    func duration(below upper: Duration) -> Duration {
        guard #available(macOS 15.0, iOS 18.0, macCatalyst 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) else {
            return upper * unitInterval()
        }
        let total =
            UInt128(upper.components.seconds) * Self.attosecondsPerSecond
            + UInt128(upper.components.attoseconds)
        let drawn = withGenerator { Self.draw(below: total, using: &$0) }
        let (seconds, attoseconds) = drawn.quotientAndRemainder(dividingBy: Self.attosecondsPerSecond)
        return Duration(secondsComponent: Int64(seconds), attosecondsComponent: Int64(attoseconds))
    }

    @available(macOS 15.0, iOS 18.0, macCatalyst 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    private static var attosecondsPerSecond: UInt128 { 1_000_000_000_000_000_000 }

    /// A number in `0 ..< upperBound` by Lemire's method, as `RandomNumberGenerator.next(upperBound:)` draws it (a
    /// 128-bit word from two 64-bit ones, low first), except that a generator which keeps answering values the method
    /// rejects (one that always answers 0, say) gets a number after 64 tries instead of a loop without end.
    @available(macOS 15.0, iOS 18.0, macCatalyst 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    private static func draw(below upperBound: UInt128, using generator: inout some RandomNumberGenerator) -> UInt128 {
        func word() -> UInt128 {
            let low = UInt128(generator.next() as UInt64)
            return low | UInt128(generator.next() as UInt64) << 64
        }
        var product = word().multipliedFullWidth(by: upperBound)
        if product.low < upperBound {
            let threshold = (0 &- upperBound) % upperBound
            var tries = 1
            while product.low < threshold, tries < 64 {
                product = word().multipliedFullWidth(by: upperBound)
                tries += 1
            }
        }
        return product.high
    }
}

/// SplitMix64 (Steele, Lea and Flood): small, fast, and good enough for jitter.
package struct SplitMix64: RandomNumberGenerator, Sendable {
    var state: UInt64

    init(state: UInt64) {
        self.state = state
    }

    /// A generator seeded with `seed`; for the package's tests.
    package init(seed: UInt64) {
        self.state = seed
    }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Lets an existential generator be passed where a concrete one is needed.
private struct AnyGenerator: RandomNumberGenerator {
    var base: any RandomNumberGenerator & Sendable

    mutating func next() -> UInt64 {
        base.next()
    }
}
