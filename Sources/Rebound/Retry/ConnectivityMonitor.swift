#if canImport(Network)
    import Dispatch
    import Network
#endif

/// Tells a retrier when the network can be used: the seam ``OfflineRetrier`` waits on.
///
/// Rebound ships `PathConnectivityMonitor` on Apple platforms (`NWPathMonitor`); ReboundTesting ships
/// `ManualConnectivityMonitor`, which a test turns on and off. On Linux there is no monitor in the box: write one over
/// what your platform offers (netlink, a reachability probe of your own) by conforming to this protocol.
///
/// Implementations are shared by every request that waits, so they must be safe to call from any task.
public protocol ConnectivityMonitor: Sendable {
    /// Returns when the network path is usable, at once if it is now.
    ///
    /// - Throws: `CancellationError` if the calling task is cancelled first.
    func waitUntilConnected() async throws
}

/// Whether the network is usable as a monitor last heard, and the tasks waiting for it to be: what a
/// ``ConnectivityMonitor`` is made of, whatever tells it of the network.
package final class ConnectivityState: Sendable {
    private struct State: Sendable {
        var isConnected: Bool
        /// The tasks waiting for a connection, by the number each got.
        var waiters: [Int: CheckedContinuation<Void, any Error>] = [:]
        var nextWaiter = 0
    }

    private let state: Locked<State>

    /// Creates the state, connected or not.
    package init(isConnected: Bool) {
        state = Locked(State(isConnected: isConnected))
    }

    /// Whether the network is usable now.
    package var isConnected: Bool { state.withLock { $0.isConnected } }

    /// How many tasks wait for a connection.
    package var waiterCount: Int { state.withLock { $0.waiters.count } }

    /// Records whether the network is usable; when it is, every waiting task resumes.
    package func set(connected: Bool) {
        let resumed = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            state.isConnected = connected
            guard connected else { return [] }
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in resumed { waiter.resume() }
    }

    /// Returns when the network is usable, at once if it is now; throws `CancellationError` if the task is cancelled
    /// first, leaving nothing behind.
    package func waitUntilConnected() async throws {
        let number = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                // Under the lock with the cancellation handler's removal: a task cancelled before it is filed finds
                // itself cancelled here, one cancelled after is found and resumed there.
                let now: Result<Void, any Error>? = state.withLock { state in
                    if state.isConnected { return .success(()) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.waiters[number] = continuation
                    return nil
                }
                if let now { continuation.resume(with: now) }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: number) }?.resume(throwing: CancellationError())
        }
    }
}

#if canImport(Network)
    /// Watches the device's network path with `NWPathMonitor`: connected while the path is satisfied.
    ///
    /// ``shared`` watches every interface; make one with `requiredInterfaceType:` to wait for Wi-Fi, say. It starts
    /// watching when created and stops when released. Thread-safe: its `NWPathMonitor` is touched only when it is
    /// created and released, and what the path says is kept behind a lock.
    public final class PathConnectivityMonitor: ConnectivityMonitor, @unchecked Sendable {
        /// One monitor of every interface for the whole process: what `OfflineRetrier()` waits on.
        public static let shared = PathConnectivityMonitor()

        private let monitor: NWPathMonitor
        private let connectivity: ConnectivityState

        /// Creates a monitor of every interface, or of `requiredInterfaceType` alone; `nil` (every one) by default.
        public init(requiredInterfaceType: NWInterface.InterfaceType? = nil) {
            monitor = requiredInterfaceType.map { NWPathMonitor(requiredInterfaceType: $0) } ?? NWPathMonitor()
            // Connected until the first path says otherwise, so that a request is not held before it arrives.
            let connectivity = ConnectivityState(isConnected: true)
            self.connectivity = connectivity
            monitor.pathUpdateHandler = { path in connectivity.set(connected: path.status == .satisfied) }
            monitor.start(queue: DispatchQueue(label: "Rebound.PathConnectivityMonitor"))
        }

        deinit {
            monitor.cancel()
        }

        /// Whether the path was satisfied when the monitor last heard.
        public var isConnected: Bool { connectivity.isConnected }

        /// Returns when the path is satisfied, at once if it is now; throws `CancellationError` if the calling task is
        /// cancelled first.
        public func waitUntilConnected() async throws {
            try await connectivity.waitUntilConnected()
        }
    }
#endif
