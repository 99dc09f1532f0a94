import Foundation
import Rebound

/// The simulator's table and chart, written the same way on every run (fixed decimals, no dates).
@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
struct Report {
    let model: ServerModel
    private var sections: [(scenario: Scenario, outcomes: [Outcome])] = []

    init(model: ServerModel) {
        self.model = model
    }

    mutating func add(_ scenario: Scenario, _ outcomes: [Outcome]) {
        sections.append((scenario, outcomes))
    }

    private static func fixed(_ value: Double, _ decimals: Int) -> String {
        String(format: "%.\(decimals)f", value)
    }

    /// A count with thousands separated by commas: `100,000`.
    static func count(_ value: Int) -> String {
        let digits = String(value)
        return digits.enumerated().map { index, digit in
            index > 0 && (digits.count - index) % 3 == 0 ? ",\(digit)" : "\(digit)"
        }.joined()
    }

    /// The client counts of the scenarios, in order: `100 or 100,000`.
    private var clientCounts: String {
        var seen: [Int] = []
        for section in sections where !seen.contains(section.scenario.clients) { seen.append(section.scenario.clients) }
        return seen.map(Self.count).joined(separator: " or ")
    }

    private static func milliseconds(_ duration: Duration) -> String {
        "\(Int((duration.seconds * 1_000).rounded())) ms"
    }

    var markdown: String {
        let outage = model.outage
        var text = """
            # The storm simulator

            <!-- Written by `swift run --package-path Examples -c release StormSimulator --output Docs`: edit \
            Examples/Sources/StormSimulator, not this file. CI runs it again and fails when this file or storm.svg differ. -->

            What each of Rebound's parts does to a struggling server, in numbers: many clients send to one server that \
            fails everything for a while, each client with a policy made of Rebound's real types (`Session`, \
            `RetryPolicy`, `RetryBudget`, `CircuitBreakerRegistry`, `AdaptiveThrottle`, the `Resilience` preset, \
            `Hedging`, `HedgingDelayLearner`) on a simulated transport and a `ManualClock`; the last scenarios have no \
            outage but a slow tail, a latency shift or a quota, for hedging (with a delay set, or learned) and pacing. \
            It runs on `ReboundTesting`'s `Simulation`, one job at a time in a fixed order, so every run \
            gives the same numbers, to the last digit, on every machine.

            ```sh
            swift run --package-path Examples -c release StormSimulator                   # this page, about a minute
            swift run --package-path Examples -c release StormSimulator --clients 1000    # as many clients as you like
            ```

            **The model.** \(clientCounts) clients send to one server that serves \(Int(model.capacity)) requests a second \
            (\(model.workers) workers, \(Self.milliseconds(model.service)) each; more at once share the workers and take \
            longer, and past \(model.maximumInFlight) in flight the excess fails at once; work whose client gave up \
            goes on to its end). The server fails everything, in 5 ms, from \(Int(outage.lowerBound.seconds)) s to \
            \(Int(outage.upperBound.seconds)) s. Requests arrive as a Poisson process, each to a client at random; \
            each client has its own session and parts, seeded, and gives up on an attempt after \
            \(Self.milliseconds(Policy.attemptTimeout)).

            ![Requests reaching the server per second over time, one line per policy, with the outage shaded](storm.svg)

            - **during** / **after**: attempts that reached the server per request offered, during the outage and in the \
            10 s after it; **peak after**: the most attempts that reached it in any 500 ms of those 10 s, per second \
            (a synchronized wave of retries shows here).
            - **back to normal**: how long after the outage the server stays out of overload for good (overload: down, \
            failing the excess, or holding more than one and a half times its workers).
            - **success**: the share of all requests that succeeded; **after**: of those that arrived in the 5 s after \
            the outage.
            - **p50 / p99 / p99.9**: the latency of the requests that succeeded, from arrival to response.

            Each client's parts learn only from its own traffic: with many clients that each send little (every \
            install of an app is such a client), a budget, a breaker or a throttle per client sees too few requests to \
            act, and only the shape of the retries is left to protect the server; each scenario is shown with a few \
            clients that send much and with a fleet that sends little. That shape has a floor: clients that each send \
            one request during an outage cannot average fewer attempts than 1 + the retries that land inside it, \
            unless they skip retries. Two jittered retries both land inside a 10 s outage (2.9); the preset's policy \
            makes no third attempt after two that failed the same way, which brings it to the floor of one retry \
            (2.0), while a lone failure is still retried. A server that says it is overloaded (the \
            scenarios with `Retry-After`, with 503 or with 429: Rebound reads both alike) gets one attempt per request \
            during its outage at any fleet size from every policy that waits as long as it asks (all but immediate \
            retries and the AWS SDKs' behavior below), because each client honours what it says; the requests it \
            turned away come back when it said, as spread as they arrived. A server that answers its outage with \
            `x-should-retry: false` and no `Retry-After` is heard by the preset, which reads the signal \
            (`RetryAfter(signals: .all)`), and not by `RetryPolicy()`, which reads it only when told to (the AWS SDKs' \
            behavior never does). The signal stops retries only, not the requests that follow, so the \
            preset's breakers and throttle hand the traffic back soon after the server answers again.

            The last row of each outage table is the AWS SDKs' retry behavior 2.1, `RetryPolicy.awsRetries2026()` \
            with its budget (`RetryBudget.Configuration.awsRetries2026`), for comparison: its 500 tokens are each \
            client's own, so a fleet that sends little retries as if it had none, and it holds a server's \
            `Retry-After` to at most 5 s past its own delay, so a server that asks for 10 s gets its retries back \
            inside the outage.

            """
        text += outageTables
        for (scenario, outcomes) in sections where scenario.endpoints > 1 {
            text += endpoints(scenario, outcomes)
        }
        for (scenario, outcomes) in sections where !scenario.hasOutage {
            text += scenario.model.quota == nil ? tail(scenario, outcomes) : quota(scenario, outcomes)
        }
        return text
    }

