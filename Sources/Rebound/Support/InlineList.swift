/// A short list whose first element is held inline and the others in an array: a list of one, the common case,
/// allocates nothing. A value: a copy is a snapshot, which elements appended later do not change.
struct InlineList<Element: Sendable>: Sequence, Sendable {
    private(set) var first: Element?
    private var rest: [Element] = []

    /// An empty list.
    static var none: InlineList { InlineList() }

    var isEmpty: Bool { first == nil }

    mutating func append(_ element: Element) {
        if first == nil {
            first = element
        } else if rest.isEmpty {
            // An array of one, made as a literal is (appending to an empty array takes a slower, colder path).
            rest = [element]
        } else {
            rest.append(element)
        }
    }

    /// Whether an element satisfies `predicate`, reading the elements in place.
    func contains(where predicate: (borrowing Element) -> Bool) -> Bool {
        if let first, predicate(first) { return true }
        for index in rest.indices where predicate(rest[index]) { return true }
        return false
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
            guard index < list.rest.count else { return nil }
            defer { index += 1 }
            return list.rest[index]
        }
    }
}
