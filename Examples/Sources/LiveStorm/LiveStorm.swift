import Foundation
import Rebound
import ReboundTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A retry storm over real HTTP: sessions on the README's chain (a circuit breaker per host and a ratio budget shared
/// between them, `RetryPolicy()` on its defaults) send a steady load to a loopback server that answers 503 to
/// everything during an outage, and the run tells what became of every retry the chain granted: sent, ended in its
/// backoff by the breaker's opening, or slept to its end and then refused by the breaker.
///
/// The storm simulator measures fleets on a simulated clock; this run shows the same parts on the wall clock, with
/// their real concurrency and scheduling. Its figures vary from run to run: it prints them, it does not judge them.
///
/// `swift run --package-path Examples -c release LiveStorm [--sessions 20] [--rate 200] [--outage 5] [--failing 100] [--own-parts]`
@main
struct LiveStorm {
    static func main() async throws {
        let settings = try Settings(CommandLine.arguments.dropFirst())
        let server = try LoopbackServer()
        defer { server.stop() }

        // Healthy for a second, then down for the outage, then healthy again until the run ends.
        let clock = ContinuousClock()
        let start = clock.now
        let outage = Duration.seconds(1)..<(Duration.seconds(1) + settings.outage)
        // During the outage the server fails every request, or, when only part of it is down, a share of them drawn
        // by the test kit's seeded chaos (the same request numbers fail on every run, whatever its timing).
        let down = LoopbackServer.Chaos(
            rate: Double(settings.failingPercent) / 100, faults: [.status(503, body: "down")], seed: 1)
        server.route("/items") { _, number in
            guard outage.contains(clock.now - start), let fault = down.fault(forRequest: number) else {
                return .status(200, body: "ok")
            }
            return fault
        }

        // One breaker registry and one budget for every session, as the README shares them, or each session its own,
        // as sessions made in different parts of an app would have.
        let shared = (breakers: CircuitBreakerRegistry(), budget: RetryBudget(ratio: .default))
        let sessions = (0..<settings.sessions).map { _ in
            let (breakers, budget) =
                settings.sharesParts ? shared : (CircuitBreakerRegistry(), RetryBudget(ratio: .default))
            return Session(adapters: [breakers, budget], retriers: [RetryPolicy()])
        }

        print(
            "LiveStorm: \(settings.sessions) sessions (\(settings.sharesParts ? "sharing" : "each with its own") "
                + "breakers and budget), \(settings.rate) requests a second, a \(settings.outage) outage after 1 s "
                + "failing \(settings.failingPercent)% of requests, on 127.0.0.1:\(server.port)")
        let tally = Tally()
        let runLength = outage.upperBound + .seconds(4)
        let interval = Duration.seconds(1) / settings.rate
        await withTaskGroup(of: Void.self) { group in
            var sent = 0
            while clock.now - start < runLength {
                let session = sessions[sent % sessions.count]
                group.addTask {
                    do {
                        tally.count(try await session.send(server.url("/items")).attempts, error: nil)
                    } catch let error as ReboundError {
                        tally.count(error.attempts, error: error)
                    } catch {
                        tally.countOther()
                    }
                }
                sent += 1
                try? await clock.sleep(until: start + interval * sent)
            }
        }
        print(tally.report(serverHits: server.hits("/items")))
    }
}

/// The run's settings, from the command line.
struct Settings {
    var sessions = 20
    var rate = 200
    var outage = Duration.seconds(5)
    var sharesParts = true
    var failingPercent = 100

    init(_ arguments: ArraySlice<String>) throws {
        var arguments = arguments
        while let name = arguments.popFirst() {
            if name == "--own-parts" {
                sharesParts = false
                continue
            }
            guard let value = arguments.popFirst().flatMap(Int.init), value > 0 else {
                throw UsageError(message: "\(name) needs a positive whole number")
            }
            switch name {
            case "--sessions": sessions = value
            case "--rate": rate = value
            case "--outage": outage = .seconds(value)
            case "--failing" where value <= 100: failingPercent = value
            default: throw UsageError(message: "unknown option \(name)")
            }
        }
    }
}

struct UsageError: Error, CustomStringConvertible {
    let message: String
    var description: String {
        "\(message)\nusage: LiveStorm [--sessions 20] [--rate 200] [--outage 5] [--failing 100] [--own-parts]"
    }
}

/// What became of the requests and of the retries the chain granted; counted from many tasks, behind a lock.
final class Tally: @unchecked Sendable {
    private struct Counts {
        var requests = 0
        var succeeded = 0
        var failedFast = 0
        var otherErrors = 0
        var attempts = 0
        var grantedRetries = 0
        var retriesSent = 0
        var endedInBackoff = 0
        var refusedAfterBackoff = 0
    }

    private let lock = NSLock()
    private var counts = Counts()

    private func withCounts<Result>(_ body: (inout Counts) -> Result) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return body(&counts)
    }

    /// Counts one request's attempts, and the error it ended with, if any.
    func count(_ attempts: [Attempt], error: ReboundError?) {
        // Each attempt after one whose retry was granted is that retry: sent, or refused before it was sent.
        let retries = zip(attempts, attempts.dropFirst()).filter { $0.0.retryDelay != nil }.map(\.1)
        let refused = retries.filter { if case .circuitOpen = $0.failure { true } else { false } }.count
        // A request whose last attempt holds a granted retry never made it: its backoff was ended.
        let ended = attempts.last?.retryDelay != nil ? 1 : 0
        withCounts { counts in
            counts.requests += 1
            if error == nil { counts.succeeded += 1 }
            if error?.circuitBreakerOpenError != nil, attempts.count == 1, attempts[0].request == nil {
                counts.failedFast += 1
            }
            counts.attempts += attempts.filter { $0.request != nil }.count
            counts.grantedRetries += retries.count + ended
            counts.retriesSent += retries.count - refused
            counts.endedInBackoff += ended
            counts.refusedAfterBackoff += refused
        }
    }

    /// Counts a request that ended with something other than a `ReboundError` (a cancellation).
    func countOther() {
        withCounts {
            $0.requests += 1
            $0.otherErrors += 1
        }
    }

    /// The figures, one per line.
    func report(serverHits: Int) -> String {
        let counts = withCounts { $0 }
        return """
            requests                               \(counts.requests) (\(counts.succeeded) succeeded, \
            \(counts.failedFast) failed fast at the breaker, \(counts.otherErrors) other)
            attempts sent (server hits)            \(counts.attempts) (\(serverHits))
            retries granted                        \(counts.grantedRetries)
              sent after their backoff             \(counts.retriesSent)
              ended in their backoff (opening)     \(counts.endedInBackoff)
              slept, then refused by the breaker   \(counts.refusedAfterBackoff)
            """
    }
}
