import Foundation
import FuzzDriver
import Rebound

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A `Retry-After` value, parsed alone and through a 503's headers, the same text as `retry-after-ms` and
/// `x-should-retry`, and as each rate-limit quota field: any result is fine, a crash or a hang is not.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let value = String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
    let now = Date(timeIntervalSince1970: 1_700_000_000)
    if let delay = RetryAfter.delay(from: value, now: now) {
        precondition(delay >= .zero && delay <= RetryResult.longestDelay, "delay out of range: \(delay)")
    }
    _ = RetryAfter.date(from: value)
    if let response = HTTPURLResponse(
        url: URL(string: "https://fuzz.invalid/")!, statusCode: 503, httpVersion: nil,
        headerFields: ["Retry-After": value])
    {
        if let delay = RetryAfter.default.delay(for: response) {
            precondition(delay >= .zero && delay <= RetryAfter.defaultMaximumDelay, "not held at the maximum: \(delay)")
        }
    }
    if let delay = RetryAfter.delay(fromMilliseconds: value) {
        precondition(delay >= .zero && delay <= RetryResult.longestDelay, "delay out of range: \(delay)")
    }
    let signalled = ResponseHead(
        url: URL(string: "https://fuzz.invalid/")!, statusCode: 503,
        headerFields: [("retry-after-ms", value), ("x-should-retry", value)])
    let reading = RetryAfter(signals: .all)
    if let delay = reading.delay(for: signalled) {
        precondition(delay >= .zero && delay <= RetryAfter.defaultMaximumDelay, "not held at the maximum: \(delay)")
    }
    _ = reading.retryAsked(by: signalled)
    for name in [
        "RateLimit", "RateLimit-Policy", "RateLimit-Remaining", "RateLimit-Reset", "X-RateLimit-Remaining",
        "X-RateLimit-Reset", "X-RateLimit-Reset-After",
    ] {
        let head = ResponseHead(
            url: URL(string: "https://fuzz.invalid/")!, statusCode: 200,
            headerFields: [(name, value), ("RateLimit-Remaining", "0"), ("X-RateLimit-Remaining", "0")])
        if let quota = RateLimitQuota(head) {
            precondition(quota.remaining >= 0 && quota.resetsIn >= .zero, "quota out of range: \(quota)")
            precondition(quota.resetsIn <= .seconds(86_400 * 366), "reset not held at a year: \(quota)")
        }
    }
    return 0
}

/// The entry point SwiftPM links the executable with.
@_cdecl("FuzzRetryAfter_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { start, count in fuzz(UnsafeRawPointer(start!), count) }
}