    /// The table of a scenario without an outage, about the server's slow tail (or its slowing down) and what hedging
    /// does to it.
    private func tail(_ scenario: Scenario, _ outcomes: [Outcome]) -> String {
        let tail = scenario.model
        let slowness =
            tail.slowdown.isEmpty
            ? """
            except that \(Self.fixed(tail.slowShare * 100, 0))% of the requests, drawn at random, take \
            \(Self.milliseconds(tail.slowService)) instead of \(Self.milliseconds(tail.service)): a slow replica, a pause.
            """
            : """
            except that every answer takes \(Self.fixed(tail.slowdownFactor, 0)) times as long to arrive (\
            \(Self.milliseconds(tail.service * tail.slowdownFactor)) instead of \(Self.milliseconds(tail.service))) \
            from \(Int(tail.slowdown.lowerBound.seconds)) s to \(Int(tail.slowdown.upperBound.seconds)) s, its \
            capacity unchanged: a latency shift (a slower network, a slower dependency behind it).
            """
        let hedging =
            scenario.policies.contains(.learned)
            ? """
            With hedging that learns its delay (`HedgingDelayLearner`'s defaults), each of the \
            \(Self.count(scenario.clients)) clients learns the delay from its own answers (the 98th percentile, raised \
            by a twentieth) and sends at most 2% more attempts than requests, none before its 50th request.
            """
            : """
            Hedging starts a second attempt of a request that has not answered within \
            \(Self.milliseconds(Policy.hedgingDelay)).
            """
        var text = """

            ## \(scenario.name.prefix(1).uppercased() + scenario.name.dropFirst())

            \(Int(scenario.offered.rounded())) requests a second for \(Int(scenario.duration.seconds)) s to the same \
            server without an outage, \(slowness) \(hedging) The server goes on with an attempt the client dropped. \
            **load**: attempts that reached the server per request offered.

            | policy | load | success | p50 | p99 | p99.9 |
            |---|---|---|---|---|---|

            """
        for outcome in outcomes {
            let cells = [
                outcome.policy.name, Self.fixed(outcome.load, 3),
                Self.fixed(outcome.success(in: .zero..<scenario.duration) * 100, 1) + "%",
                Self.milliseconds(outcome.latency(50)), Self.milliseconds(outcome.latency(99)),
                Self.milliseconds(outcome.latency(99.9)),
            ]
            text += "| " + cells.joined(separator: " | ") + " |\n"
        }
        return text
    }

