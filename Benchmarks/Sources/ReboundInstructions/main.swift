import Foundation
import Rebound
import SideBySide

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// `ReboundInstructions CONTENDER N`: N sequential requests to the loopback server's `/ok` through one contender, and
// nothing else, for Valgrind to count (`python3 Benchmarks/instructions`, which runs it at two values of N and
// takes the difference, so that start-up and the first requests' warm-up drop out). The server is the one
// `REBOUND_BENCHMARK_SERVER` names, or a child process; with `REBOUND_BENCHMARK_SERVE` set, this process serves.
//
// Contenders: `plain` (URLSession's `data(for:)`, the five headers set by hand), `transport`
// (`URLSessionHTTPTransport()` called directly), `session` and `url` (a bare `Session`, sent a request or a URL), and
// every chain the other tools know by name (`contenderInterceptor(named:)`: `adapters`, `breaker`, `realistic`, …),
// sent what they send (a URL for the chains whose adapters set the headers). `memory:` before a session or a chain
// (`memory:realistic`) sends through `InMemoryTransport` instead of `URLSessionHTTPTransport()`: what Rebound itself
// executes, a count that repeats to within a few instructions, for comparing builds.

ChildServer.serveIfAsked(routes: installBenchmarkRoutes)

/// A transport that answers every request at once with the same 200 and no body, without a socket.
struct InMemoryTransport: HTTPTransport {
    let head: ResponseHead

    init(answering url: URL) {
        head = ResponseHead(
            HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: ["Content-Length": "0"])!)
    }

    func exchange(_ request: URLRequest) async throws -> (Data, ResponseHead) { (Data(), head) }
}

/// The requests of one contender, ended with `exit(1)` and a message at the first failure (an instruction count of
/// failed requests means nothing).
func run(_ named: String, count: Int) async {
    let inMemory = named.hasPrefix("memory:")
    let contender = inMemory ? String(named.dropFirst("memory:".count)) : named
    do {
        let url = try ChildServer.url().appendingPathComponent("ok")
        let transport = URLSessionHTTPTransport()
        let plain = URLSession(configuration: plainConfiguration())
        let interceptor = contenderInterceptor(named: contender)
        guard interceptor != nil || ["plain", "transport", "session", "url"].contains(contender) else {
            throw BenchmarkError("unknown contender \(contender)")
        }
        guard !inMemory || !["plain", "transport"].contains(contender) else {
            throw BenchmarkError("\(named): only a session or a chain sends in memory")
        }
        let session =
            inMemory
            ? Session(transport: InMemoryTransport(answering: url), interceptor: interceptor)
            : Session(transport: transport, interceptor: interceptor)
        // Chosen once, so that the loop does the same work for every contender besides the request itself (a name
        // compared on every request would count as the contender's).
        let send: () async throws -> Int
        switch contender {
        case "plain":
            send = {
                let (_, response) = try await plain.data(for: requestWithRealisticHeaders(to: url))
                return (response as? HTTPURLResponse)?.statusCode ?? 0
            }
        case "transport":
            send = { try await transport.send(requestWithRealisticHeaders(to: url)).1.statusCode }
        case _ where contendersSentAURL.contains(contender):
            send = { try await session.send(url).statusCode }
        default:
            // The other chains, and `session`, are sent the headers, as plain URLSession sets them.
            send = { try await session.send(requestWithRealisticHeaders(to: url)).statusCode }
        }
        for _ in 0..<count {
            let status = try await send()
            guard status == 200 else { throw BenchmarkError("status \(status)") }
        }
    } catch {
        FileHandle.standardError.write(Data("ReboundInstructions \(named): \(error)\n".utf8))
        exit(1)
    }
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count == 2, let count = Int(arguments[1]), count >= 0 else {
    FileHandle.standardError.write(Data("usage: ReboundInstructions CONTENDER N\n".utf8))
    exit(2)
}
let contender = arguments[0]
// On a task of the global pool, as the side-by-side contenders run.
runToolAndExit(contender) { await Task.detached { await run(contender, count: count) }.value }
