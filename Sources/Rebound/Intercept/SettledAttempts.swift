extension RequestLedger {
    /// The attempts of a request the session settled, and whether the request ended; without an allocation for the
    /// first 64 attempts.
    struct SettledAttempts: Sendable {
        /// Attempt `n` is bit `n - 1` of word `(n - 1) / 64`; the first word is inline.
        private var first: UInt64 = 0
        private var more: [UInt64] = []
        /// Whether the request ended: every attempt counts as settled from then on. Set once, as the request ends
        /// (``RequestLedger/settling(attempt:endsRequest:)``), and never cleared.
        var requestEnded = false

        /// Marks `attempt` settled.
        mutating func insert(_ attempt: Int) {
            guard attempt >= 1 else { return }
            let (word, bit) = (attempt - 1).quotientAndRemainder(dividingBy: 64)
            if word == 0 {
                first |= 1 << UInt64(bit)
                return
            }
            if more.count < word { more.append(contentsOf: repeatElement(0, count: word - more.count)) }
            more[word - 1] |= 1 << UInt64(bit)
        }

        /// Whether `attempt` was settled, or the request ended.
        func contains(_ attempt: Int) -> Bool {
            guard !requestEnded else { return true }
            guard attempt >= 1 else { return false }
            let (word, bit) = (attempt - 1).quotientAndRemainder(dividingBy: 64)
            let bits = word == 0 ? first : word <= more.count ? more[word - 1] : 0
            return bits & (1 << UInt64(bit)) != 0
        }
    }
}
