/// Hands every value to every current subscriber's `AsyncStream`, in the order the values were sent.
package final class Broadcast<Element: Sendable>: Sendable {
    private struct State: Sendable {
        var next = 0
        var continuations: [Int: AsyncStream<Element>.Continuation] = [:]
    }

    private let state = Locked(State())

    package init() {}

    /// A new stream that gets every value sent from now on, until the caller stops iterating it.
    package func subscribe() -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: .unbounded)
        let id = state.withLock { state in
            defer { state.next += 1 }
            state.continuations[state.next] = continuation
            return state.next
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    /// Sends values to every subscriber; under the lock, so that concurrent senders' values arrive in one order.
    package func send(_ values: [Element]) {
        guard !values.isEmpty else { return }
        state.withLock { state in
            for continuation in state.continuations.values {
                for value in values { continuation.yield(value) }
            }
        }
    }

    deinit {
        state.withLock { state in
            for continuation in state.continuations.values { continuation.finish() }
        }
    }
}
