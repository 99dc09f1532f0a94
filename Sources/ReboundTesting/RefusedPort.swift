import Foundation
import Rebound

/// A port on 127.0.0.1 that refuses connections, for testing how code handles a server that is down.
///
/// It holds a socket bound to the port but not listening, so a connection to it is refused at once
/// (`URLError.cannotConnectToHost`) and no other socket of the machine can take the port while it exists. (Stopping a
/// `LoopbackServer` and reusing its port is not the same: another server may be given that port meanwhile.)
///
/// ```swift
/// let down = try RefusedPort()
/// defer { down.close() }
/// let error = try await #require(throws: ReboundError.self) { try await session.send(down.url("/items")) }
/// #expect(error.urlError?.code == .cannotConnectToHost)
/// ```
public final class RefusedPort: Sendable {
    /// The port, on 127.0.0.1.
    public let port: UInt16

    private let socket: Locked<Int32?>

    /// Reserves an ephemeral port of 127.0.0.1 that refuses connections.
    ///
    /// - Throws: An error naming the socket call that failed.
    public init() throws {
        let (fd, port) = try POSIXSocket.bindLoopback()
        self.port = port
        socket = Locked(fd)
    }

    deinit {
        close()
    }

    /// `http://127.0.0.1:<port><path>`.
    public func url(_ path: String = "/") -> URL {
        URL(string: "http://127.0.0.1:\(port)\(path.hasPrefix("/") ? "" : "/")\(path)")!
    }

    /// Starts listening on the port: from now on a connection to it is accepted by the ``LoopbackServer`` returned,
    /// which takes the port over (``close()`` then does nothing). For a server that comes up while a client retries,
    /// at a moment the test chooses.
    ///
    /// - Throws: An error naming the socket call that failed, or naming `listen` when the port was released already.
    public func startListening() throws -> LoopbackServer {
        let fd = socket.withLock { fd -> Int32? in
            defer { fd = nil }
            return fd
        }
        guard let fd else { throw POSIXSocket.Failure(call: "listen", code: EBADF) }
        try POSIXSocket.startListening(fd)
        return try LoopbackServer(listener: fd, port: port)
    }

    /// Releases the port; calling it again does nothing.
    public func close() {
        socket.withLock { fd in
            if let open = fd { POSIXSocket.closeSocket(open) }
            fd = nil
        }
    }
}
