import Foundation
import Rebound

/// Prints lines stamped with the time since the demo started.
public final class Narrator: Sendable {
    /// Starts the clock.
    public init() {}

    private let start = ContinuousClock.now

    /// Prints a line stamped with the time since the start.
    public func say(_ line: String) {
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print(String(format: "  [%6.3fs] ", seconds) + line)
    }

    /// Prints a title, runs `body` and prints its result or error.
    public func scenario(_ title: String, _ body: @Sendable () async throws -> String) async {
        print("▶ \(title)")
        do {
            say("✔ \(try await body())")
        } catch let error as ReboundError {
            say("✘ \(error)")
        } catch {
            say("✘ \(error)")
        }
        print("")
    }
}
