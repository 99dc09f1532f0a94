/// A point in time on a test clock: the time elapsed since the clock was created.
public struct TestInstant: InstantProtocol, Sendable, CustomStringConvertible {
    /// The time since the clock's start.
    public let offset: Duration

    /// Creates the instant `offset` after the clock's start.
    public init(offset: Duration) {
        self.offset = offset
    }

    /// The instant `duration` later.
    ///
    /// Held at the largest (or smallest) duration there is where the sum would overflow.
    public func advanced(by duration: Duration) -> TestInstant {
        let largest = Duration(secondsComponent: .max, attosecondsComponent: 999_999_999_999_999_999)
        if duration > .zero, offset > largest - duration { return TestInstant(offset: largest) }
        let smallest = Duration(secondsComponent: .min, attosecondsComponent: -999_999_999_999_999_999)
        if duration < .zero, offset < smallest - duration { return TestInstant(offset: smallest) }
        return TestInstant(offset: offset + duration)
    }

    /// The duration from this instant to `other`.
    public func duration(to other: TestInstant) -> Duration {
        other.offset - offset
    }

    /// Orders instants by their offset.
    public static func < (lhs: TestInstant, rhs: TestInstant) -> Bool {
        lhs.offset < rhs.offset
    }

    /// The offset, for test failure messages.
    public var description: String { "TestInstant(\(offset))" }
}
