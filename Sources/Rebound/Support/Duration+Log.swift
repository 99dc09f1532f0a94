import Foundation

extension Duration {
    /// Milliseconds below a second (`12.5 ms`), seconds above (`1.5 s`), without locale-dependent separators.
    ///
    /// Written with integer arithmetic: on Linux `String(format:)` goes through `NSString` and parses its format on
    /// every call, and a log line has several of these.
    var logDescription: String {
        let milliseconds = self / .milliseconds(1)
        return milliseconds >= 999.95
            ? Self.decimal(milliseconds, scale: 1_000) + " s" : Self.decimal(milliseconds * 10, scale: 10) + " ms"
    }

    /// `units / scale` in decimal (`scale` a power of ten), `units` rounded to an integer first as `%f` rounds (ties to
    /// even), and the fraction's trailing zeros dropped.
    private static func decimal(_ units: Double, scale: Int64) -> String {
        let rounded = units.rounded(.toNearestOrEven)
        // Beyond Int64 (durations of billions of years), fall back to the slow, general formatting.
        guard rounded.magnitude < 9e18 else { return String(format: "%.0f", rounded / Double(scale)) }
        let value = Int64(rounded)
        let sign = value < 0 ? "-" : ""
        let whole = (value / scale).magnitude
        var fraction = (value % scale).magnitude
        guard fraction != 0 else { return sign + String(whole) }
        var digits = String(scale).count - 1
        while fraction % 10 == 0 {
            fraction /= 10
            digits -= 1
        }
        let text = String(fraction)
        return sign + String(whole) + "." + String(repeating: "0", count: digits - text.count) + text
    }
}
