/// A short list whose first element is held inline and the others in an array: a list of one, the common case,
/// allocates nothing. A value: a copy is a snapshot, which elements appended later do not change.
struct InlineList<Element: Sendable>: Sequence, Sendable {
    private(set) var first: Element?
    /// The elements after the first, in an array made when a second one comes: a list that never held two has none, so
    /// that copying or dropping it touches no array (`count` says how many elements there are).
    private(set) var rest: [Element]?
    /// How many elements it holds: what `isEmpty` and `append` read, rather than asking the optional `first`.
    private(set) var count = 0

    /// An empty list.
    static var none: InlineList { InlineList() }

    var isEmpty: Bool { count == 0 }

    mutating func append(_ element: consuming Element) {
        count += 1
        if count == 1 {
            first = consume element
        } else if rest == nil {
            // An array of one, made as a literal is (appending to an empty array takes a slower, colder path).
            rest = [element]
        } else {
            rest!.append(element)
        }
    }

    /// Whether an element satisfies `predicate`, reading the elements in place.
    func contains(where predicate: (borrowing Element) -> Bool) -> Bool {
        if count == 0 { return false }
        if let first, predicate(first) { return true }
        guard let rest else { return false }
        for index in rest.indices where predicate(rest[index]) { return true }
        return false
    }

    /// Removes and returns the first element that satisfies `predicate`, keeping the others in order; `nil` if none
    /// does.
    mutating func remove(where predicate: (borrowing Element) -> Bool) -> Element? {
        guard let first else { return nil }
        if predicate(first) {
            count -= 1
            self.first = rest?.isEmpty == false ? rest!.removeFirst() : nil
            return first
        }
        guard let index = rest?.firstIndex(where: { predicate($0) }) else { return nil }
        count -= 1
        return rest!.remove(at: index)
    }

    /// Replaces the first element that satisfies `predicate` with `replacement`, in its place; nothing if none does.
    mutating func replace(where predicate: (borrowing Element) -> Bool, with replacement: Element) {
        if let first, predicate(first) {
            self.first = replacement
        } else if let index = rest?.firstIndex(where: { predicate($0) }) {
            rest![index] = replacement
        }
    }

    func makeIterator() -> Iterator { Iterator(list: self) }

    /// Reads the first element, then the rest in order.
    struct Iterator: IteratorProtocol {
        private let list: InlineList
        private var index = -1

        fileprivate init(list: InlineList) {
            self.list = list
        }

        mutating func next() -> Element? {
            if index < 0 {
                index = 0
                return list.first
            }
            guard index < list.rest?.count ?? 0 else { return nil }
            defer { index += 1 }
            return list.rest![index]
        }
    }
}
