// Rebound on AsyncHTTPClient against plain AsyncHTTPClient, side by side in one run, over loopback to a server in a
// child process (so that the CPU time measured is the client's alone):
//
//     swift run -c release --package-path Integrations/ReboundAsyncHTTPClient ReboundAsyncHTTPClientBenchmark
//
// Prints, for 1 and 64 requests in flight, each contender's requests per second over plain AsyncHTTPClient's (the
// median of interleaved rounds' ratios, with their quartiles) and its client CPU per request over plain
// AsyncHTTPClient's; then what building a `URLRequest` and an `HTTPURLResponse` costs. `--quick` for a first look.
import AsyncHTTPClient
import Foundation
import NIOCore
import Rebound
import ReboundAsyncHTTPClient
import ReboundTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// MARK: - The server, in a child process

if CommandLine.arguments.dropFirst().first == "serve" {
    let server = try LoopbackServer()
    server.route("/ok", handler: { _, _ in .status(200, headers: ["Content-Type": "text/plain"], body: "ok") })
    FileHandle.standardOutput.write(Data("\(server.port)\n".utf8))
    // Serves until the parent closes our standard input.
    _ = FileHandle.standardInput.readDataToEndOfFile()
    server.stop()
    exit(0)
}

let quick = CommandLine.arguments.contains("--quick")
let rounds = quick ? 9 : 31
let perRound = quick ? 128 : 256

let child = Process()
child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
child.arguments = ["serve"]
let toChild = Pipe()
let fromChild = Pipe()
child.standardInput = toChild
child.standardOutput = fromChild
try child.run()
var portLine = Data()
while !portLine.contains(UInt8(ascii: "\n")) {
    let chunk = fromChild.fileHandleForReading.availableData
    if chunk.isEmpty { fatalError("the server process ended before printing its port") }
    portLine.append(chunk)
}
let port = Int(String(decoding: portLine, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))!
let url = URL(string: "http://127.0.0.1:\(port)/ok")!

// MARK: - Contenders

let client = AsyncHTTPClientTransport.sharedClient
let headerName = "X-Client-Version"
let headerValue = "4.2.0"

/// The realistic chain of the issue: a policy, a breaker registry, a ratio budget, an idempotency key, one header.
func realisticSession(on transport: any HTTPTransport) -> Session {
    Session(
        transport: transport,
        adapters: [
            Adapter.modifying { request, _ in request.setValue(headerValue, forHTTPHeaderField: headerName) },
            IdempotencyKeyAdapter(), CircuitBreakerRegistry(), RetryBudget(ratio: .default),
        ],
        retriers: [RetryPolicy()])
}

struct Contender: Sendable {
    let name: String
    let send: @Sendable () async throws -> Void
}

let plainRequest: HTTPClientRequest = {
    var request = HTTPClientRequest(url: url.absoluteString)
    request.headers.add(name: headerName, value: headerValue)
    return request
}()
let bare = Session(transport: AsyncHTTPClientTransport())
let realisticOnAHC = realisticSession(on: AsyncHTTPClientTransport())
let realisticOnURLSession = realisticSession(on: URLSessionTransport())

let contenders = [
    Contender(name: "AsyncHTTPClient") {
        let response = try await client.execute(plainRequest, timeout: .seconds(30))
        _ = try await response.body.collect(upTo: 1 << 20)
    },
    Contender(name: "Rebound on AsyncHTTPClient, no chain") { _ = try await bare.send(url) },
    Contender(name: "Rebound on AsyncHTTPClient, realistic chain") { _ = try await realisticOnAHC.send(url) },
    Contender(name: "Rebound on URLSession, realistic chain") { _ = try await realisticOnURLSession.send(url) },
]

func cpuNanoseconds() -> Int64 {
    var usage = rusage()
    #if os(Linux)
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    #else
        getrusage(RUSAGE_SELF, &usage)
    #endif
    let user = Int64(usage.ru_utime.tv_sec) * 1_000_000_000 + Int64(usage.ru_utime.tv_usec) * 1_000
    let system = Int64(usage.ru_stime.tv_sec) * 1_000_000_000 + Int64(usage.ru_stime.tv_usec) * 1_000
    return user + system
}

// `profile INDEX COUNT`: COUNT sequential requests of one contender (0 plain, 1 bare, 2 realistic, 3 URLSession; and,
// for finding what each part of the realistic chain costs, 4 bare + RetryPolicy, 5 bare + CircuitBreakerRegistry,
// 6 bare + ratio RetryBudget, 7 bare + IdempotencyKeyAdapter and the header adapter, 8 the transport called directly
// without a session), for `perf record`; prints the
// client CPU per request.
if let at = CommandLine.arguments.firstIndex(of: "profile"), CommandLine.arguments.count > at + 2,
    let index = Int(CommandLine.arguments[at + 1]), let count = Int(CommandLine.arguments[at + 2])
{
    let parts: [Session] = [
        Session(transport: AsyncHTTPClientTransport(), retriers: [RetryPolicy()]),
        Session(transport: AsyncHTTPClientTransport(), adapters: [CircuitBreakerRegistry()]),
        Session(transport: AsyncHTTPClientTransport(), adapters: [RetryBudget(ratio: .default)]),
        Session(
            transport: AsyncHTTPClientTransport(),
            adapters: [
                Adapter.modifying { request, _ in request.setValue(headerValue, forHTTPHeaderField: headerName) },
                IdempotencyKeyAdapter(),
            ]),
    ]
    let direct = AsyncHTTPClientTransport()
    let plainURLRequest = URLRequest(url: url)
    let contenders =
        contenders
        + parts.enumerated().map { number, session in
            Contender(name: "part \(number + 4)") { _ = try await session.send(url) }
        }
        + [
            Contender(name: "AsyncHTTPClientTransport called directly") {
                _ = try await direct.exchange(plainURLRequest)
            }
        ]
    for _ in 0..<200 { try await contenders[index].send() }
    let before = cpuNanoseconds()
    for _ in 0..<count { try await contenders[index].send() }
    print("\(contenders[index].name): \(Double(cpuNanoseconds() - before) / Double(count) / 1_000) µs CPU per request")
    toChild.fileHandleForWriting.closeFile()
    child.waitUntilExit()
    exit(0)
}