    /// The table of a scenario of a service at several endpoints, the first of them down for a while.
    private func endpoints(_ scenario: Scenario, _ outcomes: [Outcome]) -> String {
        let outage = scenario.model.outage
        var text = """

            ## \(scenario.name.prefix(1).uppercased() + scenario.name.dropFirst()), \(Self.count(scenario.clients)) clients

            \(Int(scenario.offered.rounded())) requests a second for \(Int(scenario.duration.seconds)) s from \
            \(Self.count(scenario.clients)) clients to a service at \(scenario.endpoints) servers of \
            \(Int(model.capacity)) requests a second each (`https://server0.example` and the others), every request \
            written for the first, which fails everything from \(Int(outage.lowerBound.seconds)) s to \
            \(Int(outage.upperBound.seconds)) s. The preset alone sends to the first; with an `EndpointGroup` of the \
            three (failover, given the preset's breakers, `Session(resilience:endpointGroup:)`), a retry goes to \
            another server, and each client ejects the first after five failures in a row, for 30 s. **during**: \
            attempts that reached the servers per request offered during the outage; **once moved**: from 2 s into it \
            to its end; **first back**: how long after the outage the first server took a request again (—: its clients \
            never stopped sending to it).

            | policy | success during | during | once moved | first back | success |
            |---|---|---|---|---|---|

            """
        for outcome in outcomes {
            let cells = [
                outcome.policy.name, Self.fixed(outcome.success(in: outage) * 100, 2) + "%",
                Self.fixed(outcome.duringOutage, 2), Self.fixed(outcome.attemptsOnceMoved ?? 0, 2),
                outcome.firstServerBack.map { Self.fixed($0.seconds, 1) + " s" } ?? "—",
                Self.fixed(outcome.success(in: .zero..<scenario.duration) * 100, 2) + "%",
            ]
            text += "| " + cells.joined(separator: " | ") + " |\n"
        }
        // Where no client ejected the first server: each client's requests during the outage, against the failures in a
        // row that eject an endpoint, say why.
        let ejectingFailures = EndpointGroup.OutlierDetection.default.consecutiveFailures ?? 0
        let perClient = scenario.offered * (outage.upperBound - outage.lowerBound).seconds / Double(scenario.clients)
        let grouped = outcomes.first { $0.policy == .grouped }
        if let grouped, grouped.firstServerBack == nil, perClient < Double(ejectingFailures) {
            text += """

                Each client sends \(Self.fixed(perClient, 2)) requests on average during the outage, fewer than the \
                \(ejectingFailures) failures in a row that eject an endpoint: no client ejects the first server, so \
                each request meets the outage once and its retry goes to another server, which answers. Two attempts \
                per request is the floor for clients that each learn only from their own traffic; one group shared by \
                the sessions of a process learns from all of their requests.

                """
        }
        return text
    }

