import Foundation
import SideBySide

/// One line of a section: a name and its figures, with the per-round values behind a figure that has them (a ratio's
/// rounds), which the ordo-one metrics record one by one, so that their percentiles are the rounds' quartiles.
struct Row: Codable {
    let name: String
    let figures: [String: Double]
    var rounds: [String: [Double]] = [:]

    enum CodingKeys: String, CodingKey {
        case name, figures
    }

    init(name: String, figures: [String: Double], rounds: [String: [Double]] = [:]) {
        self.name = name
        self.figures = figures
        self.rounds = rounds
    }
}

/// The figures of a ratio measured round by round, under `column`: the median of the rounds' ratios, its standard
/// error, and the rounds' quartiles; all NaN for the baseline row (`nil`), which has no ratio.
func ratioFigures(_ roundRatios: [Double]?, as column: String) -> [String: Double] {
    guard let roundRatios else {
        return [column: .nan, "± (standard error)": .nan, "ratio p25": .nan, "ratio p75": .nan]
    }
    return [
        column: median(roundRatios), "± (standard error)": standardErrorOfMedian(roundRatios),
        "ratio p25": percentile(roundRatios, 25), "ratio p75": percentile(roundRatios, 75),
    ]
}

/// One benchmark's results, with its target and whether this run met it.
struct Section: Codable {
    let title: String
    let target: String
    let met: Bool?
    let note: String?
    let columns: [String]
    let rows: [Row]
}

/// Everything one run measured, and the machine it ran on.
struct Report: Codable {
    let date: String
    let machine: String
    let command: String
    let sections: [Section]
}

func printTable(_ section: Section) {
    print("\n## \(section.title)")
    let nameWidth = max(section.rows.map(\.name.count).max() ?? 0, 4)
    let widths = section.columns.map { max($0.count, 12) }
    var header = "name".padding(toLength: nameWidth, withPad: " ", startingAt: 0)
    for (column, width) in zip(section.columns, widths) {
        header += "  " + String(repeating: " ", count: width - column.count) + column
    }
    print(header)
    for row in section.rows {
        var line = row.name.padding(toLength: nameWidth, withPad: " ", startingAt: 0)
        for (column, width) in zip(section.columns, widths) {
            let text = row.figures[column].map(format) ?? "-"
            line += "  " + String(repeating: " ", count: max(width - text.count, 0)) + text
        }
        print(line)
    }
    let verdict = section.met.map { $0 ? "met" : "MISSED" } ?? "reported"
    print("target: \(section.target) → \(verdict)")
    if let note = section.note { print("note: \(note)") }
}

private func format(_ value: Double) -> String {
    if value.isNaN { return "-" }
    if abs(value) >= 1_000 { return String(format: "%.0f", value) }
    if abs(value) >= 10 { return String(format: "%.1f", value) }
    return String(format: "%.3f", value)
}

func machineDescription() -> String {
    var name = utsname()
    uname(&name)
    func string<T>(_ value: T) -> String {
        withUnsafeBytes(of: value) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }
    let cores = ProcessInfo.processInfo.activeProcessorCount
    let memory = Double(ProcessInfo.processInfo.physicalMemory) / 1_073_741_824
    var cpu = ""
    if let info = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
        let line = info.split(separator: "\n").first(where: { $0.hasPrefix("model name") })
    {
        cpu = line.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
    }
    return "\(string(name.sysname)) \(string(name.release)) \(string(name.machine)), \(cores) cores"
        + (cpu.isEmpty ? "" : " (\(cpu))") + String(format: ", %.0f GiB", memory)
}
