import Foundation
import SideBySide

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Measures how many requests a second the server answers to clients far lighter than URLSession: threads on
/// blocking sockets, each on one kept-alive connection, parsing just enough of each response to find its end.
func serverCapacity(port: Int, threads: Int, seconds: Double) -> Double {
    let deadline = Date().addingTimeInterval(seconds)
    let counts = (0..<threads).map { _ in Counter() }
    let done = DispatchGroup()
    for index in 0..<threads {
        done.enter()
        let counter = counts[index]
        Thread.detachNewThread {
            defer { done.leave() }
            let socket = openConnection(port: port)
            guard socket >= 0 else { return }
            defer { close(socket) }
            let request = Array("GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
            var buffer = [UInt8](repeating: 0, count: 16_384)
            while Date() < deadline {
                guard request.withUnsafeBytes({ write(socket, $0.baseAddress, $0.count) }) == request.count,
                    readResponse(socket, &buffer)
                else { return }
                _ = counter.next()
            }
        }
    }
    done.wait()
    return Double(counts.reduce(0) { $0 + $1.current }) / seconds
}

private func openConnection(port: Int) -> Int32 {
    #if canImport(Glibc)
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    #else
        let socket = Darwin.socket(AF_INET, SOCK_STREAM, 0)
    #endif
    guard socket >= 0 else { return -1 }
    var one: Int32 = 1
    setsockopt(socket, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    if connected != 0 {
        close(socket)
        return -1
    }
    return socket
}

/// Reads one response: headers up to the blank line, then Content-Length bytes of body.
private func readResponse(_ socket: Int32, _ buffer: inout [UInt8]) -> Bool {
    var received = 0
    var headerEnd: Int?
    var bodyLength = 0
    while true {
        if let end = headerEnd, received >= end + bodyLength { return true }
        let count = buffer.withUnsafeMutableBytes { read(socket, $0.baseAddress! + received, $0.count - received) }
        guard count > 0 else { return false }
        received += count
        if headerEnd == nil, let end = find(buffer[0..<received]) {
            headerEnd = end
            let head = String(decoding: buffer[0..<end], as: UTF8.self).lowercased()
            if let range = head.range(of: "content-length:") {
                let digits = head[range.upperBound...].prefix { $0 == " " || $0.isNumber }
                bodyLength = Int(digits.trimmingCharacters(in: .whitespaces)) ?? 0
            }
        }
    }
}

private func find(_ bytes: ArraySlice<UInt8>) -> Int? {
    let terminator: [UInt8] = [13, 10, 13, 10]
    guard bytes.count >= 4 else { return nil }
    for index in bytes.startIndex...(bytes.endIndex - 4) where bytes[index..<index + 4].elementsEqual(terminator) {
        return index + 4
    }
    return nil
}
