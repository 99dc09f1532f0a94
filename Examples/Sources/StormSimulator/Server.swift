import Foundation
import Rebound
import ReboundTesting
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What the simulated server can do, and when it is down.
struct ServerModel: Sendable {
    /// Requests it serves at once at full speed.
    var workers = 50
    /// How long a request takes when it has a worker to itself.
    var service = Duration.milliseconds(50)
    /// The most requests it holds at once; past that it fails the excess at once.
    var maximumInFlight = 2_000
    /// When it fails everything; an empty range for never.
    var outage = Duration.seconds(10)..<Duration.seconds(20)
    /// The share of requests that take ``slowService`` instead of ``service`` (a slow replica, a pause): the slow tail.
    var slowShare = 0.0
    /// How long a request of the slow tail takes with a worker to itself.
    var slowService = Duration.milliseconds(600)
    /// When every answer takes ``slowdownFactor`` times as long to arrive (a latency shift: a slower network, a slower
    /// dependency behind the server), the server's capacity unchanged; an empty range for never.
    var slowdown = Duration.zero..<Duration.zero
    /// How many times as long every answer takes during the ``slowdown``.
    var slowdownFactor = 5.0
    /// How the server tells its clients it is overloaded; `nil` for a server that says nothing.
    var signal: Signal?
    /// The quota each client has, which the server advertises; `nil` for none.
    var quota: Quota?

    /// A quota per client, advertised in the IETF `RateLimit` and `RateLimit-Policy` fields of every answer; a request
    /// past it is answered 429 at once.
    struct Quota: Sendable {
        /// The requests a client may send per window.
        var requests = 8
        /// The window, which starts on every whole multiple of it.
        var window = Duration.seconds(1)
    }

    /// What a server that signals overload answers, as real servers do: a status with `Retry-After` (or
    /// `x-should-retry: false`), during the outage and to the requests past what it takes on at once (load shedding),
    /// instead of queueing them.
    struct Signal: Sendable {
        /// 503 Service Unavailable or 429 Too Many Requests.
        var status = 503
        /// The `Retry-After` it sends, the same to every client; `nil` for none.
        var retryAfter: Duration? = .seconds(10)
        /// The `x-should-retry` it sends; `nil` for none.
        var shouldRetry: Bool?
        /// Past this many requests in flight it sheds the excess at once with the signal.
        var shedsAbove = 100
    }

    /// Requests a second it serves at full speed.
    var capacity: Double { Double(workers) / service.seconds }
}

/// One server on the simulation's manual clock, as every client's transport.
///
/// Up to `workers` requests are served in `service`; above that they share the workers and take proportionally
/// longer (served slowly), up to `maximumInFlight`, past which a request fails with 503 after a millisecond (the excess
/// failed). A request whose client gave up (an attempt timeout) is still served to the end, as a server that does not
/// hear of it would: abandoned work keeps its place. A share of the requests, drawn from a seeded source, take the slow
/// service time instead (the slow tail). During the outage every request fails with 503 after 5 ms. It
/// counts, per 100 ms bucket, the requests that reached it and whether it was overloaded: down, failing the excess, or
/// holding more than one and a half times its workers. A server with a ``ServerModel/Signal`` answers the outage and
/// the requests past its `shedsAbove` with the signal's status and fields.
@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
final class SimulatedServer: HTTPTransport {
    static let bucket = Duration.milliseconds(100)

    struct Bucket: Sendable {
        var attempts = 0
        var overloaded = false
    }

    let model: ServerModel
    let clock: ManualClock
    /// Where the server's work runs, so that it goes on when the client gives up.
    let executor: any TaskExecutor
    private let state = Mutex(
        (inFlight: 0, buckets: [Int: Bucket](), used: [Int: (window: Int, requests: Int)](), throttled: 0))
    /// Which requests fall in the slow tail.
    private let tail = RandomSource.seeded(17)

    init(model: ServerModel, clock: ManualClock, executor: any TaskExecutor) {
        self.model = model
        self.clock = clock
        self.executor = executor
    }

