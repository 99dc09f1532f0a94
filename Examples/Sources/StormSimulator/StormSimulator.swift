import Foundation
import Rebound

/// The storm simulator: many clients send to one server that fails everything for a while, each client with a policy
/// built from Rebound's real types, on a manual clock and a simulated transport, one job at a time so that every run
/// is the same. Prints its page (a table per scenario); with `--output DIR`, also writes it as `DIR/StormSimulator.md`
/// with `DIR/storm.svg` (the server's load over time per policy), which `Docs/` holds and CI regenerates.
///
/// `swift run --package-path Examples -c release StormSimulator [--clients N] [--output Docs]`
@main
enum StormSimulator {
    static func main() async {
        guard #available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *) else {
            print("The storm simulator needs task executors: macOS 15, iOS 18 or later, or Linux.")
            return
        }
        let arguments = CommandLine.arguments
        func value(after flag: String) -> String? {
            arguments.firstIndex(of: flag).flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil }
        }
        // The page shows a few clients that each send much beside a fleet of many that each send little (every
        // install of an app is such a client); `--clients N` shows N alone.
        let fleets = value(after: "--clients").flatMap(Int.init).map { [$0] } ?? [100, 100_000]
        guard fleets.allSatisfy({ $0 >= 1 }) else {
            print("--clients must be at least 1")
            return
        }
        let model = ServerModel()
        let signalling = ServerModel(signal: ServerModel.Signal())
        let throttling = ServerModel(signal: ServerModel.Signal(status: 429))
        let declining = ServerModel(signal: ServerModel.Signal(retryAfter: nil, shouldRetry: false))
        let tail = ServerModel(outage: .zero..<Duration.zero, slowShare: 0.02)
        let smallTail = ServerModel(outage: .zero..<Duration.zero, slowShare: 0.01)
        let slowingDown = ServerModel(
            outage: .zero..<Duration.zero, slowdown: Duration.seconds(10)..<Duration.seconds(20))
        var scenarios: [Scenario] = []
        for clients in fleets {
            scenarios += [
                Scenario(
                    name: "offered load half the capacity (2× headroom)", clients: clients,
                    offered: model.capacity / 2),
                Scenario(
                    name: "offered load two thirds of the capacity (1.5× headroom)", clients: clients,
                    offered: model.capacity / 1.5),
                Scenario(
                    name: "a server that signals: 503 and Retry-After: 10, 2× headroom", model: signalling,
                    clients: clients, offered: model.capacity / 2),
                Scenario(
                    name: "a server that signals: 429 and Retry-After: 10, 2× headroom", model: throttling,
                    clients: clients, offered: model.capacity / 2),
                Scenario(
                    name: "a server that signals: 503 and x-should-retry: false, 2× headroom", model: declining,
                    clients: clients, offered: model.capacity / 2, policies: Policy.declinePolicies),
            ]
        }
        scenarios.append(
            Scenario(
                name: "a slow tail, no outage: 2% of requests take 600 ms", model: tail, clients: fleets[0],
                offered: model.capacity / 2, duration: .seconds(20), policies: Policy.tailPolicies))
        for clients in fleets {
            scenarios.append(
                Scenario(
                    name: "a service at three endpoints, the first down for 10 s", clients: clients,
                    offered: model.capacity / 2, duration: .seconds(50), policies: Policy.endpointPolicies,
                    endpoints: Policy.endpoints))
        }
        scenarios.append(
            Scenario(
                name: "a slow tail of 1%, no outage, and hedging that learns its delay", model: smallTail,
                clients: fleets[0], offered: model.capacity / 2, duration: .seconds(20),
                policies: Policy.learnedPolicies))
        for clients in fleets {
            scenarios.append(
                Scenario(
                    name: "every answer five times slower for 10 s, no outage, and hedging that learns its delay, "
                        + "\(Report.count(clients)) clients",
                    model: slowingDown, clients: clients, offered: model.capacity / 2, duration: .seconds(30),
                    policies: Policy.learnedPolicies))
        }
        scenarios.append(
            Scenario(
                name: "a quota of 8 requests a second per client, advertised, no outage",
                model: ServerModel(outage: .zero..<Duration.zero, quota: ServerModel.Quota()), clients: fleets[0],
                offered: model.capacity / 2, duration: .seconds(20), policies: Policy.quotaPolicies))
        var report = Report(model: model)
        for scenario in scenarios {
            report.add(scenario, await outcomes(of: scenario))
        }
        print(report.markdown, terminator: "")
        if let directory = value(after: "--output") {
            do {
                try report.markdown.write(toFile: directory + "/StormSimulator.md", atomically: true, encoding: .utf8)
                try report.svg.write(toFile: directory + "/storm.svg", atomically: true, encoding: .utf8)
            } catch {
                print("could not write to \(directory): \(error)")
            }
        }
    }
}
