import Foundation

/// The delay before retry number `x + 1`, as a pure function of `x` (the retry count, 0 for the first retry): a value
/// you build from the shapes below and combine.
///
/// | strategy | delay for retry count x |
/// |---|---|
/// | ``none`` | 0 |
/// | ``constant(_:)`` | c |
/// | ``linear(a:b:)`` | a·x + b |
/// | ``exponential(a:b:)-(_,Int)`` | a·bˣ |
/// | ``min(_:)`` | max(f(x), m): never shorter than m |
/// | ``max(_:)`` | min(f(x), M): never longer than M |
/// | ``jitter(using:)-(RandomSource)``, ``fullJitter(using:)`` | uniform in [0, f(x)) |
/// | ``equalJitter(using:)`` | f(x)/2 + uniform in [0, f(x)/2) |
/// | ``decorrelatedJitter(base:cap:using:)`` | uniform in [base, 3 × previous delay], at most cap |
///
/// The arithmetic is done in `Double` seconds and every result is held between zero and
/// ``RetryResult/longestDelay``, so nothing overflows: retry 1,000 of an exponential is the cap (or
/// ``RetryResult/longestDelay`` without one), never a crash or infinity. Jitter draws from a ``RandomSource``; with
/// ``RandomSource/seeded(_:)`` the delays are the same on every run.
///
/// ```swift
/// let backoff = BackoffStrategy.exponential(a: .milliseconds(500), b: 2).max(.seconds(30)).fullJitter()
/// let policy = RetryPolicy(retryLimit: 5, backoff: backoff)
/// ```
public struct BackoffStrategy: Sendable {
    private indirect enum Shape: Sendable {
        case none
        case constant(Double)
        case linear(a: Double, b: Double)
        case exponential(a: Double, b: Double)
        case atLeast(Shape, Double)
        case atMost(Shape, Double)
        case fullJitter(Shape, RandomSource)
        case equalJitter(Shape, RandomSource)
        case decorrelated(base: Double, cap: Double, RandomSource)
        case custom(@Sendable (Int, Duration?) -> Duration)
        case automatic
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
        case .none, .constant, .linear, .exponential, .custom, .automatic: shape
        }
    }

    /// Creates a strategy from a closure of the retry count and the previous delay (`nil` before the first retry).
    public init(_ delay: @escaping @Sendable (_ retryCount: Int, _ previousDelay: Duration?) -> Duration) {
        self.init(.custom(delay))
    }

    /// No delay: f(x) = 0.
    public static var none: BackoffStrategy { BackoffStrategy(.none) }

    /// The default of whatever it is given to: for ``RetryPolicy``, its exponential backoff from
    /// ``RetryPolicy/exponentialBackoffBase`` and ``RetryPolicy/exponentialBackoffScale``; for ``JSONBodyRetrier``, its
    /// constant delay. Used on its own, it means no delay.
    ///
    /// It is what those initializers' `backoff:` defaults to, so that `backoff: .none` always means no delay.
    public static var automatic: BackoffStrategy { BackoffStrategy(.automatic) }

    /// Whether this is ``automatic``.
    public var isAutomatic: Bool {
        if case .automatic = shape { return true }
        return false
    }

    /// The same delay every time: f(x) = c.
    public static func constant(_ c: Duration) -> BackoffStrategy {
        BackoffStrategy(.constant(c.seconds))
    }

    /// A delay growing by `a` per retry from `b`: f(x) = a·x + b.
    public static func linear(a: Duration, b: Duration) -> BackoffStrategy {
        BackoffStrategy(.linear(a: a.seconds, b: b.seconds))
    }

    /// A delay multiplied by `b` per retry from `a`: f(x) = a·bˣ.
    public static func exponential(a: Duration, b: Int) -> BackoffStrategy {
        BackoffStrategy(.exponential(a: a.seconds, b: Double(b)))
    }

    /// A delay multiplied by `b` per retry from `a`: f(x) = a·bˣ, with a fractional base such as 1.5.
    public static func exponential(a: Duration, b: Double) -> BackoffStrategy {
        BackoffStrategy(.exponential(a: a.seconds, b: b))
    }

    /// AWS's "decorrelated jitter": uniform in [base, 3 × the previous delay] (base before the first retry), at most
    /// `cap`.
    public static func decorrelatedJitter(
        base: Duration, cap: Duration, using random: RandomSource = .system
    ) -> BackoffStrategy {
        BackoffStrategy(.decorrelated(base: base.seconds, cap: cap.seconds, random))
    }

    /// This strategy, never shorter than `m`: g(x) = max(f(x), m).
    public func min(_ m: Duration) -> BackoffStrategy {
        BackoffStrategy(.atLeast(shape, m.seconds))
    }

    /// This strategy, never longer than `M`: g(x) = min(f(x), M).
    public func max(_ M: Duration) -> BackoffStrategy {
        BackoffStrategy(.atMost(shape, M.seconds))
    }

    /// Full jitter: uniform in [0, f(x)).
    public func fullJitter(using random: RandomSource = .system) -> BackoffStrategy {
        BackoffStrategy(.fullJitter(shape, random))
    }

    /// Full jitter, under the name other retry libraries use: uniform in [0, f(x)).
    public func jitter(using random: RandomSource = .system) -> BackoffStrategy {
        fullJitter(using: random)
    }

    /// Full jitter drawing from a copy of `generator`: uniform in [0, f(x)).
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
        if case .custom(let delay) = shape {
            return Self.clamped(delay(Swift.max(retryCount, 0), previousDelay).seconds)
        }
        return Self.clamped(Self.seconds(shape, x: Double(Swift.max(retryCount, 0)), previous: previousDelay?.seconds))
    }

    private static func seconds(_ shape: Shape, x: Double, previous: Double?) -> Double {
        switch shape {
        case .none, .automatic:
            return 0
        case .constant(let c):
            return c
        case .linear(let a, let b):
            return a * x + b
        case .exponential(let a, let b):
            // a·bˣ: pow overflows to infinity, never traps; clamped below.
            return a == 0 ? 0 : a * Foundation.pow(b, x)
        case .atLeast(let inner, let m):
            return Swift.max(finite(seconds(inner, x: x, previous: previous)), m)
        case .atMost(let inner, let limit):
            return Swift.min(finite(seconds(inner, x: x, previous: previous)), limit)
        case .fullJitter(let inner, let random):
            return finite(seconds(inner, x: x, previous: previous)) * random.unitInterval()
        case .equalJitter(let inner, let random):
            let full = finite(seconds(inner, x: x, previous: previous))
            return full / 2 + full / 2 * random.unitInterval()
        case .decorrelated(let base, let cap, let random):
            let upper = Swift.max(base, 3 * (previous ?? base))
            return Swift.min(base + (upper - base) * random.unitInterval(), cap)
        case .custom(let delay):
            return delay(Int(Swift.min(x, Double(Int.max))), previous.map(Duration.seconds)).seconds
        }
    }

    /// Infinity and NaN become the longest delay, so that caps and jitter apply to a number.
    private static func finite(_ seconds: Double) -> Double {
        seconds.isNaN ? longest : Swift.min(seconds, longest)
    }

    private static let longest = RetryResult.longestDelay.seconds

    private static func clamped(_ seconds: Double) -> Duration {
        guard !seconds.isNaN, seconds > 0 else { return .zero }
        return seconds >= longest ? RetryResult.longestDelay : .seconds(seconds)
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
