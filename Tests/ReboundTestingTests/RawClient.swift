#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A bare TCP client for tests of the loopback server that URLSession cannot express: `Expect: 100-continue`,
/// chunked uploads, malformed requests, pipelining. Reads give up after 5 seconds instead of hanging.
final class RawClient {
    private let fd: Int32

    init(port: UInt16) throws {
        #if canImport(Darwin)
            fd = socket(AF_INET, SOCK_STREAM, 0)
        #else
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #endif
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else { throw Failure(message: "connect failed") }
    }

    deinit {
        close(fd)
    }

    struct Failure: Error {
        let message: String
    }

    func send(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { sendBytes(fd, $0.baseAddress, $0.count) }
    }

    /// Reads until `marker` has arrived (or the peer closes, or 5 seconds pass) and returns all that was read.
    func read(until marker: String) -> String {
        read(until: marker).text
    }

    /// Reads until the peer closes the connection, or 5 seconds pass; says which.
    func readToEnd() -> (text: String, closedByPeer: Bool) {
        read(until: nil)
    }

    private func read(until marker: String?) -> (text: String, closedByPeer: Bool) {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while marker.map({ !String(decoding: received, as: UTF8.self).contains($0) }) ?? true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 { return (String(decoding: received, as: UTF8.self), true) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            received += chunk[..<count]
        }
        return (String(decoding: received, as: UTF8.self), false)
    }
}

private func sendBytes(_ fd: Int32, _ pointer: UnsafeRawPointer?, _ count: Int) -> Int {
    #if canImport(Darwin)
        return Darwin.send(fd, pointer, count, 0)
    #else
        return Glibc.send(fd, pointer, count, Int32(MSG_NOSIGNAL))
    #endif
}
