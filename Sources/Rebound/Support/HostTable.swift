/// The state a per-host part keeps for each host, bounded: a host that sits idle with its state back at rest is
/// forgotten, and the table never holds more than its capacity.
///
/// **Forgetting idle hosts.** Each host added moves a hand three steps around the table (the CLOCK algorithm): a host
/// the hand reaches that was not used since the hand last passed it, and whose state is at rest (the part says what
/// that is: a closed breaker with no failures, a full bucket, an empty window), is dropped; the hand clears the others'
/// use. A host takes two visits to drop (one clears its use), so three steps a host outpace the hosts added. So the
/// table holds the hosts used lately and those whose state still says something, at a constant cost per host added.
///
/// **At capacity.** A new host first makes room: the hand drops the first host it reaches, among the next 16, that is at
/// rest or was not used since it last passed, or else the host under it, so a host used little lately goes, whatever
/// its state. A table that keeps busy hosts (a concurrency limiter's, whose hosts hold places and waiters) drops only a
/// host its part lets go (an idle one) among the next 16, and otherwise keeps the new host past its capacity, until the
/// hand finds idle ones.
///
/// **Without new hosts.** A part whose hosts come back to rest by themselves, with nothing that still matters lost when
/// they are made anew (a window that empties, a breaker closed with no failure, a bucket refilled, a limiter's host
/// idle for a minute, a rate limiter's host it does not pace and that answered nothing for a minute), moves the hand a
/// step on each request with ``forgetIdle(steps:isAtRest:)``, so that hosts gone idle are forgotten while requests go
/// to the hosts kept, though no new host comes: the table is swept at the pace of its traffic, a host in two rounds. A
/// state that does not come back to rest by itself (a host the rate limiter paces) is kept until the table is at
/// capacity. With no request at all, nothing moves: the table keeps what it has.
///
/// **After a quiet time.** A part whose test of rest reads the time (a window with nothing in it now) moves the hand with
/// ``forgetIdle(at:every:isAtRest:)`` instead: at most once a period (its window), the request that comes drops every
/// host at rest, used or not, in one pass, a cost amortised over the period's requests. So a host idle for two windows
/// is gone at the first request after them, however many hosts the table keeps, and a table left alone for an hour
/// keeps only the hosts the next request finds busy. Only for a part whose hosts at rest hold nothing a request waits
/// on: a pacer's host renewed with none in flight may have requests asleep until that renewal, so the pacer moves the
/// hand a step at a time, and the requests that wake mark the host used.
///
/// A value, kept behind its part's lock; the part passes `isAtRest` on every change that may add a host.
struct HostTable<Value: Sendable>: Sendable {
    private struct Entry: Sendable {
        let key: String
        var value: Value
        /// Used since the hand last passed.
        var used: Bool

        /// Marks the entry used and changes its value with `body`.
        mutating func use<Result>(_ body: (inout Value) -> Result) -> Result {
            used = true
            return body(&value)
        }
    }

    /// Every host's entry, in no particular order: the hand's round, which it walks without looking a key up.
    private var entries: [Entry] = []
    /// Where each key's entry sits in `entries`.
    private var slots: [String: Int] = [:]
    /// The slot of the host last found or added: most requests go where the one before went, whose entry is found again
    /// by comparing its key rather than by looking it up. A hint, checked against the entry's key before it is used.
    private var lastSlot = 0
    private var hand = 0
    /// When ``forgetIdle(at:every:isAtRest:)`` last dropped every host at rest, on the part's clock.
    private var lastSweep: Duration?
    /// The most hosts kept.
    let capacity: Int
    /// Whether only a host at rest may be dropped to make room.
    private let keepsBusyHosts: Bool
    /// How many hosts the hand looks at to make room at capacity before it settles for the one under it.
    private static var stepsToMakeRoom: Int { 16 }

    init(capacity: Int, keepsBusyHosts: Bool = false) {
        self.capacity = max(capacity, 1)
        self.keepsBusyHosts = keepsBusyHosts
    }

    /// Traps with a message that names `owner`'s setting when `maximumHosts` is below 1.
    static func trapIfInvalid(_ maximumHosts: Int, owner: String) {
        ConfigurationError.trapIfInvalid { () throws(ConfigurationError) in
            guard maximumHosts >= 1 else {
                throw ConfigurationError(
                    field: "\(owner).maximumHosts", problem: "must be at least 1, got \(maximumHosts)")
            }
        }
    }

    /// How many hosts are kept.
    var count: Int { entries.count }

    /// Every host's state, by key.
    var all: [String: Value] {
        Dictionary(uniqueKeysWithValues: entries.lazy.map { ($0.key, $0.value) })
    }

    /// The state of `key`'s host, if it is kept; reading counts as no use.
    subscript(key: String) -> Value? {
        slots[key].map { entries[$0].value }
    }

