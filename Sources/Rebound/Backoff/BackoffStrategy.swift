import Foundation

/// The delay before retry number `x + 1`, as a pure function of `x` (the retry count, 0 for the first retry): a value
/// you build from the shapes below and combine.
///
/// | strategy | delay for retry count x |
/// |---|---|
/// | ``zero``, ``none`` | 0 |
/// | ``constant(_:)`` | c |
/// | ``linear(a:b:)`` | a·x + b |
/// | ``exponential(a:b:)-(_,Int)`` | a·bˣ |
/// | ``min(_:)`` | max(f(x), m): never shorter than m |
/// | ``max(_:)`` | min(f(x), M): never longer than M |
/// | ``jitter(using:)-(RandomSource)``, ``fullJitter(using:)`` | uniform in [0, f(x)) |
/// | ``equalJitter(using:)`` | f(x)/2 + uniform in [0, f(x)/2) |
/// | ``decorrelatedJitter(base:cap:using:)`` | uniform in [base, 3 × previous delay], at most cap |
///
/// The arithmetic is done in `Duration`, so a constant or linear delay is exact (no floating-point rounding), and
/// every result is held between zero and ``RetryResult/longestDelay``, so nothing overflows: retry 1,000 of an
/// exponential is the cap (or ``RetryResult/longestDelay`` without one), never a crash or infinity. Jitter draws
/// from a ``RandomSource``, to the attosecond; with ``RandomSource/seeded(_:)`` the delays are the same on every run.
///
/// ```swift
/// let backoff = BackoffStrategy.exponential(a: .milliseconds(500), b: 2).max(.seconds(30)).fullJitter()
/// let policy = RetryPolicy(retryLimit: 5, backoff: backoff)
/// ```
public struct BackoffStrategy: Sendable {
    private indirect enum Shape: Sendable {
        case zero
        case constant(Duration)
        case linear(a: Duration, b: Duration)
        case exponential(a: Duration, b: Double)
        case atLeast(Shape, Duration)
        case atMost(Shape, Duration)
        case fullJitter(Shape, RandomSource)
        case equalJitter(Shape, RandomSource)
        case decorrelated(base: Duration, cap: Duration, RandomSource)
        case custom(@Sendable (Int, Duration?) -> Duration)
    }

    private let shape: Shape

    private init(_ shape: Shape) {
        self.shape = shape
    }

    /// The same strategy without its jitter: the upper bound each jittered delay is drawn under (the base, for
    /// decorrelated jitter).
    var withoutJitter: BackoffStrategy { BackoffStrategy(Self.unjittered(shape)) }

    private static func unjittered(_ shape: Shape) -> Shape {
        switch shape {
        case .fullJitter(let inner, _), .equalJitter(let inner, _): unjittered(inner)
        case .atLeast(let inner, let m): .atLeast(unjittered(inner), m)
        case .atMost(let inner, let m): .atMost(unjittered(inner), m)
        case .decorrelated(let base, _, _): .constant(base)
        case .zero, .constant, .linear, .exponential, .custom: shape
        }
    }

    /// Creates a strategy from a closure of the retry count and the previous delay (`nil` before the first retry).
    public init(_ delay: @escaping @Sendable (_ retryCount: Int, _ previousDelay: Duration?) -> Duration) {
        self.init(.custom(delay))
    }

    /// Creates a strategy from a closure of the retry count, as swift-concurrency-retry's `init(duration:)` does.
    public init(duration: @escaping @Sendable (_ attempt: Int) -> Duration) {
        self.init(.custom({ retryCount, _ in duration(retryCount) }))
    }

    /// No delay: f(x) = 0.
    public static var zero: BackoffStrategy { BackoffStrategy(.zero) }

    /// No delay, under swift-concurrency-retry's name: the same as ``zero``.
    ///
    /// Every Rebound parameter that takes an optional backoff (`backoff:`, `throttlingBackoff:`) has an overload that
    /// takes one as it is, so `.none` given there is this strategy, never `nil`; in `RetryPolicy.validated(…)` and
    /// `.retryPolicy(…)`, `.none` beside the other backoff written as a strategy does not compile (the compiler finds
    /// it ambiguous). Where nothing but an optional is expected (`let backoff: BackoffStrategy? = .none`), Swift's
    /// rule makes `.none` `nil`, with the compiler's warning. ``zero`` is no delay in every one of these places.
    public static var none: BackoffStrategy { .zero }

    /// The same delay every time: f(x) = c.
    public static func constant(_ c: Duration) -> BackoffStrategy {
        BackoffStrategy(.constant(c))
    }

    /// A delay growing by `a` per retry from `b`: f(x) = a·x + b, exact (no floating-point rounding).
    public static func linear(a: Duration, b: Duration) -> BackoffStrategy {
        BackoffStrategy(.linear(a: a, b: b))
    }

    /// A delay multiplied by `b` per retry from `a`: f(x) = a·bˣ.
    public static func exponential(a: Duration, b: Int) -> BackoffStrategy {
        BackoffStrategy(.exponential(a: a, b: Double(b)))
    }

    /// A delay multiplied by `b` per retry from `a`: f(x) = a·bˣ, with a fractional base such as 1.5.
    public static func exponential(a: Duration, b: Double) -> BackoffStrategy {
        BackoffStrategy(.exponential(a: a, b: b))
    }

    /// AWS's "decorrelated jitter": uniform in [base, 3 × the previous delay] (base before the first retry), at most
    /// `cap`.
    public static func decorrelatedJitter(
        base: Duration, cap: Duration, using random: RandomSource = .system
    ) -> BackoffStrategy {
        BackoffStrategy(.decorrelated(base: base, cap: cap, random))
    }

