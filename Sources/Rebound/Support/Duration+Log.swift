import Foundation

extension Duration {
    /// Milliseconds below a second (`12.5 ms`), seconds above (`1.5 s`), without locale-dependent separators.
    var logDescription: String {
        let milliseconds = Double(components.seconds) * 1_000 + Double(components.attoseconds) / 1e15
        return milliseconds >= 999.95
            ? Self.trimmed(milliseconds / 1_000, digits: 3) + " s" : Self.trimmed(milliseconds, digits: 1) + " ms"
    }

    private static func trimmed(_ value: Double, digits: Int) -> String {
        var text = String(format: "%.\(digits)f", value)
        while text.contains("."), text.hasSuffix("0") || text.hasSuffix(".") { text.removeLast() }
        return text
    }
}
