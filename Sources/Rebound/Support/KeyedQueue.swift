/// A first-in, first-out queue whose elements can also leave from anywhere by their key, each operation in amortised
/// constant time: a queue of waiters where any one may give up (its timeout, its cancellation) while the others keep
/// their turn.
///
/// The order is kept as a list of keys read from a moving head; a key whose element left early stays in that list
/// until the head passes it or the list is compacted, which happens once it holds twice as many keys as elements.
struct KeyedQueue<Key: Hashable & Sendable, Element: Sendable>: Sendable {
    private var elements: [Key: Element] = [:]
    private var order: [Key] = []
    private var head = 0

    /// How many elements wait.
    var count: Int { elements.count }

    var isEmpty: Bool { elements.isEmpty }

    /// Adds `element` at the back under `key`, which no element in the queue may have, nor any that left it: a key
    /// is used once (the limiter's keys are attempts), since one that left may still sit in the order.
    mutating func append(_ element: Element, key: Key) {
        assert(elements[key] == nil, "a key already in the queue")
        elements[key] = element
        order.append(key)
    }

    /// The element with `key`, if it waits.
    subscript(key: Key) -> Element? {
        get { elements[key] }
        set {
            guard elements[key] != nil, let newValue else { return }
            elements[key] = newValue
        }
    }

    /// Removes and returns the element at the front, with its key; `nil` when the queue is empty.
    mutating func popFirst() -> (key: Key, element: Element)? {
        while head < order.count {
            let key = order[head]
            head += 1
            if let element = elements.removeValue(forKey: key) {
                compactIfSparse()
                return (key, element)
            }
        }
        compactIfSparse()
        return nil
    }

    /// Removes and returns the element with `key`, wherever it waits; `nil` if none does.
    mutating func remove(_ key: Key) -> Element? {
        guard let element = elements.removeValue(forKey: key) else { return nil }
        compactIfSparse()
        return element
    }

    /// Drops the keys of elements that left, once they outnumber the elements: each key is dropped once, so the cost
    /// is constant per element, amortised.
    private mutating func compactIfSparse() {
        if elements.isEmpty {
            order.removeAll(keepingCapacity: order.count <= 64)
            head = 0
        } else if order.count - head > 2 * elements.count + 16 || head > order.count / 2 + 16 {
            order = order[head...].filter { elements[$0] != nil }
            head = 0
        }
    }
}
