/// Where jitter gets its randomness: the system's generator, or a seeded one whose delays are reproducible.
///
/// A source is shared by every request that uses the strategy holding it, so it is a class with its generator behind
/// a lock. With ``seeded(_:)`` the sequence of numbers, and so of jittered delays, is the same on every run.
public final class RandomSource: Sendable {
    private enum Generator: Sendable {
        case system
        case seeded(Locked<SplitMix64>)
        case custom(Locked<any RandomNumberGenerator & Sendable>)
    }

    private let generator: Generator

    private init(_ generator: Generator) {
        self.generator = generator
    }

    /// The system's random number generator, the default.
    public static let system = RandomSource(.system)

    /// A generator seeded with `seed` (SplitMix64): the same seed gives the same numbers on every run and platform.
    public static func seeded(_ seed: UInt64) -> RandomSource {
        RandomSource(.seeded(Locked(SplitMix64(state: seed))))
    }

    /// A source drawing from a copy of `generator`, kept behind a lock.
    public convenience init(_ generator: some RandomNumberGenerator & Sendable) {
        self.init(.custom(Locked(generator)))
    }

    /// A uniformly distributed number in `0 ..< 1`.
    public func unitInterval() -> Double {
        switch generator {
        case .system:
            var system = SystemRandomNumberGenerator()
            return Double.random(in: 0..<1, using: &system)
        case .seeded(let locked):
            return locked.withLock { Double.random(in: 0..<1, using: &$0) }
        case .custom(let locked):
            return locked.withLock { generator in
                var any = AnyGenerator(base: generator)
                defer { generator = any.base }
                return Double.random(in: 0..<1, using: &any)
            }
        }
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
