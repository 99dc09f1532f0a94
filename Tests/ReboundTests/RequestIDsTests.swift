import Foundation
import Testing

@testable import Rebound

@Suite("Request IDs")
struct RequestIDsTests {
    @Test func areUniqueAcrossManyRequestsAndThreads() async {
        let ids = await withTaskGroup(of: [UUID].self) { group in
            for _ in 0..<8 {
                group.addTask { (0..<10_000).map { _ in RequestIDs.next() } }
            }
            return await group.reduce(into: [UUID]()) { $0 += $1 }
        }

        #expect(Set(ids).count == 80_000)
    }

    @Test func carryTheVersion4AndVariantBits() {
        for _ in 0..<1_000 {
            let text = Array(RequestIDs.next().uuidString)
            #expect(text[14] == "4")
            #expect("89AB".contains(text[19]))
        }
    }

    /// Ids that mix a counter and a seed through SplitMix64's finalizer, a bijection anyone can undo, give away the
    /// next id, and with it the next `Idempotency-Key`. Undone here the same way, two ids a few requests apart must not
    /// come out as neighbouring counters.
    @Test("One id does not give away the next: undoing SplitMix64's finalizer finds no neighbouring counters")
    func oneIDDoesNotGiveAwayTheNext() {
        for _ in 0..<100 {
            let first = RequestIDs.next()
            let second = RequestIDs.next()
            let firstCandidates = Self.splitMixCounters(of: first)
            let secondCandidates = Self.splitMixCounters(of: second)
            // Other tests make ids meanwhile, so "next" means within a few million.
            let neighbours = firstCandidates.contains { a in
                secondCandidates.contains { b in b &- a > 0 && b &- a < 1 << 22 }
            }
            #expect(!neighbours, "\(second) follows from \(first)")
        }
    }

    /// The values of `counter + seed` that SplitMix64's finalizer would turn into `id`'s high half: the finalizer
    /// undone, for each of the 16 values of the four bits the version overwrites.
    private static func splitMixCounters(of id: UUID) -> [UInt64] {
        let high = withUnsafeBytes(of: id.uuid) { UInt64(bigEndian: $0.load(as: UInt64.self)) }
        return (0..<16).map { (nibble: UInt64) in
            var z = (high & ~0xF000) | (nibble << 12)
            // SplitMix64's finalizer, step by step backwards: each xor-shift and each odd multiplication undone.
            z = z ^ (z >> 31) ^ (z >> 62)
            z = z &* 0x3196_42B2_D24D_8EC3
            z = z ^ (z >> 27) ^ (z >> 54)
            z = z &* 0x96DE_1B17_3F11_9089
            z = z ^ (z >> 30) ^ (z >> 60)
            return z &- 0x9E37_79B9_7F4A_7C15
        }
    }

    @Test func consecutiveIDsShareNoObviousPrefix() {
        let first = RequestIDs.next().uuidString
        let second = RequestIDs.next().uuidString

        #expect(first.prefix(8) != second.prefix(8))
    }
}
