import Rebound

/// A `ConnectivityMonitor` a test turns on and off, for testing an `OfflineRetrier` on any platform.
///
/// Connected by default. Requests that wait while it is disconnected resume, all at once, when the test calls
/// ``setConnected(_:)`` with `true`; ``waitForWaits(_:)`` suspends the test until so many waits have begun, so that it
/// turns the network back on at a known point rather than after a sleep.
///
/// ```swift
/// let network = ManualConnectivityMonitor(isConnected: false)
/// let session = Session(
///     transport: ScriptedTransport([.urlError(.notConnectedToInternet), .status(200)]),
///     retriers: [OfflineRetrier(monitor: network)])
/// let response = Task { try await session.send(URLRequest(url: URL(string: "https://api.example.com/")!)) }
/// try await network.waitForWaits(1)
/// network.setConnected(true)
/// _ = try await response.value
/// ```
public final class ManualConnectivityMonitor: ConnectivityMonitor {
    private let connectivity: ConnectivityState
    private let waits = CountSignal()

    /// Creates a monitor, connected or not; connected by default.
    public init(isConnected: Bool = true) {
        connectivity = ConnectivityState(isConnected: isConnected)
    }

    /// Whether the network is usable now.
    public var isConnected: Bool { connectivity.isConnected }

    /// How many tasks wait for the network now.
    public var waiterCount: Int { connectivity.waiterCount }

    /// Turns the network on or off; on, every waiting task resumes.
    public func setConnected(_ connected: Bool) {
        connectivity.set(connected: connected)
    }

    /// Suspends until at least `count` waits have begun in all, including those already over.
    ///
    /// - Throws: `CancellationError` if the waiting task is cancelled first.
    public func waitForWaits(_ count: Int) async throws {
        try await waits.wait(atLeast: count)
    }

    /// Returns when the network is on, at once if it is now; throws `CancellationError` if the calling task is
    /// cancelled first.
    public func waitUntilConnected() async throws {
        waits.increment()
        try await connectivity.waitUntilConnected()
    }
}