    /// Changes the state of `key`'s host in place, first making it from `make` if the host is not kept (which may drop
    /// idle hosts, or one to make room), and marks it used. At capacity, a table that keeps busy hosts makes room with
    /// a host `mayMakeRoom` lets go (one at rest, by default): a part whose hosts come to rest only with time (an
    /// adaptive limit that sat idle) lets an idle one go there, so that the cap holds.
    mutating func update<Result>(
        _ key: String, make: () -> Value, isAtRest: (Value) -> Bool, mayMakeRoom: ((Value) -> Bool)? = nil,
        _ body: (inout Value) -> Result
    ) -> Result {
        if let result = modify(key, body) { return result }
        add(key, make(), isAtRest: isAtRest, mayMakeRoom: mayMakeRoom)
        lastSlot = entries.count - 1
        return entries[lastSlot].use(body)
    }

    /// Changes the state of `key`'s host in place if it is kept, and marks it used; `nil` if it is not.
    mutating func modify<Result>(_ key: String, _ body: (inout Value) -> Result) -> Result? {
        let slot: Int
        if lastSlot < entries.count, entries[lastSlot].key == key {
            slot = lastSlot
        } else {
            guard let found = slots[key] else { return nil }
            (slot, lastSlot) = (found, found)
        }
        // In place, through the array's element: the entry's value is not copied.
        return entries[slot].use(body)
    }

    /// Forgets `key`'s host.
    mutating func remove(_ key: String) {
        guard let slot = slots[key] else { return }
        forget(at: slot)
    }

    /// Forgets every host.
    mutating func removeAll() {
        entries.removeAll()
        slots.removeAll()
        hand = 0
    }

    /// Moves the hand `steps` steps without adding a host: a host it reaches that was not used since it last passed
    /// and is at rest is dropped, the others' use cleared, as when a host is added.
    mutating func forgetIdle(steps: Int, isAtRest: (Value) -> Bool) {
        for _ in 0..<steps { _ = step(dropping: { !$0.used && isAtRest($0.value) }) }
    }

    /// Forgets idle hosts as a request goes by at `now`: one step of the hand, as ``forgetIdle(steps:isAtRest:)``, or,
    /// once `period` has passed since it last did, every host at rest, used or not, in one pass. For a part whose
    /// `isAtRest` reads the time, so that a host at rest has been idle for a whole period.
    mutating func forgetIdle(at now: Duration, every period: Duration, isAtRest: (Value) -> Bool) {
        if let lastSweep, now - lastSweep < period {
            forgetIdle(steps: 1, isAtRest: isAtRest)
            return
        }
        lastSweep = now
        guard entries.contains(where: { isAtRest($0.value) }) else { return }
        entries.removeAll { isAtRest($0.value) }
        slots = Dictionary(uniqueKeysWithValues: entries.enumerated().lazy.map { ($1.key, $0) })
        hand = 0
    }

    /// Adds a host, after three steps of the hand that drop idle hosts at rest, and one more to make room at capacity
    /// (with a host `mayMakeRoom` lets go, where busy hosts are kept).
    private mutating func add(
        _ key: String, _ value: Value, isAtRest: (Value) -> Bool, mayMakeRoom: ((Value) -> Bool)?
    ) {
        for _ in 0..<3 { _ = step(dropping: { !$0.used && isAtRest($0.value) }) }
        if entries.count >= capacity {
            // A few steps at most, so that no single request pays for a walk around a large table.
            let dropsUnused = !keepsBusyHosts
            var dropped = false
            for _ in 0..<Self.stepsToMakeRoom where !dropped {
                dropped = step(dropping: { entry in
                    let letGo = if let mayMakeRoom { mayMakeRoom(entry.value) } else { isAtRest(entry.value) }
                    return (dropsUnused && !entry.used) || letGo
                })
            }
            // None of them idle: the host under the hand goes, used or not (but never a busy one where they are kept).
            if !dropped, !keepsBusyHosts { _ = step(dropping: { _ in true }) }
        }
        slots[key] = entries.count
        entries.append(Entry(key: key, value: value, used: true))
    }

    /// Looks at the host under the hand: drops it if `drop` says so, else clears its use and moves on; returns whether
    /// it dropped one (`false` for an empty table).
    private mutating func step(dropping drop: (Entry) -> Bool) -> Bool {
        guard !entries.isEmpty else { return false }
        if hand >= entries.count { hand = 0 }
        if drop(entries[hand]) {
            // The last entry takes the dropped one's slot, where the hand stands: it is looked at next.
            forget(at: hand)
            return true
        }
        entries[hand].used = false
        hand += 1
        return false
    }

    /// Forgets the host at `slot`, moving the last entry into its place.
    private mutating func forget(at slot: Int) {
        slots[entries[slot].key] = nil
        let last = entries.removeLast()
        guard slot < entries.count else { return }
        slots[last.key] = slot
        entries[slot] = last
    }
}
