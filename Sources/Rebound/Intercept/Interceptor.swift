import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Adapters and retriers from several places, run as one interceptor.
///
/// The rules, which the session follows too when it runs its own interceptor and then the request's:
/// - **A part plays the role of the list it is in**, as in Alamofire: `adapters` adapt, `retriers` are asked about
///   retries, `interceptors` do both. No role is found by looking at a part's type: a part with more roles (a
///   breaker's, a budget's, the JSON-body retrier's) registers them through the context of the call it gets, so a
///   wrapper that forwards that call keeps them all.
/// - **Adapters run in order**, each receiving the previous one's output. The first that throws stops the chain;
///   its error fails the attempt and is offered to the retriers like any other failure.
/// - **Every attempt re-runs the whole adapter chain** on the request as the caller gave it, so adapters never see
///   their own output from an earlier attempt.
/// - **Retriers are asked in order**, exactly once per failed attempt. ``RetryResult/doNotRetry`` passes on to the
///   next; any other answer wins and the retriers after it are not asked. When all pass, the answer is
///   ``RetryResult/doNotRetry``.
/// - Interceptors given with `interceptors:` adapt after `adapters` and retry after `retriers`, in the order given.
/// - `observers` and `gates` join the request when the interceptor adapts it (or, placed where it only retries, when
///   it is first asked about a retry): they are told, and asked, after the session's and the request's own, each
///   class instance once.
///
/// An `Interceptor` is immutable and safe to share between sessions and tasks.
///
/// ```swift
/// let interceptor = Interceptor(
///     adapters: [.adapter { request, _ in request }],
///     retriers: [RetryPolicy()]
/// )
/// ```
public struct Interceptor: RequestInterceptor, AdaptsInPlace {
    /// The adapters, in the order they run: `adapters`, then `interceptors`.
    public let adapters: [any RequestAdapter]
    /// The retriers, in the order they are asked: `retriers`, then `interceptors`.
    public let retriers: [any RequestRetrier]
    /// The observers given, in the order they are told; see ``AttemptObserver``.
    public var observers: [any AttemptObserver] { group?.roles.observers ?? [] }
    /// The gates given, in the order they are asked; see ``RetryGate``.
    public var gates: [any RetryGate] { group?.roles.gates ?? [] }

    /// The observers and gates, registered with each request; `nil` without any.
    private let group: RoleGroup?
    /// The adapters as they run: an adapter that never suspends (one made with
    /// ``RequestAdapter/modifying(_:)-(Adapter.ModifyNowHandler)``, a breaker, a registry, a budget, an interceptor
    /// made of such adapters) is called in place, every other one through `adapt`.
    private let steps: [AdaptStep]

    /// One adapter of the chain, as it runs: its closure to call in place, or the adapter to call through `adapt`.
    /// A class, so that running the chain retains each step instead of copying an enum with an existential payload
    /// (an outlined copy per step and request, cold between two round trips).
    private final class AdaptStep: Sendable {
        /// What adapts in place, for a part that never suspends (``AdaptsInPlace``).
        let now: Adapter.ModifyNowHandler?
        let adapter: any RequestAdapter

        init(_ adapter: any RequestAdapter) {
            self.now = (adapter as? any AdaptsInPlace)?.adaptInPlace
            self.adapter = adapter
        }
    }

    /// Creates an interceptor from adapters, retriers, other interceptors, observers and gates.
    ///
    /// - Parameters:
    ///   - adapters: Adapters, run first, in order; none by default.
    ///   - retriers: Retriers, asked first, in order; none by default.
    ///   - interceptors: Interceptors whose adapters run after `adapters` and whose retriers are asked after
    ///     `retriers`, in order; none by default.
    ///   - observers: Observers of every attempt and request this interceptor adapts; none by default.
    ///   - gates: Gates that may deny every retry of the requests this interceptor adapts; none by default. (A
    ///     ``RetryBudget`` goes in `adapters`, where it registers itself.)
    public init(
        adapters: [any RequestAdapter] = [], retriers: [any RequestRetrier] = [],
        interceptors: [any RequestInterceptor] = [], observers: [any AttemptObserver] = [],
        gates: [any RetryGate] = []
    ) {
        self.adapters = adapters + interceptors.map { $0 as any RequestAdapter }
        // A look at each adapter's type (`AdaptsInPlace`): it changes how the same code is called, never what runs.
        self.steps = self.adapters.map(AdaptStep.init)
        self.retriers = retriers + interceptors.map { $0 as any RequestRetrier }
        let roles = ChainRoles(observers: observers, gates: gates)
        self.group = roles.isEmpty ? nil : RoleGroup(roles)
    }

    /// Creates an interceptor from one adapter and one retrier.
    public init(adapter: any RequestAdapter, retrier: any RequestRetrier) {
        self.init(adapters: [adapter], retriers: [retrier])
    }

    /// Creates an interceptor from an adapter closure and a retrier closure.
    public init(adaptHandler: @escaping AdaptHandler, retryHandler: @escaping RetryHandler) {
        self.init(adapters: [Adapter(adaptHandler)], retriers: [Retrier(retryHandler)])
    }

    /// Registers the observers and gates, then runs the adapters in order, each on the previous one's output; the first
    /// error thrown stops the chain.
    public func adapt(_ request: consuming URLRequest, context: RequestContext) async throws -> URLRequest {
        if let group { context.register(group) }
        var request = request
        for step in steps {
            if let modify = step.now {
                try modify(&request, context)
            } else {
                request = try await step.adapter.adapt(consume request, context: context)
            }
        }
        return request
    }

    /// Whether the interceptor registers observers or gates with each request it adapts or is asked about.
    var registersRoles: Bool { group != nil }

    /// Does what ``adapt(_:context:)`` does, in place, when every adapter adapts in place; `nil` otherwise.
    var adaptInPlace: Adapter.ModifyNowHandler? {
        guard steps.allSatisfy({ $0.now != nil }) else { return nil }
        // The steps' closures are called where they are stored, in place (kept in an array of their own, each call would
        // go through a thunk; bound to a local, each would be copied first).
        return { [group, steps] request, context in
            if let group { context.register(group) }
            for index in steps.indices { try steps[index].now?(&request, context) }
        }
    }

    /// Registers the observers and gates, then asks the retriers in order and returns the first answer that does not
    /// pass on (``RetryResult/passesOn``); when every retrier passes on, ``RetryResult/doNotRetry``, or the first
    /// ``RetryResult/doNotRetryBecause(_:)`` given.
    public func retry(_ request: RetryRequest, dueTo error: ReboundError) async -> RetryResult {
        if let group { request.context.register(group) }
        var declined = RetryResult.doNotRetry
        for retrier in retriers {
            let result = await retrier.retry(request, dueTo: error)
            guard result.passesOn else { return result }
            declined = declined.then(result)
        }
        return declined
    }
}

// How a chain joins its retriers' answers: the session's driver (the registered retriers, then the chain's) and a
// composite `Interceptor` each ask in order and join what passes on the same way.
extension RetryResult {
    /// The answer of a chain that asked this answer's retrier first and then, as this answer passes on, the next one:
    /// `next`, unless both pass on and this answer gave a reason, which then stays (the first reason given wins).
    func then(_ next: RetryResult) -> RetryResult {
        if case .doNotRetryBecause = self, next.passesOn { return self }
        return next
    }
}
