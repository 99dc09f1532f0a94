import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A thread-safe log that interceptors in tests append to, to check what ran and in which order.
final class Log: Sendable {
    private let entries = Locked<[String]>([])

    func append(_ entry: String) {
        entries.withLock { $0.append(entry) }
    }

    var all: [String] { entries.withLock { $0 } }
}

let exampleURL = URL(string: "https://api.example.com/items")!

func request(_ method: HTTPMethod = .get, _ url: URL = exampleURL) -> URLRequest {
    URLRequest(url: url, method: method)
}

/// An adapter that logs its name and the attempt, and adds its name to the `X-Adapters` header.
func taggingAdapter(_ name: String, log: Log) -> Adapter {
    Adapter { request, context in
        log.append("adapt \(name) #\(context.attempt)")
        var request = request
        let previous = request.value(forHTTPHeaderField: "X-Adapters").map { $0 + "," } ?? ""
        request.setValue(previous + name, forHTTPHeaderField: "X-Adapters")
        return request
    }
}

/// An adapter that sends every request to `url`, whichever host it names: a later adapter that rewrites the host.
func movingAdapter(to url: String = "https://real.example.com/items") -> Adapter {
    Adapter { request, _ in
        var moved = request
        moved.url = URL(string: url)
        return moved
    }
}

/// A retrier that logs its name and answers `result`.
func loggingRetrier(_ name: String, log: Log, answer result: RetryResult) -> Retrier {
    Retrier { request, _ in
        log.append("retry \(name) #\(request.retryCount)")
        return result
    }
}

/// A retrier that retries at once up to `limit` times, whatever the failure.
func retryAnything(limit: Int, delay: Duration = .zero) -> Retrier {
    Retrier { request, _ in request.retryCount < limit ? .retryWithDelay(delay) : .doNotRetry }
}

struct TestError: Error, Equatable {
    let name: String
    init(_ name: String) { self.name = name }
}

/// Checks that the process of an exit test wrote `message` to its standard error, as a trap does.
func expectStandardError(
    of result: ExitTest.Result?, contains message: String, sourceLocation: SourceLocation = #_sourceLocation
) {
    // A missing result was already recorded by the exit test's own expectation.
    guard let result else { return }
    let standardError = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(standardError.contains(message), "standard error: \(standardError)", sourceLocation: sourceLocation)
}

/// Asks `policy` about the first failure of a request with `method` that got `status` or threw `urlError`.
func decision(
    _ policy: some RequestRetrier, method: HTTPMethod = .get, status: Int? = nil, urlError: URLError.Code? = nil,
    retryCount: Int = 0
) async -> RetryResult {
    let (retryRequest, error) = question(method: method, status: status, urlError: urlError, retryCount: retryCount)
    return await policy.retry(retryRequest, dueTo: error)
}

/// What a retrier is asked after `retryCount` retries of a request with `method`, each of whose attempts got `status`
/// with `fields` or threw `urlError`.
func question(
    method: HTTPMethod = .get, status: Int? = nil, fields: [String: String] = [:], urlError: URLError.Code? = nil,
    retryCount: Int = 0
) -> (RetryRequest, ReboundError) {
    let sent = request(method)
    let response = status.flatMap {
        HTTPURLResponse(url: exampleURL, statusCode: $0, httpVersion: "HTTP/1.1", headerFields: fields)
    }
    let reason: ReboundError.Reason =
        if let urlError { .transportFailed(error: URLError(urlError)) } else { .unacceptableStatusCode(status ?? 0) }
    let attempts = (0...retryCount).map {
        Attempt(number: $0 + 1, request: sent, response: response, failure: reason, duration: .zero)
    }
    let retryRequest = RetryRequest(
        originalRequest: sent, lastRequest: sent, response: response, data: Data(), attempts: attempts)
    let error = ReboundError(
        reason: reason, originalRequest: sent, lastRequest: sent, response: response, attempts: attempts)
    return (retryRequest, error)
}

/// Holds callers until it is opened, ignoring their cancellation: work that does not stop when asked, or a barrier a
/// test lifts once everything is in place.
actor Gate {
    private var isOpen = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func wait() async {
        if isOpen { return }
        await withCheckedContinuation { waiting.append($0) }
    }

    func open() {
        isOpen = true
        for waiter in waiting { waiter.resume() }
        waiting = []
    }
}

extension Locked where State == Int {
    /// Adds one to the count and returns the new count: the number of this call, counting from 1.
    func increment() -> Int {
        withLock { count -> Int in
            count += 1
            return count
        }
    }
}

/// Forwards `adapt`, the only requirement of `RequestAdapter`: a wrapper written as a user would, which must keep
/// every role the wrapped part registers through the context.
struct ForwardingAdapter: RequestAdapter {
    let wrapped: any RequestAdapter
    func adapt(_ request: consuming URLRequest, context: RequestContext) async throws -> URLRequest {
        try await wrapped.adapt(request, context: context)
    }
}

/// Forwards both requirements of `RequestInterceptor`, and nothing else: a wrapper written as a user would.
struct ForwardingInterceptor: RequestInterceptor {
    let wrapped: any RequestInterceptor
    func adapt(_ request: consuming URLRequest, context: RequestContext) async throws -> URLRequest {
        try await wrapped.adapt(request, context: context)
    }
    func retry(_ request: RetryRequest, dueTo error: ReboundError) async -> RetryResult {
        await wrapped.retry(request, dueTo: error)
    }
}

/// Lets other tasks run while `condition` holds, checking it between turns.
///
/// - Throws: `CancellationError` when the task is cancelled first (a test past its time limit), so that a wait that
///   never ends fails its test instead of holding the run.
func waitWhile(_ condition: () -> Bool) async throws {
    while condition() {
        try Task.checkCancellation()
        await Task.yield()
    }
}

/// Suspends until `clock` has been asked for a sleep of `duration` (a backoff, say, beside a deadline's timer).
func waitForSleep(of duration: Duration, on clock: ManualClock) async throws {
    while true {
        // The count first: a sleep asked for after it is read wakes the wait below.
        let asked = clock.sleeps.count
        if clock.sleeps.contains(duration) { return }
        try await clock.waitForSleeps(asked + 1)
    }
}
