import Foundation

extension CircuitBreaker {
    /// Where a breaker is in its cycle.
    ///
    /// A minor release may add a case: switch over it with `@unknown default` (<doc:APIStabilityGuide>).
    public enum State: String, Sendable, Hashable, CustomStringConvertible {
        /// Requests go through and outcomes are counted.
        case closed
        /// Requests fail fast until the open duration has passed.
        case open
        /// A bounded number of trial calls go through; their outcome closes or re-opens the breaker.
        case halfOpen = "half-open"
        /// Requests fail fast until ``CircuitBreaker/reset()`` or ``CircuitBreaker/forceClosed()``.
        case forcedOpen = "forced open"
        /// Requests go through and failures never open the breaker, until ``CircuitBreaker/reset()`` or
        /// ``CircuitBreaker/forceOpen()``.
        case forcedClosed = "forced closed"

        /// The state's name, for example `half-open`.
        public var description: String { rawValue }
    }

    /// A change of state.
    public struct Transition: Sendable, Equatable {
        /// The key of the breaker that changed; `nil` for a breaker without one.
        public let key: String?
        /// The state it left.
        public let from: State
        /// The state it entered.
        public let to: State
    }
}
