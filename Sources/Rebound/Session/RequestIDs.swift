import Foundation

/// Makes request identifiers: version-4-format UUIDs, unique within the process and unrelated between processes.
///
/// `UUID()` reads the system's random source on every call, about 0.8 µs on Linux, which was more than half of what
/// an empty session cost per request. Here one random seed per process is mixed with a counter through two
/// SplitMix64 finalizers, each a bijection of the counter, so identifiers never repeat within a process and look
/// random. They are identifiers, not secrets: do not use them where unpredictability matters.
enum RequestIDs {
    private static let state = Locked(
        (seed: (UInt64.random(in: .min ... .max), UInt64.random(in: .min ... .max)), counter: UInt64(0)))

    /// The next identifier.
    static func next() -> UUID {
        let (seed, counter) = state.withLock { state in
            state.counter &+= 1
            return (state.seed, state.counter)
        }
        var high = mix(counter &+ seed.0)
        var low = mix(counter ^ seed.1)
        // RFC 9562 version 4 and variant 10 bits.
        high = (high & ~0xF000) | 0x4000
        low = (low & ~(0xC000_0000_0000_0000 as UInt64)) | 0x8000_0000_0000_0000
        return withUnsafeBytes(of: (high.bigEndian, low.bigEndian)) { bytes in
            UUID(uuid: bytes.load(as: uuid_t.self))
        }
    }

    /// The SplitMix64 finalizer: a bijection on 64-bit values that scatters neighbouring inputs.
    private static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
