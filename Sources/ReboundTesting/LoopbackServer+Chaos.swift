import Foundation
import Rebound

extension LoopbackServer {
    /// Faults that a route puts in place of a share of its replies, chosen by a seed: chaos testing against a real
    /// server, as Polly's chaos strategies and Microsoft's HTTP fault injection do it for .NET.
    ///
    /// Each request on the route is drawn for by its number on the route (1 for the first), from `seed` alone: the
    /// same seed injects the same faults into the same request numbers on every run, whatever order concurrent
    /// requests arrive in and whatever the thread timing. A request drawn for gets one of ``faults``, also by its
    /// number; the others get the route's scripted reply. ``fault(forRequest:)`` says in advance which requests get
    /// which fault.
    ///
    /// ```swift
    /// let server = try LoopbackServer()
    /// defer { server.stop() }
    /// let chaos = LoopbackServer.Chaos(
    ///     rate: 0.2, faults: [.reset, .drop, .closeMidBody(), .truncatedChunked(), .malformedStatusLine], seed: 7)
    /// server.route("/items", [.status(200, body: "ok")], chaos: chaos)
    /// ```
    public struct Chaos: Sendable {
        /// The share of requests that get a fault, from 0 to 1.
        public let rate: Double
        /// The faults to choose from, each as likely as the others.
        public let faults: [Reply]
        /// Where the draws come from.
        public let seed: UInt64

        /// Creates the chaos of a route; an invalid setting traps, naming it.
        ///
        /// - Parameters:
        ///   - rate: The share of requests that get a fault, from 0 (none) to 1 (every one).
        ///   - faults: The faults to choose from, at least one: any replies, such as ``Reply/reset``,
        ///     ``Reply/drop``, ``Reply/closeMidBody(status:length:)``, ``Reply/truncatedChunked(status:length:)``,
        ///     ``Reply/malformedStatusLine``, ``Reply/stall``, a ``Reply/trickled(bytes:every:)`` reply, or a
        ///     `.status(503)`.
        ///   - seed: Where the draws come from: the same seed, the same faults in the same requests.
        public init(rate: Double, faults: [Reply], seed: UInt64) {
            precondition(
                rate.isFinite && (0...1).contains(rate), "LoopbackServer.Chaos.rate must be from 0 to 1, got \(rate)")
            precondition(!faults.isEmpty, "LoopbackServer.Chaos.faults must hold at least one fault")
            self.rate = rate
            self.faults = faults
            self.seed = seed
        }

        /// The fault that request number `number` on the route gets (1 for the first); `nil` for the route's reply.
        public func fault(forRequest number: Int) -> Reply? {
            // A generator of its own per request number, so that a draw depends on the seed and the number alone.
            var generator = SplitMix64(seed: seed ^ (UInt64(truncatingIfNeeded: number) &* 0x9E37_79B9_7F4A_7C15))
            let draw = Double(generator.next() >> 11) / Double(1 << 53)
            guard draw < rate else { return nil }
            return faults[Int(generator.next() % UInt64(faults.count))]
        }
    }

    /// Answers requests to `path` with `replies` in order, one per request (the last one repeating), except those
    /// that `chaos` puts a fault in place of.
    ///
    /// Replaces any route `path` had, and its counts. A request that got a fault counts toward the route's numbers as
    /// any other, so a client's retry of it is the next number, drawn for in its turn.
    public func route(_ path: String, _ replies: [Reply], chaos: Chaos) {
        precondition(!replies.isEmpty, "LoopbackServer.route(_:_:chaos:) needs at least one reply for \(path)")
        route(path) { _, number in chaos.fault(forRequest: number) ?? replies[min(number, replies.count) - 1] }
    }
}
