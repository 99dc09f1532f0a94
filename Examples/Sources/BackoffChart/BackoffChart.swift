import Foundation
import Rebound

/// Draws Docs/backoff.svg: the delay before each retry of the default `RetryPolicy`, with the spread that full and
/// equal jitter would give shaded, computed by the real `BackoffStrategy` (so the picture cannot drift from the code).
///
/// `swift run --package-path Examples BackoffChart > Docs/backoff.svg`; CI regenerates it and fails on a difference.
@main
enum BackoffChart {
    /// A generator that always draws the same number: the bounds of a jitter's range, from the strategy itself.
    struct Fixed: RandomNumberGenerator, Sendable {
        let value: UInt64
        mutating func next() -> UInt64 { value }
    }

    static let retries = 1...6
    static let width = 720.0
    static let height = 400.0
    static let left = 70.0
    static let right = 24.0
    static let top = 48.0
    static let bottom = 56.0

    static func main() {
        let policy = RetryPolicy()
        let strategy = policy.backoff
        // The delay before retry n is the strategy's delay for retry count n - 1.
        func seconds(_ backoff: BackoffStrategy, _ retry: Int) -> Double {
            let delay = backoff.delay(forRetryCount: retry - 1).components
            return Double(delay.seconds) + Double(delay.attoseconds) / 1e18
        }
        let delays = retries.map { seconds(strategy, $0) }
        let fullLow = retries.map { seconds(strategy.jitter(using: Fixed(value: 0)), $0) }
        let fullHigh = retries.map { seconds(strategy.jitter(using: Fixed(value: .max)), $0) }
        let equalLow = retries.map { seconds(strategy.equalJitter(using: .init(Fixed(value: 0))), $0) }
        let maximum = (delays.max() ?? 1).rounded(.up)

        func x(_ retry: Int) -> Double {
            left + (width - left - right) * Double(retry - retries.lowerBound) / Double(retries.count - 1)
        }
        func y(_ seconds: Double) -> Double {
            top + (height - top - bottom) * (1 - seconds / maximum)
        }
        func number(_ value: Double) -> String { String(format: "%.1f", value) }
        func band(_ low: [Double], _ high: [Double]) -> String {
            let upper = retries.map { "\(number(x($0))),\(number(y(high[$0 - 1])))" }
            let lower = retries.reversed().map { "\(number(x($0))),\(number(y(low[$0 - 1])))" }
            return (upper + lower).joined(separator: " ")
        }

        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" \
            viewBox="0 0 \(Int(width)) \(Int(height))" font-family="-apple-system, Helvetica, Arial, sans-serif" \
            font-size="13">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(Int(left))" y="28" font-size="15" font-weight="bold">RetryPolicy(): delay before each retry \
            (\(policy.exponentialBackoffScale) s × \(policy.exponentialBackoffBase)^(n − 1))</text>

            """
        for tick in stride(from: 0.0, through: maximum, by: maximum > 8 ? 2 : 1) {
            svg += """
                <line x1="\(number(left))" y1="\(number(y(tick)))" x2="\(number(width - right))" \
                y2="\(number(y(tick)))" stroke="#e5e5e5"/>
                <text x="\(number(left - 8))" y="\(number(y(tick) + 4))" text-anchor="end">\(Int(tick)) s</text>

                """
        }
        for retry in retries {
            svg += """
                <text x="\(number(x(retry)))" y="\(number(height - bottom + 20))" text-anchor="middle">\(retry)</text>

                """
        }
        svg += """
            <text x="\(number((left + width - right) / 2))" y="\(number(height - 12))" text-anchor="middle">\
            retry number (the default retryLimit, 2, allows the first two)</text>
            <polygon points="\(band(fullLow, fullHigh))" fill="#4a90d9" fill-opacity="0.15"/>
            <polygon points="\(band(equalLow, fullHigh))" fill="#4a90d9" fill-opacity="0.25"/>

            """
        let line = retries.map { "\(number(x($0))),\(number(y(delays[$0 - 1])))" }.joined(separator: " ")
        svg += "<polyline points=\"\(line)\" fill=\"none\" stroke=\"#1f5fa8\" stroke-width=\"2\"/>\n"
        for retry in retries {
            let allowed = retry <= policy.retryLimit
            svg += """
                <circle cx="\(number(x(retry)))" cy="\(number(y(delays[retry - 1])))" r="4" \
                fill="\(allowed ? "#1f5fa8" : "white")" stroke="#1f5fa8" stroke-width="2"/>

                """
        }
        let legend = top + 12
        svg += """
            <rect x="\(number(left + 12))" y="\(number(legend))" width="14" height="10" fill="#4a90d9" fill-opacity="0.15"/>
            <text x="\(number(left + 32))" y="\(number(legend + 9))">.fullJitter(): uniform in [0, d)</text>
            <rect x="\(number(left + 12))" y="\(number(legend + 18))" width="14" height="10" fill="#4a90d9" \
            fill-opacity="0.4"/>
            <text x="\(number(left + 32))" y="\(number(legend + 27))">.equalJitter(): d/2 + uniform in [0, d/2)</text>
            <circle cx="\(number(left + 19))" cy="\(number(legend + 41))" r="4" fill="#1f5fa8"/>
            <text x="\(number(left + 32))" y="\(number(legend + 45))">d, without jitter (hollow: past the default \
            retryLimit)</text>
            </svg>

            """
        print(svg, terminator: "")
    }
}
