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

    @Test func consecutiveIDsShareNoObviousPrefix() {
        let first = RequestIDs.next().uuidString
        let second = RequestIDs.next().uuidString

        #expect(first.prefix(8) != second.prefix(8))
    }
}
