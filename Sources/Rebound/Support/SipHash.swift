/// SipHash-2-4 (Aumasson and Bernstein, 2012): a pseudorandom function of a 128-bit secret key, which makes the
/// request ids unpredictable (``RequestIDs``).
///
/// Without the key, its outputs cannot be told from random ones, nor one computed from others: the kind of keyed
/// function Linux uses for TCP sequence numbers. Checked against the reference implementation's test vectors in
/// `SipHashTests`.
struct SipHash24: Sendable {
    private let k0: UInt64
    private let k1: UInt64

    /// A function of the key `k0`, `k1`: the key's 16 bytes, read as two little-endian words.
    init(k0: UInt64, k1: UInt64) {
        self.k0 = k0
        self.k1 = k1
    }

    /// A function of a fresh key from the system's secure random source.
    init() {
        var generator = SystemRandomNumberGenerator()
        self.init(k0: generator.next(), k1: generator.next())
    }

    /// The function's value for `message`.
    func callAsFunction(_ message: some Collection<UInt8>) -> UInt64 {
        var state = State(k0: k0, k1: k1)
        var word: UInt64 = 0
        var count = 0
        for byte in message {
            word |= UInt64(byte) << (8 * UInt64(count % 8))
            count += 1
            if count % 8 == 0 {
                state.compress(word)
                word = 0
            }
        }
        return state.finish(lastWord: word | UInt64(truncatingIfNeeded: count) << 56)
    }

    /// The function's value for a 16-byte message given as two words: the same as for the bytes of `m0` then `m1`,
    /// each little-endian, without going through them one by one.
    func callAsFunction(_ m0: UInt64, _ m1: UInt64) -> UInt64 {
        var state = State(k0: k0, k1: k1)
        state.compress(m0)
        state.compress(m1)
        return state.finish(lastWord: 16 << 56)
    }

    private struct State {
        var v0: UInt64
        var v1: UInt64
        var v2: UInt64
        var v3: UInt64

        init(k0: UInt64, k1: UInt64) {
            // "somepseudorandomlygeneratedbytes", the algorithm's initial constants.
            v0 = k0 ^ 0x736f_6d65_7073_6575
            v1 = k1 ^ 0x646f_7261_6e64_6f6d
            v2 = k0 ^ 0x6c79_6765_6e65_7261
            v3 = k1 ^ 0x7465_6462_7974_6573
        }

        mutating func round() {
            v0 &+= v1
            v1 = v1.rotatedLeft(by: 13) ^ v0
            v0 = v0.rotatedLeft(by: 32)
            v2 &+= v3
            v3 = v3.rotatedLeft(by: 16) ^ v2
            v0 &+= v3
            v3 = v3.rotatedLeft(by: 21) ^ v0
            v2 &+= v1
            v1 = v1.rotatedLeft(by: 17) ^ v2
            v2 = v2.rotatedLeft(by: 32)
        }

        /// Two rounds per message word.
        mutating func compress(_ word: UInt64) {
            v3 ^= word
            round()
            round()
            v0 ^= word
        }

        /// The last word (the message's remaining bytes, its length in the top byte), then four rounds.
        mutating func finish(lastWord: UInt64) -> UInt64 {
            compress(lastWord)
            v2 ^= 0xff
            round()
            round()
            round()
            round()
            return v0 ^ v1 ^ v2 ^ v3
        }
    }
}

extension UInt64 {
    fileprivate func rotatedLeft(by count: UInt64) -> UInt64 {
        (self << count) | (self >> (64 - count))
    }
}