    /// The table of the scenario whose server advertises a quota per client.
    private func quota(_ scenario: Scenario, _ outcomes: [Outcome]) -> String {
        let quota = scenario.model.quota ?? ServerModel.Quota()
        var text = """

            ## \(scenario.name.prefix(1).uppercased() + scenario.name.dropFirst())

            \(Int(scenario.offered.rounded())) requests a second for \(Int(scenario.duration.seconds)) s from \
            \(Self.count(scenario.clients)) clients (about \(Int((scenario.offered / Double(scenario.clients)).rounded())) \
            a second each, in bursts) to the same server without an outage, which allows each client \
            \(quota.requests) requests per \(Int(quota.window.seconds)) s window, says so in every answer \
            (`RateLimit-Policy: "client";q=\(quota.requests);w=\(Int(quota.window.seconds))` and \
            `RateLimit: "client";r=…;t=…`) and answers a request past it with 429. **429s**: the requests it \
            answered so, per 1,000 offered; a client can avoid all but those it sends before its first answer. A \
            paced request's wait for the next window is part of its attempt, so the clients' \
            \(Self.milliseconds(Policy.attemptTimeout)) attempt timeout cuts the longest waits.

            | policy | 429s | success | p50 | p99 | p99.9 |
            |---|---|---|---|---|---|

            """
        for outcome in outcomes {
            let perThousand = Double(outcome.throttled) * 1_000 / Double(max(outcome.requests.count, 1))
            let cells = [
                outcome.policy.name, Self.fixed(perThousand, 1),
                Self.fixed(outcome.success(in: .zero..<scenario.duration) * 100, 1) + "%",
                Self.milliseconds(outcome.latency(50)), Self.milliseconds(outcome.latency(99)),
                Self.milliseconds(outcome.latency(99.9)),
            ]
            text += "| " + cells.joined(separator: " | ") + " |\n"
        }
        return text
    }

    /// The tables of the scenarios with an outage.
    private var outageTables: String {
        var text = ""
        let outage = model.outage
        for (scenario, outcomes) in sections where scenario.hasOutage && scenario.endpoints == 1 {
            text += """

                ## \(scenario.name.prefix(1).uppercased() + scenario.name.dropFirst()), \(Self.count(scenario.clients)) clients

                \(Int(scenario.offered.rounded())) requests a second for \(Int(scenario.duration.seconds)) s\
                \(scenario.model.signal.map { signal in
                    "; the server answers the outage, and requests past \(signal.shedsAbove) in flight, with " +
                    "\(signal.status) and " + Self.fields(of: signal)
                } ?? "").

                | policy | during | after | peak after | back to normal | success | after | p50 | p99 | p99.9 |
                |---|---|---|---|---|---|---|---|---|---|

                """
            let recovery = outage.upperBound..<outage.upperBound + .seconds(5)
            for outcome in outcomes {
                let cells = [
                    outcome.policy.name, Self.fixed(outcome.duringOutage, 2), Self.fixed(outcome.afterOutage, 2),
                    "\(Int(outcome.peakAfterOutage.rounded()))/s", Self.fixed(outcome.backToNormal.seconds, 1) + " s",
                    Self.fixed(outcome.success(in: .zero..<scenario.duration) * 100, 1) + "%",
                    Self.fixed(outcome.success(in: recovery) * 100, 1) + "%",
                    Self.milliseconds(outcome.latency(50)), Self.milliseconds(outcome.latency(99)),
                    Self.milliseconds(outcome.latency(99.9)),
                ]
                text += "| " + cells.joined(separator: " | ") + " |\n"
            }
        }
        return text
    }

    /// The fields a signalling server sends beside its status, as the tables name them.
    private static func fields(of signal: ServerModel.Signal) -> String {
        var fields: [String] = []
        if let retryAfter = signal.retryAfter { fields.append("`Retry-After: \(retryAfter.components.seconds)`") }
        if let shouldRetry = signal.shouldRetry { fields.append("`x-should-retry: \(shouldRetry)`") }
        return fields.joined(separator: " and ")
    }

