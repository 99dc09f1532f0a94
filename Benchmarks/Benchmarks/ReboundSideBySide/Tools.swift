import Foundation
import SideBySide

/// The entry points that are not benchmarks, chosen by environment variable before ordo-one's runner starts one:
/// `REBOUND_BENCHMARK_SERVE` makes the process the loopback server (``ChildServer``), and `REBOUND_TOOL` runs one
/// of the tools for digging into a figure (Docs/Performance.md), on the executable the benchmark built:
///
///     swift package --package-path Benchmarks benchmark --target ReboundSideBySide --filter none   # builds it
///     REBOUND_TOOL="profile realistic 20000" Benchmarks/.build/release/ReboundSideBySide
///
/// The tools: `profile CONTENDER N` (N sequential loopback requests of one contender, for `perf` or `taskset`),
/// `ab CONTENDER… ROUNDS` (end-to-end CPU per contender over the first, interleaved), `micro CONTENDER N` (a chain on a
/// transport that answers in memory with a real response), `pieces` (what single operations cost, hot), `cold
/// CONTENDER… N` (a chain's request in memory, timed right after a real loopback round trip: its cost run cold).
func runEntryPointIfAsked() {
    ChildServer.serveIfAsked(routes: installBenchmarkRoutes)
    guard let tool = ProcessInfo.processInfo.environment["REBOUND_TOOL"] else { return }
    let arguments = tool.split(separator: " ").map(String.init)
    runToolAndExit(tool) { try await runTool(arguments) }
}

private func runTool(_ arguments: [String]) async throws {
    switch arguments.first {
    case "profile" where arguments.count == 3:
        try await profile(arguments[1], count: Int(arguments[2]) ?? 10_000)
    case "ab" where arguments.count >= 3:
        try await compare(Array(arguments.dropFirst().dropLast()), rounds: Int(arguments.last!) ?? 9)
    case "micro" where arguments.count == 3:
        try await micro(arguments[1], count: Int(arguments[2]) ?? 100_000)
    case "pieces":
        await pieces()
    case "cold" where arguments.count >= 3:
        try await cold(Array(arguments.dropFirst().dropLast()), count: Int(arguments.last!) ?? 2_000)
    default:
        print(
            "REBOUND_TOOL: profile CONTENDER N | ab CONTENDER… ROUNDS | micro CONTENDER N | pieces | cold CONTENDER… N")
    }
}
