import Foundation
import Testing

@testable import Rebound

@Suite("Duration in log lines")
struct DurationLogTests {
    @Test(arguments: [
        (Duration.zero, "0 ms"), (.microseconds(40), "0 ms"), (.microseconds(50), "0 ms"),
        (.microseconds(51), "0.1 ms"),
        (.milliseconds(12) + .microseconds(300), "12.3 ms"), (.microseconds(12_250), "12.2 ms"),
        (.microseconds(12_350), "12.4 ms"), (.milliseconds(500), "500 ms"), (.microseconds(999_940), "999.9 ms"),
        (.microseconds(999_950), "1 s"), (.milliseconds(1_500), "1.5 s"), (.seconds(2), "2 s"),
        (.milliseconds(61_005), "61.005 s"), (.milliseconds(61_050), "61.05 s"), (.seconds(30), "30 s"),
        (RetryResult.longestDelay, "1000000000000 s"), (.milliseconds(-1_500), "-1500 ms"),
    ])
    func readsAsMillisecondsBelowASecondAndSecondsAbove(duration: Duration, text: String) {
        #expect(duration.logDescription == text)
    }

    @Test func agreesWithPrintfRoundingOverManyDurations() {
        var generator = SplitMix64(state: 7)
        for _ in 0..<20_000 {
            let duration = Duration.nanoseconds(Int64.random(in: 0...90_000_000_000, using: &generator))
            #expect(duration.logDescription == reference(duration))
        }
    }

    /// The formatting as it was first written, with `String(format:)`.
    private func reference(_ duration: Duration) -> String {
        let milliseconds = Double(duration.components.seconds) * 1_000 + Double(duration.components.attoseconds) / 1e15
        func trimmed(_ value: Double, digits: Int) -> String {
            var text = String(format: "%.\(digits)f", value)
            while text.contains("."), text.hasSuffix("0") || text.hasSuffix(".") { text.removeLast() }
            return text
        }
        return milliseconds >= 999.95
            ? trimmed(milliseconds / 1_000, digits: 3) + " s" : trimmed(milliseconds, digits: 1) + " ms"
    }
}
