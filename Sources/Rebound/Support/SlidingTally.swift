/// Two counts over a sliding window of time, kept in ten slots of a tenth of the window each: a ratio budget's
/// requests and retries, an adaptive throttle's requests and accepts.
///
/// The window slides a slot at a time: a count leaves it between 0.9 and 1 window after it was added. Reading changes
/// nothing, so that a gauge may poll it.
struct SlidingTally: Sendable {
    private struct Slot: Sendable {
        var index: Int64
        var first = 0
        var second = 0
    }

    /// How many slots a window is cut into.
    static let slotCount = 10

    private var slots: [Slot] = []

    /// The slot `now` falls in, counted from the clock's origin.
    private static func slotIndex(_ now: Duration, window: Duration) -> Int64 {
        Int64(now / (window / slotCount))
    }

    /// Whether the slot numbered `index` is in the window that ends in slot `current`.
    private static func isLive(_ index: Int64, current: Int64) -> Bool {
        index > current - Int64(slotCount) && index <= current
    }

    /// Adds to both counts at `now` (a negative amount takes back what was added), dropping the slots that left the
    /// window.
    mutating func add(first: Int = 0, second: Int = 0, at now: Duration, window: Duration) {
        let current = Self.slotIndex(now, window: window)
        slots.removeAll { !Self.isLive($0.index, current: current) }
        if slots.last?.index != current { slots.append(Slot(index: current)) }
        slots[slots.count - 1].first += first
        slots[slots.count - 1].second += second
    }

    /// Both counts over the window that ends at `now`.
    func totals(at now: Duration, window: Duration) -> (first: Int, second: Int) {
        let current = Self.slotIndex(now, window: window)
        var totals = (first: 0, second: 0)
        for slot in slots where Self.isLive(slot.index, current: current) {
            totals.first += slot.first
            totals.second += slot.second
        }
        return totals
    }

    /// Whether no slot is in the window that ends at `now`: the tally can be forgotten.
    func isEmpty(at now: Duration, window: Duration) -> Bool {
        let current = Self.slotIndex(now, window: window)
        return !slots.contains { Self.isLive($0.index, current: current) }
    }
}
