import Foundation

/// Makes request identifiers: version-4-format UUIDs, unique within the process and unpredictable, as `UUID()`'s are.
///
/// `UUID()` reads the system's random source on every call, which would be the largest part of an empty session's own
/// work per request. Here a counter goes through SipHash-2-4, one call of its 128-bit output for the two halves, under
/// a secret key drawn once per process from the system's secure random source: each identifier is arithmetic only,
/// and without the key no identifier can be computed from others. That matters because identifiers leave the process: an
/// ``IdempotencyKeyAdapter`` sends them to servers, and servers that do not scope idempotency keys per client must
/// not be able to guess the next one (the Idempotency-Key draft's security considerations). A bijection of the
/// counter without a secret key would not do: it can be undone from a single identifier.
///
/// Unique as random UUIDs are: 122 bits that look random, so two equal among a trillion identifiers has odds below one
/// in 10^12.
enum RequestIDs {
    private static let state = Locked((function: SipHash24(), counter: UInt64(0)))

    /// The next identifier.
    static func next() -> UUID {
        let (function, counter) = state.withLock { state in
            state.counter &+= 1
            return (state.function, state.counter)
        }
        var (high, low) = function.wide(counter)
        // RFC 9562 version 4 and variant 10 bits.
        high = (high & ~0xF000) | 0x4000
        low = (low & ~(0xC000_0000_0000_0000 as UInt64)) | 0x8000_0000_0000_0000
        return withUnsafeBytes(of: (high.bigEndian, low.bigEndian)) { bytes in
            UUID(uuid: bytes.load(as: uuid_t.self))
        }
    }
}
