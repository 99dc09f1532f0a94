import Testing

@testable import Rebound

/// The queue of a concurrency limiter's waiters: first in, first out, and any element may leave early by its key.
@Suite("KeyedQueue")
struct KeyedQueueTests {
    @Test func popsInTheOrderAppendedSkippingThoseThatLeft() {
        var queue = KeyedQueue<Int, String>()
        for key in 0..<6 { queue.append("e\(key)", key: key) }

        #expect(queue.remove(0) == "e0")
        #expect(queue.remove(3) == "e3")
        #expect(queue.remove(3) == nil, "already gone")
        #expect(queue.count == 4)
        #expect(queue[4] == "e4")
        queue[4] = "four"
        queue[9] = "nine"
        #expect(queue[9] == nil, "setting a key that does not wait adds nothing")

        var popped: [String] = []
        while let (_, element) = queue.popFirst() { popped.append(element) }

        #expect(popped == ["e1", "e2", "four", "e5"])
        #expect(queue.isEmpty)
        #expect(queue.popFirst() == nil)
    }

    @Test func keepsItsOrderThroughManyRemovalsAndCompactions() {
        var queue = KeyedQueue<Int, Int>()
        var expected: [Int] = []
        var next = 0
        // Rounds of appends, removals from anywhere and pops, checked against a plain array.
        for round in 0..<50 {
            for _ in 0..<40 {
                queue.append(next, key: next)
                expected.append(next)
                next += 1
            }
            for element in expected where (element + round).isMultiple(of: 3) {
                #expect(queue.remove(element) == element)
            }
            expected.removeAll { ($0 + round).isMultiple(of: 3) }
            for _ in 0..<10 {
                #expect(queue.popFirst()?.element == expected.first)
                expected.removeFirst()
            }
            #expect(queue.count == expected.count)
        }
        var rest: [Int] = []
        while let (key, element) = queue.popFirst() {
            #expect(key == element)
            rest.append(element)
        }
        #expect(rest == expected)
    }
}