// MARK: - Measuring

/// Wall and CPU nanoseconds of `count` requests, `inFlight` at a time.
func measure(_ contender: Contender, count: Int, inFlight: Int) async throws -> (wall: Double, cpu: Double) {
    let clock = ContinuousClock()
    let cpuBefore = cpuNanoseconds()
    let start = clock.now
    try await withThrowingTaskGroup(of: Void.self) { group in
        for worker in 0..<inFlight {
            let share = count / inFlight + (worker < count % inFlight ? 1 : 0)
            group.addTask { for _ in 0..<share { try await contender.send() } }
        }
        try await group.waitForAll()
    }
    let wall = clock.now - start
    let (seconds, attoseconds) = wall.components
    return (Double(seconds) * 1e9 + Double(attoseconds) / 1e9, Double(cpuNanoseconds() - cpuBefore))
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted[sorted.count / 2]
}

func quartiles(_ values: [Double]) -> (Double, Double) {
    let sorted = values.sorted()
    return (sorted[sorted.count / 4], sorted[(sorted.count * 3) / 4])
}

func pad(_ text: String, _ width: Int) -> String { text.padding(toLength: width, withPad: " ", startingAt: 0) }

print("Rebound on AsyncHTTPClient against plain AsyncHTTPClient, \(rounds) interleaved rounds of \(perRound) requests")
for inFlight in [1, 64] {
    // Warm up every contender's connections.
    for contender in contenders { _ = try await measure(contender, count: inFlight * 4, inFlight: inFlight) }
    var ratios = [[Double]](repeating: [], count: contenders.count)
    var cpuOver = [[Double]](repeating: [], count: contenders.count)
    var rates = [[Double]](repeating: [], count: contenders.count)
    var cpus = [[Double]](repeating: [], count: contenders.count)
    for round in 0..<rounds {
        // The order rotates, and every other round runs backwards: no contender always runs first.
        var order = Array(contenders.indices)
        order = Array(order[(round % order.count)...] + order[..<(round % order.count)])
        if round % 2 == 1 { order.reverse() }
        var results = [(wall: Double, cpu: Double)](repeating: (0, 0), count: contenders.count)
        for index in order {
            results[index] = try await measure(contenders[index], count: perRound, inFlight: inFlight)
        }
        for index in contenders.indices {
            ratios[index].append(results[0].wall / results[index].wall)
            cpuOver[index].append((results[index].cpu - results[0].cpu) / Double(perRound) / 1_000)
            rates[index].append(Double(perRound) / (results[index].wall / 1e9))
            cpus[index].append(results[index].cpu / Double(perRound) / 1_000)
        }
    }
    print("\n## \(inFlight) in flight")
    print(
        pad("contender", 46) + pad("requests/s", 12) + pad("CPU µs/req", 12) + pad("ratio", 8) + pad("p25", 8)
            + pad("p75", 8) + "CPU µs over AHC")
    for index in contenders.indices {
        let (p25, p75) = quartiles(ratios[index])
        let line =
            pad(contenders[index].name, 46) + pad(String(format: "%.0f", median(rates[index])), 12)
            + pad(String(format: "%.1f", median(cpus[index])), 12)
            + (index == 0
                ? ""
                : pad(String(format: "%.3f", median(ratios[index])), 8) + pad(String(format: "%.3f", p25), 8)
                    + pad(String(format: "%.3f", p75), 8) + String(format: "%+.1f", median(cpuOver[index])))
        print(line)
    }
}

// MARK: - What the seam's Foundation types cost on this platform

func nanosecondsPerCall(_ count: Int, _ body: () -> Void) -> Double {
    let clock = ContinuousClock()
    let start = clock.now
    for _ in 0..<count { body() }
    let (seconds, attoseconds) = (clock.now - start).components
    return (Double(seconds) * 1e9 + Double(attoseconds) / 1e9) / Double(count)
}

let iterations = quick ? 20_000 : 200_000
var sink = 0
let requestCost = nanosecondsPerCall(iterations) {
    var request = URLRequest(url: url)
    request.setValue(headerValue, forHTTPHeaderField: headerName)
    sink &+= request.allHTTPHeaderFields?.count ?? 0
}
let responseCost = nanosecondsPerCall(iterations) {
    let response = HTTPURLResponse(
        url: url, statusCode: 200, httpVersion: "HTTP/1.1",
        headerFields: ["Content-Type": "text/plain", "Content-Length": "2", "Connection": "keep-alive"])
    sink &+= response?.statusCode ?? 0
}
let clientRequestCost = nanosecondsPerCall(iterations) {
    var request = HTTPClientRequest(url: url.absoluteString)
    request.headers.add(name: headerName, value: headerValue)
    sink &+= request.headers.count
}
print("\n## What the transport seam's types cost here (ns per value)")
print("URLRequest with one header:             \(Int(requestCost))")
print("HTTPURLResponse with three headers:     \(Int(responseCost))")
print("HTTPClientRequest with one header:      \(Int(clientRequestCost))")
if sink == 42 { print("") }

toChild.fileHandleForWriting.closeFile()
child.waitUntilExit()
