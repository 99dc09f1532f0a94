/// SipHash-2-4 (Aumasson and Bernstein, 2012): a pseudorandom function of a 128-bit secret key, which makes the
/// request ids unpredictable (``RequestIDs``).
///
/// Without the key, its outputs cannot be told from random ones, nor one computed from others: the kind of keyed
/// function Linux uses for TCP sequence numbers. Its 64-bit and 128-bit outputs are checked against the reference
/// implementation's test vectors in `SipHashTests`.
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

    /// The function's value for `message`. (Request ids take `wide(_ word:)`; this and the byte-wise `wide` are
    /// what the reference vectors check.)
    func callAsFunction(_ message: some Collection<UInt8>) -> UInt64 {
        var (state, lastWord) = absorbing(message, wide: false)
        return state.finish(lastWord: lastWord)
    }

    /// The function's 128-bit value for `message` (SipHash-2-4 with a 128-bit output, the reference's `outlen` 16):
    /// its first eight bytes, then the last eight, each read as a little-endian word.
    func wide(_ message: some Collection<UInt8>) -> (UInt64, UInt64) {
        var (state, lastWord) = absorbing(message, wide: true)
        return state.finishWide(lastWord: lastWord)
    }

    /// The function's 128-bit value for an 8-byte message given as a word: the same as for the bytes of `word`,
    /// little-endian, without going through them one by one.
    func wide(_ word: UInt64) -> (UInt64, UInt64) {
        var state = State(k0: k0, k1: k1, wide: true)
        state.compress(word)
        return state.finishWide(lastWord: 8 << 56)
    }

    /// The state once the message's whole words are compressed, and the last word: the remaining bytes, with the
    /// message's length in the top byte.
    private func absorbing(_ message: some Collection<UInt8>, wide: Bool) -> (State, lastWord: UInt64) {
        var state = State(k0: k0, k1: k1, wide: wide)
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
        return (state, word | UInt64(truncatingIfNeeded: count) << 56)
    }

    private struct State {
        var v0: UInt64
        var v1: UInt64
        var v2: UInt64
        var v3: UInt64

        /// The initial state; a 128-bit output (`wide`) starts from another one.
        init(k0: UInt64, k1: UInt64, wide: Bool) {
            // "somepseudorandomlygeneratedbytes", the algorithm's initial constants.
            v0 = k0 ^ 0x736f_6d65_7073_6575
            v1 = k1 ^ 0x646f_7261_6e64_6f6d ^ (wide ? 0xee : 0)
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
            for _ in 0..<4 { round() }
            return v0 ^ v1 ^ v2 ^ v3
        }

        /// The last word, then four rounds for each half of a 128-bit output.
        mutating func finishWide(lastWord: UInt64) -> (UInt64, UInt64) {
            compress(lastWord)
            v2 ^= 0xee
            for _ in 0..<4 { round() }
            let first = v0 ^ v1 ^ v2 ^ v3
            v1 ^= 0xdd
            for _ in 0..<4 { round() }
            return (first, v0 ^ v1 ^ v2 ^ v3)
        }
    }
}

extension UInt64 {
    fileprivate func rotatedLeft(by count: UInt64) -> UInt64 {
        (self << count) | (self >> (64 - count))
    }
}
