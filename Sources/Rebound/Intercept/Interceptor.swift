import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Adapters and retriers from several places, run as one interceptor.
///
/// The rules, which the session follows too when it runs its own interceptor and then the request's:
/// - **Adapters run in order**, each receiving the previous one's output. The first that throws stops the chain;
///   its error fails the attempt and is offered to the retriers like any other failure.
/// - **Every attempt re-runs the whole adapter chain** on the request as the caller gave it, so adapters never see
///   their own output from an earlier attempt.
/// - **Retriers are asked in order**, exactly once per failed attempt. ``RetryResult/doNotRetry`` passes on to the
///   next; any other answer wins and the retriers after it are not asked. When all pass, the answer is
///   ``RetryResult/doNotRetry``.
/// - Interceptors given with `interceptors:` adapt after `adapters` and retry after `retriers`, in the order given.
/// - **An interceptor plays both roles wherever it is listed.** One given in `adapters:` (a `LoggingRetrier`, an
///   `AuthenticationInterceptor`, a nested `Interceptor`) is also asked to retry, after `retriers`; one given in
///   `retriers:` also adapts, after `adapters`. A class instance listed in both is called once in each role.
/// - Every part that is an ``AttemptObserver`` is told the outcome of each attempt, every part that is a
///   ``ResponseValidator`` validates each response the validator in effect accepted, and every ``RetryGate`` may deny
///   a retry, in the order
///   adapters, retriers, interceptors, observers; a class instance that appears more than once is called once.
///
/// An `Interceptor` is immutable and safe to share between sessions and tasks.
///
/// ```swift
/// let interceptor = Interceptor(
///     adapters: [.adapter { request, _ in request }],
///     retriers: [RetryPolicy()]
/// )
/// ```
public struct Interceptor: RequestInterceptor {
    /// The adapters, in the order they run.
    public let adapters: [any RequestAdapter]
    /// The retriers, in the order they are asked.
    public let retriers: [any RequestRetrier]
    /// The parts that observe attempt outcomes, in the order they are told; see ``AttemptObserver``.
    public var observers: [any AttemptObserver] { roles.observers }
    /// The parts that validate responses the validator in effect accepted, in the order they run; see
    /// ``ResponseValidator``.
    public var validators: [any ResponseValidator] { roles.validators }
    /// The parts that may deny a retry, in the order they are asked; see ``RetryGate``.
    public var gates: [any RetryGate] { roles.gates }

    let roles: ChainRoles

    /// Creates an interceptor from adapters, retriers, other interceptors, observers and gates.
    ///
    /// - Parameters:
    ///   - adapters: Adapters, run first, in order; none by default.
    ///   - retriers: Retriers, asked first, in order; none by default.
    ///   - interceptors: Interceptors whose adapters run after `adapters` and whose retriers are asked after
    ///     `retriers`, in order; none by default.
    ///   - observers: Observers that only watch outcomes, told after those found among the other parts; none by
    ///     default.
    ///   - gates: Gates that only admit or deny retries, asked after those found among the other parts; none by
    ///     default. (A ``RetryBudget`` goes in `adapters`, which keeps it working inside any wrapper.)
    public init(
        adapters: [any RequestAdapter] = [], retriers: [any RequestRetrier] = [],
        interceptors: [any RequestInterceptor] = [], observers: [any AttemptObserver] = [],
        gates: [any RetryGate] = []
    ) {
        // An interceptor listed as an adapter or a retrier plays its other role too, so that no placement silently
        // drops half of it (a logger in `retriers:` wrapping a breaker must still adapt, or the breaker never admits).
        let adaptingRetriers = Self.interceptors(in: retriers, notIn: adapters)
        let retryingAdapters = Self.interceptors(in: adapters, notIn: retriers)
        self.adapters =
            adapters + adaptingRetriers.map { $0 as any RequestAdapter }
            + interceptors.map { $0 as any RequestAdapter }
        self.retriers =
            retriers + retryingAdapters.map { $0 as any RequestRetrier }
            + interceptors.map { $0 as any RequestRetrier }
        let parts: [any Sendable] =
            adapters.map { $0 as any Sendable } + retriers.map { $0 as any Sendable }
            + interceptors.map { $0 as any Sendable } + observers.map { $0 as any Sendable }
            + gates.map { $0 as any Sendable }
        roles = ChainRoles(collecting: parts)
    }

    /// The parts of `parts` that are interceptors, except class instances that are also in `others`.
    private static func interceptors(in parts: [any Sendable], notIn others: [any Sendable]) -> [any RequestInterceptor]
    {
        let found = parts.compactMap { $0 as? any RequestInterceptor }
        guard !found.isEmpty else { return [] }
        let listed = Set(others.compactMap { type(of: $0) is AnyClass ? ObjectIdentifier($0 as AnyObject) : nil })
        return found.filter { type(of: $0) is AnyClass ? !listed.contains(ObjectIdentifier($0 as AnyObject)) : true }
    }

    /// Creates an interceptor from one adapter and one retrier.
    public init(adapter: any RequestAdapter, retrier: any RequestRetrier) {
        self.init(adapters: [adapter], retriers: [retrier])
    }

    /// Creates an interceptor from an adapter closure and a retrier closure.
    public init(adaptHandler: @escaping AdaptHandler, retryHandler: @escaping RetryHandler) {
        self.init(adapters: [Adapter(adaptHandler)], retriers: [Retrier(retryHandler)])
    }

    /// Runs the adapters in order, each on the previous one's output; the first error thrown stops the chain.
    public func adapt(_ request: consuming URLRequest, context: RequestContext) async throws -> URLRequest {
        var request = request
        for adapter in adapters {
            request = try await adapter.adapt(consume request, context: context)
        }
        return request
    }

    /// Asks the retriers in order and returns the first answer that is not ``RetryResult/doNotRetry``.
    public func retry(_ request: RetryRequest, dueTo error: ReboundError) async -> RetryResult {
        for retrier in retriers {
            let result = await retrier.retry(request, dueTo: error)
            if case .doNotRetry = result { continue }
            return result
        }
        return .doNotRetry
    }
}

extension Interceptor: RoleContainer {}
