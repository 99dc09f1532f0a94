import Foundation
import ReboundTesting

/// The loopback server, run in a child process so that the client's CPU time is measured apart from the server's.
///
/// Routes: `/ok` answers 200 with a small JSON body; `/flaky-a` and `/flaky-b` answer 503 to every odd request and 200
/// to every even one, so that each sequential logical request fails once, then succeeds.
enum ServerProcess {
    /// The environment variable that makes the benchmark executable serve instead (see `runEntryPointIfAsked`).
    static let variable = "REBOUND_BENCHMARK_SERVE"

    /// The child's side: serves until its standard input closes.
    static func serve() throws -> Never {
        let server = try LoopbackServer()
        let body = #"{"id": 1, "name": "kettle"}"#
        server.route("/ok", [.json(body)])
        for path in ["/flaky-a", "/flaky-b"] {
            server.route(path) { _, number in number % 2 == 1 ? .status(503) : .json(body) }
        }
        FileHandle.standardOutput.write(Data("PORT \(server.port)\n".utf8))
        while let line = readLine(strippingNewline: true), !line.isEmpty {}
        server.stop()
        exit(0)
    }

    /// The parent's side: starts the child and returns its base URL and the process, to stop with ``stop(_:)``.
    static func start() throws -> (url: URL, process: Process, input: Pipe) {
        let process = Process()
        // This very executable, told by the environment to serve: ordo-one's runner parses the arguments first.
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        if !FileManager.default.isExecutableFile(atPath: process.executableURL!.path) {
            process.executableURL = Bundle.main.executableURL
        }
        process.arguments = []
        var environment = ProcessInfo.processInfo.environment
        environment[variable] = "1"
        // The child is a plain server: no malloc interposer counting its allocations.
        environment["LD_PRELOAD"] = nil
        environment["DYLD_INSERT_LIBRARIES"] = nil
        process.environment = environment
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        var text = ""
        while !text.contains("\n") {
            let data = output.fileHandleForReading.availableData
            guard !data.isEmpty else { throw BenchmarkError("the server process ended before saying its port") }
            text += String(decoding: data, as: UTF8.self)
        }
        guard let line = text.split(separator: "\n").first, line.hasPrefix("PORT "), let port = Int(line.dropFirst(5))
        else { throw BenchmarkError("the server process said \(text)") }
        return (URL(string: "http://127.0.0.1:\(port)")!, process, input)
    }

    static func stop(_ server: (url: URL, process: Process, input: Pipe)) {
        try? server.input.fileHandleForWriting.close()
        server.process.waitUntilExit()
    }
}

struct BenchmarkError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