    /// This strategy, never shorter than `m`: g(x) = max(f(x), m).
    public func min(_ m: Duration) -> BackoffStrategy {
        BackoffStrategy(.atLeast(shape, m))
    }

    /// This strategy, never longer than `M`: g(x) = min(f(x), M).
    public func max(_ M: Duration) -> BackoffStrategy {
        BackoffStrategy(.atMost(shape, M))
    }

    /// Full jitter: uniform in [0, f(x)), drawn to the attosecond.
    public func fullJitter(using random: RandomSource = .system) -> BackoffStrategy {
        BackoffStrategy(.fullJitter(shape, random))
    }

    /// Full jitter, under the name other retry libraries use: uniform in [0, f(x)).
    public func jitter(using random: RandomSource = .system) -> BackoffStrategy {
        fullJitter(using: random)
    }

    /// Full jitter drawing from a copy of `generator`: uniform in [0, f(x)), the same values swift-concurrency-retry's
    /// `jitter(using:)` draws from the same generator.
    public func jitter(using generator: some RandomNumberGenerator & Sendable) -> BackoffStrategy {
        fullJitter(using: RandomSource(generator))
    }

    /// Equal jitter: half of f(x), plus uniform in [0, f(x)/2).
    public func equalJitter(using random: RandomSource = .system) -> BackoffStrategy {
        BackoffStrategy(.equalJitter(shape, random))
    }

    /// The delay before retry number `retryCount + 1`, given the delay before the previous retry (`nil` if none).
    ///
    /// A negative retry count counts as 0. The result is between zero and ``RetryResult/longestDelay``.
    public func delay(forRetryCount retryCount: Int, previousDelay: Duration? = nil) -> Duration {
        Self.clamped(Self.value(shape, x: Swift.max(retryCount, 0), previous: previousDelay))
    }

    /// The delay for `attempt` (the retry count, 0 before the first retry), under swift-concurrency-retry's name:
    /// ``delay(forRetryCount:previousDelay:)`` with no previous delay.
    public func duration(_ attempt: Int) -> Duration {
        delay(forRetryCount: attempt)
    }

    /// f(x), exact in `Duration` arithmetic while it stays within ±``RetryResult/longestDelay`` and held there beyond
    /// (so that nothing overflows), before the final clamp to zero and up.
    private static func value(_ shape: Shape, x: Int, previous: Duration?) -> Duration {
        switch shape {
        case .zero:
            return .zero
        case .constant(let c):
            return saturated(c)
        case .linear(let a, let b):
            let estimate = a.seconds * Double(x) + b.seconds
            guard Swift.abs(a.seconds) * Double(x) < longestSeconds, Swift.abs(b.seconds) < longestSeconds else {
                return saturated(seconds: estimate)
            }
            return saturated(a * x + b)
        case .exponential(let a, let b):
            // a·bˣ: pow may overflow to infinity, which saturates; never a trap.
            guard a != .zero else { return .zero }
            let factor = Foundation.pow(b, Double(x))
            let estimate = a.seconds * factor
            guard estimate.isFinite, Swift.abs(estimate) < longestSeconds else { return saturated(seconds: estimate) }
            return a * factor
        case .atLeast(let inner, let m):
            return Swift.max(value(inner, x: x, previous: previous), saturated(m))
        case .atMost(let inner, let limit):
            return Swift.min(value(inner, x: x, previous: previous), saturated(limit))
        case .fullJitter(let inner, let random):
            let full = value(inner, x: x, previous: previous)
            return full > .zero ? random.duration(below: full) : .zero
        case .equalJitter(let inner, let random):
            let full = value(inner, x: x, previous: previous)
            guard full > .zero else { return .zero }
            let half = full / 2
            return half + random.duration(below: full - half)
        case .decorrelated(let base, let cap, let random):
            let base = saturated(base)
            let upper = Swift.max(base, saturated(seconds: 3 * (previous ?? base).seconds))
            let drawn = upper > base ? base + random.duration(below: upper - base) : base
            return Swift.min(drawn, saturated(cap))
        case .custom(let delay):
            return saturated(delay(x, previous))
        }
    }

    private static let longest = RetryResult.longestDelay
    private static let longestSeconds = RetryResult.longestDelay.seconds

    /// The duration held within ±``RetryResult/longestDelay``.
    private static func saturated(_ duration: Duration) -> Duration {
        Swift.min(Swift.max(duration, .zero - longest), longest)
    }

    /// Seconds as a duration, held within ±``RetryResult/longestDelay``; NaN counts as the longest.
    private static func saturated(seconds: Double) -> Duration {
        if seconds.isNaN || seconds >= longestSeconds { return longest }
        if seconds <= -longestSeconds { return .zero - longest }
        return .seconds(seconds)
    }

    private static func clamped(_ duration: Duration) -> Duration {
        Swift.min(Swift.max(duration, .zero), longest)
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`; any duration, also one whose seconds do not fit an `Int64`.
    var seconds: Double {
        self / .seconds(1)
    }
}

extension Int {
    /// `value` rounded toward zero, held within `Int`'s range; 0 for NaN: a count computed in `Double` that may have
    /// grown past what an `Int` holds (a huge configured rate or window).
    init(saturating value: Double) {
        if value.isNaN {
            self = 0
        } else if value >= Double(Int.max) {
            self = .max
        } else if value <= Double(Int.min) {
            self = .min
        } else {
            self = Int(value)
        }
    }
}
