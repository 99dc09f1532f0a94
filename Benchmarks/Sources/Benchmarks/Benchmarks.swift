import Foundation

/// Prints a table of every benchmark and writes the same figures as JSON.
///
/// `swift run -c release --package-path Benchmarks Benchmarks [--quick] [--only 1,2] [--json PATH]`
///
/// Tools for digging into one figure (see Docs/Performance.md): `profile CONTENDER N`, `ab CONTENDER… ROUNDS`,
/// `micro CONTENDER N`, `pieces`.
@main
struct Benchmarks {
    static func main() async throws {
        var arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "serve" { try ServerProcess.serve() }
        // `profile CONTENDER N`: N sequential loopback requests of one contender in a process of its own.
        if arguments.first == "profile", arguments.count == 3, let count = Int(arguments[2]) {
            try await profile(arguments[1], count: count)
            return
        }
        if arguments.first == "ab", arguments.count >= 3, let rounds = Int(arguments.last!) {
            try await compare(Array(arguments.dropFirst().dropLast()), rounds: rounds)
            return
        }
        if arguments.first == "pieces" {
            await pieces()
            return
        }
        if arguments.first == "micro", arguments.count == 3, let count = Int(arguments[2]) {
            try await micro(arguments[1], count: count)
            return
        }
        let quick = arguments.contains("--quick")
        // Next to the benchmarks' Package.swift, wherever the command is run from.
        var jsonPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("results.json").path
        if let index = arguments.firstIndex(of: "--json"), index + 1 < arguments.count {
            jsonPath = arguments[index + 1]
            arguments.removeSubrange(index...index + 1)
        }
        #if DEBUG
            print("warning: a debug build; run with -c release for figures worth reading")
        #endif
        // `--only 2,3` runs just those sections (1 to 7), for profiling.
        var only: Set<Int>? = nil
        if let index = arguments.firstIndex(of: "--only"), index + 1 < arguments.count {
            only = Set(arguments[index + 1].split(separator: ",").compactMap { Int($0) })
        }
        func wanted(_ number: Int) -> Bool { only?.contains(number) ?? true }
        let rounds = quick ? 3 : 9
        let machine = machineDescription()
        print("Rebound benchmarks on \(machine)")
        print("medians of \(rounds) interleaved rounds\(quick ? " (--quick)" : "")")

        var sections: [Section] = []
        func add(_ section: Section) {
            printTable(section)
            sections.append(section)
        }

        if wanted(1) {
            for section in try await chainCost(rounds: rounds, count: quick ? 20_000 : 100_000) { add(section) }
        }

        let server = try ServerProcess.start()
        defer { ServerProcess.stop(server) }
        let port = server.url.port!
        let capacity = serverCapacity(port: port, threads: 4, seconds: quick ? 1 : 3)
        // Over the network, many short rounds: the machine's noise drifts, and pairs of short runs see the same. The
        // spread of the per-round ratios is reported too.
        let networkRounds = quick ? 9 : 61
        if wanted(2) {
            try await add(endToEnd(base: server.url, rounds: networkRounds, count: quick ? 128 : 256))
        }
        if wanted(3) {
            try await add(retryPath(base: server.url, rounds: networkRounds, count: quick ? 64 : 192))
        }
        if wanted(6) {
            try await add(transportCost(base: server.url, rounds: networkRounds, count: quick ? 128 : 256))
        }
        let fastestClient =
            sections.flatMap { $0.title.hasPrefix("2.") || $0.title.hasPrefix("3.") ? $0.rows : [] }
            .map { $0.figures["requests/s"] ?? 0 }.max() ?? 0
        if wanted(2) || wanted(3) {
            add(
                Section(
                    title: "Server capacity: the loopback server against a raw-socket client (4 connections)",
                    target: "well above the fastest URLSession rate above, so that the server is not the bottleneck",
                    met: capacity > 1.5 * fastestClient,
                    note: String(format: "%.1f× the fastest client rate", capacity / max(fastestClient, 1)),
                    columns: ["requests/s"],
                    rows: [Row(name: "LoopbackServer (child process)", figures: ["requests/s": capacity])]))
        }

        if wanted(4) { try await add(scale()) }
        if wanted(5) { try await add(sleepAccuracy(samplesPerDelay: quick ? 30 : 100)) }
        if wanted(7) { try await add(soak(base: server.url, count: quick ? 20_000 : 100_000)) }

        let formatter = ISO8601DateFormatter()
        let report = Report(
            date: formatter.string(from: Date()), machine: machine,
            command: "swift run -c release --package-path Benchmarks Benchmarks" + (quick ? " --quick" : ""),
            sections: sections)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        try encoder.encode(report).write(to: URL(fileURLWithPath: jsonPath))
        print("\nwrote \(jsonPath)")
    }
}