    /// The server's load over time, one panel per scenario, one line per policy, in requests a second per 500 ms.
    var svg: String {
        let sections = sections.filter { $0.scenario.hasOutage && $0.scenario.endpoints == 1 }
        let width = 860
        let height = 460 * sections.count
        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(width)" height="\(height)" \
            viewBox="0 0 \(width) \(height)" font-family="-apple-system, Helvetica, Arial, sans-serif" \
            font-size="12">
            <rect width="100%" height="100%" fill="white"/>

            """
        for (index, section) in sections.enumerated() {
            svg += "<g transform=\"translate(0,\(index * 460))\">\n"
            svg += panel(section.scenario, section.outcomes)
            svg += "</g>\n"
        }
        svg += "</svg>\n"
        return svg
    }

    /// One scenario's chart, 860 × 460.
    private func panel(_ scenario: Scenario, _ outcomes: [Outcome]) -> String {
        let width = 860.0
        let height = 460.0
        let left = 70.0
        let right = 250.0
        let top = 48.0
        let bottom = 50.0
        let perPoint = 5  // 100 ms buckets per point: 500 ms
        let series = outcomes.map { outcome in
            stride(from: 0, to: outcome.attemptsPerBucket.count, by: perPoint).map { start in
                Double(
                    outcome.attemptsPerBucket[start..<min(start + perPoint, outcome.attemptsPerBucket.count)].reduce(
                        0, +))
                    / (SimulatedServer.bucket.seconds * Double(perPoint))
            }
        }
        let peak = max(series.flatMap { $0 }.max() ?? 1, model.capacity)
        let scale = (peak / 500).rounded(.up) * 500
        let seconds = scenario.duration.seconds
        func x(_ time: Double) -> Double { left + (width - left - right) * time / seconds }
        func y(_ rate: Double) -> Double { top + (height - top - bottom) * (1 - rate / scale) }
        func number(_ value: Double) -> String { Self.fixed(value, 1) }
        let colors = [
            "#7f7f7f", "#d62728", "#ff7f0e", "#bcbd22", "#2ca02c", "#1f77b4", "#9467bd", "#000000", "#17becf",
        ]
        var svg = """
            <text x="\(Int(left))" y="26" font-size="15" font-weight="bold">Requests reaching the server per second, \
            \(Self.count(scenario.clients)) clients, \(Int(scenario.offered.rounded())) offered a second\
            \(scenario.model.signal == nil ? "" : ", the server signals")</text>
            <rect x="\(number(x(model.outage.lowerBound.seconds)))" y="\(number(top))" \
            width="\(number(x(model.outage.upperBound.seconds) - x(model.outage.lowerBound.seconds)))" \
            height="\(number(height - top - bottom))" fill="#f2dede"/>
            <text x="\(number((x(model.outage.lowerBound.seconds) + x(model.outage.upperBound.seconds)) / 2))" \
            y="\(number(top + 14))" text-anchor="middle" fill="#a94442">outage</text>

            """
        for tick in stride(from: 0.0, through: scale, by: scale / 5) {
            svg += """
                <line x1="\(number(left))" y1="\(number(y(tick)))" x2="\(number(width - right))" y2="\(number(y(tick)))" \
                stroke="#e5e5e5"/>
                <text x="\(number(left - 6))" y="\(number(y(tick) + 4))" text-anchor="end">\(Int(tick))</text>

                """
        }
        for second in stride(from: 0, through: Int(seconds), by: 5) {
            svg += """
                <text x="\(number(x(Double(second))))" y="\(number(height - bottom + 18))" \
                text-anchor="middle">\(second) s</text>

                """
        }
        svg += """
            <line x1="\(number(left))" y1="\(number(y(model.capacity)))" x2="\(number(width - right))" \
            y2="\(number(y(model.capacity)))" stroke="black" stroke-dasharray="4 3"/>
            <text x="\(number(width - right + 6))" y="\(number(y(model.capacity) + 4))">capacity</text>

            """
        for (index, points) in series.enumerated() {
            let line = points.enumerated().map { point, rate in
                "\(number(x(Double(point * perPoint) * SimulatedServer.bucket.seconds))),\(number(y(rate)))"
            }.joined(separator: " ")
            // A policy keeps its color in every panel, also where a scenario compares fewer.
            let color = colors[(Policy.outagePolicies.firstIndex(of: outcomes[index].policy) ?? index) % colors.count]
            svg += """
                <polyline points="\(line)" fill="none" stroke="\(color)" stroke-width="1.5"/>
                <line x1="\(number(width - right + 10))" y1="\(number(top + 40 + Double(index) * 20))" \
                x2="\(number(width - right + 30))" y2="\(number(top + 40 + Double(index) * 20))" stroke="\(color)" \
                stroke-width="2"/>
                <text x="\(number(width - right + 36))" y="\(number(top + 44 + Double(index) * 20))">\
                \(outcomes[index].policy.name)</text>

                """
        }
        return svg
    }
}