    func exchange(_ request: URLRequest) async throws -> (Data, ResponseHead) {
        let now = clock.now.offset
        let bucket = Int(now / Self.bucket)
        if model.outage.contains(now) {
            state.withLock { state in
                state.buckets[bucket, default: Bucket()].attempts += 1
                state.buckets[bucket, default: Bucket()].overloaded = true
            }
            try await clock.sleep(for: .milliseconds(5))
            return answer(model.signal?.status ?? 503, to: request)
        }
        var quotaFields: [(String, String)] = []
        if let quota = model.quota {
            // The client's number is in the query (`client=N`); its window and what it used of it.
            let client = request.url?.query.flatMap { Int($0.dropFirst("client=".count)) } ?? 0
            let window = Int(now / quota.window)
            let renewedIn = quota.window * (window + 1) - now
            let seconds = Int((renewedIn / .seconds(1)).rounded(.up))
            let used = state.withLock { state -> Int in
                let previous = state.used[client].flatMap { $0.window == window ? $0.requests : nil } ?? 0
                state.used[client] = (window, previous + 1)
                if previous + 1 > quota.requests {
                    state.throttled += 1
                    state.buckets[bucket, default: Bucket()].attempts += 1
                }
                return previous + 1
            }
            quotaFields = [
                ("RateLimit-Policy", "\"client\";q=\(quota.requests);w=\(quota.window.components.seconds)"),
                ("RateLimit", "\"client\";r=\(max(quota.requests - used, 0));t=\(seconds)"),
            ]
            if used > quota.requests {
                try await clock.sleep(for: .milliseconds(1))
                return (Data(), ResponseHead(url: request.url!, statusCode: 429, headerFields: quotaFields))
            }
        }
        let inFlight = state.withLock { state -> Int? in
            state.buckets[bucket, default: Bucket()].attempts += 1
            if let signal = model.signal, state.inFlight >= signal.shedsAbove {
                state.buckets[bucket, default: Bucket()].overloaded = true
                return nil
            }
            state.inFlight += 1
            if state.inFlight * 2 > model.workers * 3 { state.buckets[bucket, default: Bucket()].overloaded = true }
            return state.inFlight
        }
        guard let inFlight else {
            // Shed: answered at once, taking no worker.
            try await clock.sleep(for: .milliseconds(1))
            return answer(model.signal?.status ?? 503, to: request)
        }
        let service = model.slowShare > 0 && tail.unitInterval() < model.slowShare ? model.slowService : model.service
        let time =
            inFlight > model.maximumInFlight
            ? Duration.milliseconds(1) : service * (Double(max(inFlight, model.workers)) / Double(model.workers))
        // The work runs in a task of its own, which the client's cancellation does not reach. During a slowdown the answer
        // then takes the rest of its longer time to arrive, holding no worker.
        let arrival = model.slowdown.contains(now) ? service * (model.slowdownFactor - 1) : .zero
        await Task(executorPreference: executor) { [self] in
            try? await clock.sleep(for: time)
            leave()
            if arrival > .zero { try? await clock.sleep(for: arrival) }
        }.value
        let status = inFlight > model.maximumInFlight ? 503 : 200
        guard status == 200, !quotaFields.isEmpty else { return answer(status, to: request) }
        return (Data(), ResponseHead(url: request.url!, statusCode: 200, headerFields: quotaFields))
    }

    /// The requests answered 429 because their client was past its quota.
    var throttled: Int { state.withLock { $0.throttled } }

    /// Frees the place of a request that was served.
    private func leave() {
        state.withLock { $0.inFlight -= 1 }
    }

    private func answer(_ status: Int, to request: URLRequest) -> (Data, ResponseHead) {
        var fields: [(String, String)] = []
        if status != 200, let signal = model.signal {
            if let retryAfter = signal.retryAfter { fields.append(("Retry-After", "\(retryAfter.components.seconds)")) }
            if let shouldRetry = signal.shouldRetry { fields.append(("x-should-retry", "\(shouldRetry)")) }
        }
        return (Data(), ResponseHead(url: request.url!, statusCode: status, headerFields: fields))
    }

    /// The requests that reached the server in `range`.
    func attempts(in range: Range<Duration>) -> Int {
        let buckets = state.withLock { $0.buckets }
        return (Int(range.lowerBound / Self.bucket)..<Int(range.upperBound / Self.bucket)).reduce(0) {
            $0 + (buckets[$1]?.attempts ?? 0)
        }
    }

    /// The requests that reached the server in each bucket from the start to `end`.
    func attemptsPerBucket(until end: Duration) -> [Int] {
        let buckets = state.withLock { $0.buckets }
        return (0..<Int(end / Self.bucket)).map { buckets[$0]?.attempts ?? 0 }
    }

    /// How long after `from` the server stays out of overload for good, to `end`.
    func backToNormal(after from: Duration, end: Duration) -> Duration {
        let buckets = state.withLock { $0.buckets }
        let first = Int(from / Self.bucket)
        var normalFrom = Int(end / Self.bucket)
        for index in (first..<Int(end / Self.bucket)).reversed() {
            guard buckets[index]?.overloaded != true else { break }
            normalFrom = index
        }
        return Self.bucket * normalFrom - from
    }
}

extension Duration {
    /// The duration in seconds.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

/// Several servers at their own hosts (`server0.example`, `server1.example`, …), as one transport: each request goes to
/// the server its host names.
@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
final class SimulatedEndpoints: HTTPTransport {
    let servers: [SimulatedServer]

    init(_ servers: [SimulatedServer]) {
        self.servers = servers
    }

    func exchange(_ request: URLRequest) async throws -> (Data, ResponseHead) {
        let host = request.url?.host ?? ""
        let index = Int(host.dropFirst("server".count).prefix { $0.isNumber }) ?? 0
        return try await servers[min(index, servers.count - 1)].exchange(request)
    }
}
