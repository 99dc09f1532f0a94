#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The few socket calls the loopback server makes, with the differences between Linux and Apple platforms hidden.
enum POSIXSocket {
    struct Failure: Error, CustomStringConvertible {
        let call: String
        let code: Int32
        var description: String { "\(call) failed: \(String(cString: strerror(code))) (errno \(code))" }
    }

    /// Opens a TCP socket listening on 127.0.0.1 at an ephemeral port; returns it and the port.
    static func listenOnLoopback(backlog: Int32 = 1024) throws(Failure) -> (fd: Int32, port: UInt16) {
        let (fd, port) = try bindLoopback()
        try startListening(fd, backlog: backlog)
        return (fd, port)
    }

    /// Starts `fd`, a bound socket, listening; closes it if that fails.
    static func startListening(_ fd: Int32, backlog: Int32 = 1024) throws(Failure) {
        guard listen(fd, backlog) == 0 else {
            let code = errno
            closeSocket(fd)
            throw Failure(call: "listen", code: code)
        }
    }

    /// Opens a TCP socket bound to 127.0.0.1 at an ephemeral port, not listening; returns it and the port.
    static func bindLoopback() throws(Failure) -> (fd: Int32, port: UInt16) {
        #if canImport(Darwin)
            let fd = socket(AF_INET, SOCK_STREAM, 0)
        #else
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #endif
        guard fd >= 0 else { throw Failure(call: "socket", code: errno) }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))

        var address = sockaddr_in()
        #if canImport(Darwin)
            address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
        #endif
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            let code = errno
            closeSocket(fd)
            throw Failure(call: "bind", code: code)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else {
            let code = errno
            closeSocket(fd)
            throw Failure(call: "getsockname", code: code)
        }
        return (fd, UInt16(bigEndian: address.sin_port))
    }

    /// Accepts a connection and turns off Nagle's algorithm on it (without that, delayed ACKs hold a keep-alive
    /// client to one request per delayed-ACK timeout); returns `nil` when accept fails.
    static func acceptConnection(_ listener: Int32) -> Int32? {
        let fd = accept(listener, nil, nil)
        guard fd >= 0 else { return nil }
        var yes: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
        #if canImport(Darwin)
            setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &yes, socklen_t(MemoryLayout<Int32>.size))
        #endif
        return fd
    }

    /// Waits until `fd` is readable or `wake` is; returns `true` for `fd`, `false` when woken or on error.
    /// A `timeoutMilliseconds` of -1 waits forever; on timeout, returns `false` too.
    static func waitReadable(_ fd: Int32, orWake wake: Int32, timeoutMilliseconds: Int32 = -1) -> Bool {
        var fds = [
            pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            let ready = poll(&fds, 2, timeoutMilliseconds)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0, fds[1].revents == 0 else { return false }
            return fds[0].revents != 0
        }
    }

    /// Sleeps up to `milliseconds`; returns `false` if `wake` became readable first.
    static func sleep(milliseconds: Int32, orWake wake: Int32) -> Bool {
        var fds = [pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
        while true {
            let ready = poll(&fds, 1, milliseconds)
            if ready < 0 && errno == EINTR { continue }
            return ready == 0
        }
    }

    /// How a sleep that watches a connection ended.
    enum WatchedSleep {
        case elapsed, woken, peerClosed
    }

    /// Sleeps up to `milliseconds` while watching `fd`: ends early if `wake` becomes readable or the peer closes `fd`.
    /// Bytes the peer sends meanwhile (a next request) are left in place, and the sleep goes on without watching.
    static func sleep(milliseconds: Int32, orWake wake: Int32, watching fd: Int32) -> WatchedSleep {
        var fds = [
            pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
            pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
        ]
        var watching: nfds_t = 2
        var left = Int64(milliseconds)
        while true {
            let started = ContinuousClock.now
            let ready = poll(&fds, watching, Int32(clamping: left))
            if ready < 0 && errno == EINTR { continue }
            if ready == 0 { return .elapsed }
            if ready < 0 || fds[0].revents != 0 { return .woken }
            var byte: UInt8 = 0
            let peeked = recv(fd, &byte, 1, Int32(MSG_PEEK))
            if peeked <= 0 { return .peerClosed }
            watching = 1
            let elapsed = ContinuousClock.now - started
            left -= elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000
            if left <= 0 { return .elapsed }
        }
    }

    /// Reads what is available into `buffer`; returns `false` on end of stream or error.
    static func readAvailable(_ fd: Int32, into buffer: inout [UInt8]) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return false }
            buffer.append(contentsOf: chunk[..<count])
            return true
        }
    }

    /// Writes all of `bytes`; returns `false` if the peer is gone.
    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        #if canImport(Darwin)
            let flags: Int32 = 0
        #else
            let flags = Int32(MSG_NOSIGNAL)
        #endif
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + offset, $0.count - offset, flags) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return false }
            offset += count
        }
        return true
    }

    /// Makes a pipe; returns its read and write ends.
    static func makePipe() throws(Failure) -> (read: Int32, write: Int32) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw Failure(call: "pipe", code: errno) }
        return (fds[0], fds[1])
    }

    /// Writes one byte to `fd`.
    static func signal(_ fd: Int32) {
        var byte: UInt8 = 1
        _ = write(fd, &byte, 1)
    }

    /// Shuts both directions of `fd` down, waking any thread blocked on it.
    static func shutdownBoth(_ fd: Int32) {
        _ = shutdown(fd, Int32(SHUT_RDWR))
    }

    /// Makes closing `fd` reset the connection (an RST) instead of closing it in order (a FIN).
    static func resetOnClose(_ fd: Int32) {
        var linger = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout.size(ofValue: linger)))
    }

    /// Closes `fd`.
    static func closeSocket(_ fd: Int32) {
        _ = close(fd)
    }
}
