import Testing

@testable import Rebound

/// The table a per-host part keeps its hosts in: idle hosts at rest are forgotten as new ones come, and it never holds
/// more than its capacity (or, keeping busy hosts, more than its busy hosts).
@Suite("HostTable")
struct HostTableTests {
    /// Adds `count` hosts named from `first` on, each with `value`.
    private func add(
        _ count: Int, from first: Int = 0, value: Int = 0, to table: inout HostTable<Int>,
        isAtRest: (Int) -> Bool = { $0 == 0 }
    ) {
        for index in first..<(first + count) {
            table.update("host\(index)", make: { value }, isAtRest: isAtRest) { _ in }
        }
    }

    @Test func hostsAtRestAreForgottenAsNewOnesComeAndOthersAreKept() {
        var table = HostTable<Int>(capacity: 1_000_000)
        // Ten hosts that still say something (not at rest), then a stream of hosts used once and left at rest.
        add(10, value: 1, to: &table)
        add(10_000, from: 10, to: &table)
        let afterTenThousand = table.count
        add(90_000, from: 10_010, to: &table)

        #expect(table.count < 1_000, "kept \(table.count) of 100,010 hosts")
        #expect(table.count <= afterTenThousand + 10, "kept \(table.count), \(afterTenThousand) after 10,010")
        for index in 0..<10 { #expect(table["host\(index)"] == 1, "host\(index) is not at rest: kept") }
    }

    @Test func aHostInUseIsNotForgottenThoughItIsAtRest() {
        var table = HostTable<Int>(capacity: 1_000_000)
        for index in 0..<5_000 {
            add(1, from: index + 1, to: &table)
            // The first host, at rest, is used between every two new hosts.
            table.update("host0", make: { 0 }, isAtRest: { $0 == 0 }) { _ in }
        }
        #expect(table["host0"] == 0)
        #expect(table.count < 100)
    }

    @Test func neverMoreThanItsCapacityTheHostUsedLeastLatelyGoesFirst() {
        var table = HostTable<Int>(capacity: 100)
        add(100, value: 1, to: &table)
        // Host 0 is used again; every other is not at rest and not used since.
        for _ in 0..<3 { table.modify("host0") { $0 += 1 } }
        add(1, from: 100, value: 1, to: &table)

        #expect(table.count == 100)
        #expect(table["host0"] == 4, "the host used lately is kept")
        #expect(table["host100"] == 1)
        add(10_000, from: 101, value: 1, to: &table)
        #expect(table.count == 100)
    }

    @Test func keepingBusyHostsItForgetsOnlyHostsAtRestAndGrowsOnlyWithBusyOnes() {
        var table = HostTable<Int>(capacity: 10, keepsBusyHosts: true)
        add(10, value: 1, to: &table)
        // Full of busy hosts: a new one is added past the capacity, and no busy host is forgotten.
        add(5, from: 10, value: 1, to: &table)
        #expect(table.count == 15)
        for index in 0..<15 { #expect(table["host\(index)"] == 1) }
        // As they become idle, new hosts take their room.
        for index in 0..<15 { table.modify("host\(index)") { $0 = 0 } }
        add(100, from: 15, to: &table)
        #expect(table.count <= 15)
    }

    @Test func removingAHostKeepsTheOthersReachable() {
        var table = HostTable<Int>(capacity: 1_000)
        add(50, value: 1, to: &table)
        for index in stride(from: 0, to: 50, by: 3) { table.remove("host\(index)") }
        for index in 0..<50 {
            #expect((table["host\(index)"] == nil) == index.isMultiple(of: 3))
        }
        #expect(table.count == 33)
        #expect(table.all.count == 33)
    }

    @Test func onceAPeriodEveryHostAtRestGoesInOnePassAndTheOthersStayReachable() {
        var table = HostTable<Int>(capacity: 1_000_000)
        add(100, value: 1, to: &table)
        add(1_000, from: 100, to: &table)
        let atRest = { (value: Int) in value == 0 }

        // The first pass comes at the first call; within the period after it, a call moves the hand a step only.
        table.forgetIdle(at: .seconds(10), every: .seconds(5), isAtRest: atRest)
        #expect(table.count == 100)
        add(50, from: 2_000, to: &table)
        table.forgetIdle(at: .seconds(12), every: .seconds(5), isAtRest: atRest)
        #expect(table.count > 100)

        // A period later, every host at rest goes, used or not; the others keep their values and stay reachable:
        // changed, removed and swept again in turn.
        table.forgetIdle(at: .seconds(15), every: .seconds(5), isAtRest: atRest)
        #expect(table.count == 100)
        for index in 0..<100 { #expect(table.modify("host\(index)") { $0 += 1 } != nil) }
        table.remove("host0")
        add(10, from: 3_000, value: 1, to: &table)
        for _ in 0..<500 { table.forgetIdle(steps: 1, isAtRest: atRest) }
        #expect(table.count == 109)
        for index in 1..<100 { #expect(table["host\(index)"] == 2) }
        table.forgetIdle(at: .seconds(20), every: .seconds(5), isAtRest: { $0 == 2 })
        #expect(table.count == 10)
        for index in 3_000..<3_010 { #expect(table["host\(index)"] == 1) }
    }

    @Test func idleHostsAtRestAreForgottenStepByStepThoughNoNewHostComes() {
        var table = HostTable<Int>(capacity: 1_000)
        // 50 hosts that come to rest once added, 10 that still say something, and one at rest used between every two
        // steps.
        add(50, to: &table, isAtRest: { _ in false })
        add(10, from: 50, value: 1, to: &table, isAtRest: { _ in false })
        add(1, from: 60, to: &table, isAtRest: { _ in false })
        #expect(table.count == 61)

        for _ in 0..<61 {
            table.modify("host60") { _ in }
            table.forgetIdle(steps: 2, isAtRest: { $0 == 0 })
        }

        // Two rounds of the hand: every idle host at rest is gone, no other one.
        #expect(table.count == 11)
        for index in 50..<60 { #expect(table["host\(index)"] == 1) }
        #expect(table["host60"] == 0)
        // A host added after them is found, and the table still makes room as before.
        add(1, from: 61, to: &table)
        #expect(table["host61"] == 0)
    }

    @Test func everyHostReadsItsOwnValueThroughDropsAndRemovals() {
        var table = HostTable<Int>(capacity: 8)
        // Each host's value is its number; the odd ones are at rest, so the hand drops some as hosts come.
        for index in 0..<60 {
            table.update("host\(index)", make: { index }, isAtRest: { $0 % 2 == 1 }) { _ in }
            if index % 5 == 4 { table.remove("host\(index)") }  // the host just added: the last slot
            if index % 7 == 3 { table.remove("host\(index - 2)") }  // one added before it
            for (key, value) in table.all {
                #expect(key == "host\(value)")
                #expect(table[key] == value, "\(key) reads another host's value")
            }
        }
        #expect(table.count <= 8)
    }

    /// The table finds the host changed last again without looking its key up; a host removed, or another moved into its
    /// slot, or a table that shrank below that slot, leaves the right entry found, or none.
    @Test func aHostChangedAgainIsItsOwnEntryWhateverMovedSince() {
        var table = HostTable<Int>(capacity: 100)
        add(5, value: 1, to: &table)
        let changed = table.modify("host1") { value -> Int in
            value += 10
            return value
        }
        #expect(changed == 11)
        #expect(table.modify("host1") { $0 } == 11)  // found again in the slot it was found in
        // The last host moves into the removed one's slot, the one the table found last.
        table.remove("host1")
        #expect(table.modify("host1") { $0 } == nil)
        let moved = table.modify("host4") { value -> Int in
            value += 100
            return value
        }
        #expect(moved == 101)
        #expect(table["host4"] == 101)
        // Fewer hosts than the slot found last.
        table.remove("host3")
        table.remove("host2")
        table.remove("host4")
        #expect(table.modify("host4") { $0 } == nil)
        #expect(table.modify("host0") { $0 } == 1)
        #expect(table.count == 1)
    }

    @Test func theHandLooksAtTheHostThatTakesADroppedOnesPlaceNext() {
        var table = HostTable<Int>(capacity: 100)
        for index in 0..<5 { table.update("host\(index)", make: { index }, isAtRest: { _ in false }) { _ in } }
        // One round clears every host's use; the next reads them in the hand's order.
        table.forgetIdle(steps: 5, isAtRest: { _ in false })
        var seen: [Int] = []
        table.forgetIdle(steps: 5) { value in
            seen.append(value)
            return false
        }
        #expect(seen == [1, 2, 3, 4, 0])

        // The hand is back on host1: dropped, its place goes to the last host, which the hand reads next.
        table.forgetIdle(steps: 1, isAtRest: { $0 == 1 })
        seen = []
        table.forgetIdle(steps: 4) { value in
            seen.append(value)
            return false
        }
        #expect(seen == [4, 2, 3, 0])
        #expect(table["host1"] == nil)
        for index in [0, 2, 3, 4] { #expect(table["host\(index)"] == index) }
    }

    @Test func aHostAddedAtCapacityIsTheOneItsUpdateChanges() {
        var table = HostTable<Int>(capacity: 4)
        for index in 0..<4 { table.update("host\(index)", make: { 10 + index }, isAtRest: { _ in false }) { _ in } }
        table.update("new", make: { 0 }, isAtRest: { _ in false }) { $0 += 7 }

        #expect(table["new"] == 7)
        #expect(table.count == 4, "one host made room")
        for (key, value) in table.all where key != "new" { #expect(key == "host\(value - 10)") }
    }
}
