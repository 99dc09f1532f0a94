import Foundation
import ReboundTesting
import Synchronization

/// The loopback server of a side-by-side benchmark, run in a child process so that the client's CPU time is measured
/// apart from the server's.
///
/// The child is this very executable, told by ``variable`` to serve: ordo-one's runner parses the arguments before a
/// benchmark target's code runs, so an argument could not say it. A benchmark target calls ``serveIfAsked(routes:)``
/// first thing in its `benchmarks` closure; the child serves until its standard input closes, which happens at the
/// latest when the parent ends.
public enum ChildServer {
    /// The environment variable that makes the benchmark executable serve instead.
    public static let variable = "REBOUND_BENCHMARK_SERVE"

    /// The server this process started, for the rest of the run; `nil` until one is asked for.
    private static let started = Mutex<Running?>(nil)

    /// A started child: its base URL, and what stops it.
    private struct Running: @unchecked Sendable {
        // `@unchecked Sendable`: the process and the pipe are only read once stored, behind `started`'s lock.
        let url: URL
        let process: Process
        let input: Pipe
    }

    /// In the child: a `LoopbackServer` with `routes`, serving until the standard input closes, then the process ends.
    /// In any other process: returns at once.
    public static func serveIfAsked(routes: (LoopbackServer) -> Void) {
        guard ProcessInfo.processInfo.environment[variable] != nil else { return }
        do {
            let server = try LoopbackServer()
            routes(server)
            FileHandle.standardOutput.write(Data("PORT \(server.port)\n".utf8))
            _ = FileHandle.standardInput.readDataToEndOfFile()
            server.stop()
            exit(0)
        } catch {
            FileHandle.standardError.write(Data("server: \(error)\n".utf8))
            exit(1)
        }
    }

    /// The environment variable that names a server already running (`http://127.0.0.1:PORT`), for runs that share
    /// one server started apart: `Benchmarks/instructions` runs every measured process against one.
    public static let urlVariable = "REBOUND_BENCHMARK_SERVER"

    /// The base URL of the server: the one ``urlVariable`` names, or one started in a child process on first use for
    /// the rest of the run.
    public static func url() throws -> URL {
        if let given = ProcessInfo.processInfo.environment[urlVariable] {
            guard let url = URL(string: given) else { throw BenchmarkError("\(urlVariable) is not a URL: \(given)") }
            return url
        }
        return try started.withLock { started in
            if let started { return started.url }
            let running = try start()
            started = running
            return running.url
        }
    }

    private static func start() throws -> Running {
        let process = Process()
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
        return Running(url: URL(string: "http://127.0.0.1:\(port)")!, process: process, input: input)
    }
}

/// A benchmark's own failure, described.
public struct BenchmarkError: Error, CustomStringConvertible {
    public let description: String

    public init(_ description: String) { self.description = description }
}

/// Runs `body` to its end from synchronous code (a benchmark target's registration, where a tool chosen by the
/// environment runs instead of the benchmarks), then ends the process.
///
/// The runner calls the registration from its main thread, outside the cooperative pool, so waiting there starves
/// nothing.
public func runToolAndExit(_ name: String, _ body: @escaping @Sendable () async throws -> Void) -> Never {
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        do {
            try await body()
        } catch {
            print("\(name): \(error)")
        }
        done.signal()
    }
    done.wait()
    exit(0)
}
