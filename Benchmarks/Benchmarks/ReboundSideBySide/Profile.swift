import Foundation
import Rebound
import SideBySide
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `Benchmarks profile CONTENDER N`: N sequential requests to `/ok` through one contender, each process on its own,
/// for a profiler or for `taskset`. Prints requests per second and the client's CPU time per request.
///
/// Contenders: `plain` (URLSession), `spinN` (URLSession, then N µs of busy work per request), `session` (no
/// interceptor), `adapters`, `breaker`, `logging`, `policy`, `realistic` (section 2's chain), each on
/// `URLSessionHTTPTransport()`; `datafor` and `theirs`, a bare session on a transport that calls
/// `URLSession.data(for:)` (section 6's baseline) and on `URLSessionHTTPTransport(session:)`.
func profile(_ contender: String, count: Int) async throws {
    let url = try ChildServer.url().appendingPathComponent("ok")
    let urlSession = URLSession(configuration: plainConfiguration())
    // `datafor`: a bare Session on a data(for:) transport; `theirs`: on URLSessionHTTPTransport(session:); every other
    // contender on URLSessionHTTPTransport(), the default.
    let transport: any HTTPTransport =
        switch contender {
        case "datafor": DataForTransport(session: urlSession)
        case "theirs": URLSessionHTTPTransport(session: urlSession)
        default: URLSessionHTTPTransport()
        }
    let session = Session(transport: transport, interceptor: contenderInterceptor(named: contender))
    let spin = contender.hasPrefix("spin") ? Duration.microseconds(Int(contender.dropFirst(4)) ?? 0) : nil
    // `memory`: URLSession, then a bare Session's work on an in-memory transport: the session's code run cold.
    let memory = Session(transport: try await CannedTransport(answeringLike: URLRequest(url: url)))
    let memoryRequest = contenderRequest(to: url, for: "plain")
    @Sendable func run(_ count: Int) async throws {
        for _ in 0..<count {
            let request = contenderRequest(to: url, for: contender)
            if contender == "plain" || contender == "memory" || spin != nil {
                _ = try await urlSession.data(for: request)
                if let spin { busyWork(for: spin) }
                if contender == "memory" { _ = try await memory.send(memoryRequest) }
            } else {
                _ = try await session.send(request)
            }
        }
    }
    // On a task of the global pool, as the section 2 contenders, rather than on the main actor.
    let sample = try await Task.detached {
        try await run(256)
        return try await measure(count: count) { try await run(count) }
    }.value
    print(
        "\(contender): \(Int(sample.operationsPerSecond)) requests/s, "
            + "\(Int(sample.cpuPerOperation / 1_000)) µs client CPU/request")
}

/// `Benchmarks ab CONTENDER… ROUNDS`: the named contenders of `profile`, sequential over loopback in one process, in
/// interleaved rounds of 256 requests; prints each one's median client CPU per request and its difference from the
/// first, with the spread of the per-round differences: what a part of the chain costs end to end, to a microsecond.
/// Besides `profile`'s contenders: `registry+policy`, `adapters+policy`, `copied` (a bare session sent a copy of a
/// request that the caller keeps, with the headers set on the copy: what an adapter's first change costs), `allocN`
/// (a bare session, then N small objects that live until after the next request), `retainN` (a bare session, then N
/// retains and releases of one object all requests share), `touchN` (a bare session holding N KiB of its own across
/// the request, written before and read after), `handbreaker` (a bare session inside a breaker written by
/// hand: a lock, a failure count and an open flag), `plain2` (plain URLSession on a second `URLSession`: an A/A check),
/// `plainsame` (plain URLSession on `plain`'s own `URLSession`: the A/A check with one connection pool) and
/// `transport` (the sessions' shared transport called directly).
func compare(_ contenders: [String], rounds: Int) async throws {
    let url = try ChildServer.url().appendingPathComponent("ok")
    let urlSession = URLSession(configuration: plainConfiguration())
    let otherURLSession = URLSession(configuration: plainConfiguration())
    let transport = URLSessionHTTPTransport()
    let runs: [Contender] = contenders.map { contender in
        let session = Session(transport: transport, interceptor: contenderInterceptor(named: contender))
        @Sendable func run(_ count: Int) async throws {
            var kept: [Payload] = []
            for _ in 0..<count {
                let request = contenderRequest(to: url, for: contender)
                if contender.hasPrefix("alloc") {
                    // A bare session, then N objects that live until after the next request: what allocations made
                    // on one thread and freed on another cost end to end.
                    _ = try await session.send(request)
                    // The last request's objects are freed here, after this request's awaits, on whichever thread.
                    withExtendedLifetime(kept) {}
                    kept = (0..<(Int(contender.dropFirst(5)) ?? 0)).map { Payload(value: $0) }
                } else if contender.hasPrefix("retain") {
                    // A bare session, then N retains and releases of one object every request shares: what the
                    // reference counting of a shared object (a session, a breaker) costs when threads take turns.
                    _ = try await session.send(request)
                    let shared = Unmanaged.passUnretained(sharedObject)
                    for _ in 0..<(Int(contender.dropFirst(6)) ?? 0) {
                        _ = shared.retain()
                        shared.release()
                    }
                } else if contender.hasPrefix("touch") {
                    // A bare session that holds N KiB of its own across the request, written before it and read after:
                    // what a request's memory costs when many are in flight and their data takes turns in the caches.
                    let buffer = [UInt8](repeating: 1, count: (Int(contender.dropFirst(5)) ?? 0) * 1_024)
                    _ = try await session.send(request)
                    if buffer.reduce(0, { $0 &+ Int($1) }) == -1 { print("unreachable") }
                } else if contender == "handbreaker" {
                    // A bare session inside a breaker written by hand: what any breaker's bookkeeping costs.
                    try handBreaker.admit()
                    do {
                        _ = try await session.send(request)
                        handBreaker.record(success: true)
                    } catch {
                        handBreaker.record(success: false)
                        throw error
                    }
                } else if contender == "plain" || contender == "plainsame" {
                    // `plainsame` is `plain` under another name, on the same session: the A/A check with one
                    // connection pool, beside `plain2`'s two.
                    _ = try await urlSession.data(for: request)
                } else if contender == "plain2" {
                    // Plain URLSession on a session of its own: what two URLSession instances differ by (A/A).
                    _ = try await otherURLSession.data(for: request)
                } else if contender == "transport" {
                    // The sessions' shared transport called directly: the transport's cost without a session's.
                    _ = try await transport.send(request)
                } else if contender == "copied" {
                    // The headers set on a copy of a request kept alive: what an adapter's first change costs.
                    var copy = request
                    for (name, value) in realisticHeaders { copy.setValue(value, forHTTPHeaderField: name) }
                    _ = try await session.send(copy)
                    withExtendedLifetime(request) {}
                } else if contendersSentAURL.contains(contender) {
                    _ = try await session.send(url)
                } else {
                    _ = try await session.send(request)
                }
            }
        }
        // `REBOUND_IN_FLIGHT=N`: N requests of each contender at a time instead of one.
        if let inFlight = ProcessInfo.processInfo.environment["REBOUND_IN_FLIGHT"].flatMap(Int.init), inFlight > 1 {
            return Contender.concurrent(contender, inFlight: inFlight) { try await run(1) }
        }
        return Contender(name: contender) { count in
            try await Task.detached { try await measure(count: count) { try await run(count) } }.value
        }
    }
    for contender in runs { _ = try await contender.run(256) }
    let samples = try await interleaved(rounds: rounds, count: 256, runs)
    let first = samples[contenders[0]]!
    for name in contenders {
        let these = samples[name]!
        let differences = zip(first, these).map { ($1.cpuPerOperation - $0.cpuPerOperation) / 1_000 }
        print(
            name,
            String(
                format: "%.1f µs CPU/request, %+.1f µs (p25 %+.1f, p75 %+.1f), %.3f× the requests/s",
                these.medianCPU / 1_000,
                median(differences), percentile(differences, 25), percentile(differences, 75),
                median(zip(first, these).map { $1.operationsPerSecond / $0.operationsPerSecond })))
    }
}

/// `Benchmarks micro CONTENDER N`: N requests through a contender's chain on a transport that answers in memory with
/// a real response captured from the loopback server: what the chain itself costs with real URLs and headers.
func micro(_ contender: String, count: Int) async throws {
    let url = try ChildServer.url().appendingPathComponent("ok")
    let transport = try await CannedTransport(answeringLike: URLRequest(url: url))
    let session = Session(transport: transport, interceptor: contenderInterceptor(named: contender))
    @Sendable func run(_ count: Int) async throws {
        for _ in 0..<count {
            if contender == "plain" {
                _ = try await transport.send(contenderRequest(to: url, for: contender))
            } else {
                _ = try await session.send(contenderRequest(to: url, for: contender))
            }
        }
    }
    let sample = try await Task.detached {
        try await run(1_000)
        return try await measure(count: count) { try await run(count) }
    }.value
    print("\(contender): \(Int(sample.wallPerOperation)) ns/request")
}

/// The least a breaker does, written by hand as an app would: a lock, a count of consecutive failures, an open flag.
final class HandBreaker: Sendable {
    private let state = Mutex((failures: 0, open: false))

    func admit() throws {
        if state.withLock({ $0.open }) { throw BenchmarkError("hand-written breaker open") }
    }

    func record(success: Bool) {
        state.withLock { state in
            if success {
                state.failures = 0
            } else {
                state.failures += 1
                if state.failures >= 5 { state.open = true }
            }
        }
    }
}

private let handBreaker = HandBreaker()

/// The object every `retainN` request retains and releases.
private let sharedObject = Payload(value: 0)

/// A small heap object.
final class Payload: Sendable {
    let value: Int
    init(value: Int) { self.value = value }
}

/// Nanoseconds per call of `body`, over `count` calls.
func timePerCall(_ count: Int, _ body: () -> Void) -> Double {
    let clock = ContinuousClock()
    let start = clock.now
    for _ in 0..<count { body() }
    return (clock.now - start).nanoseconds / Double(count)
}

/// `Benchmarks pieces`: what the building blocks of the circuit breaker registry, and a `LoggingRetrier` event, cost
/// per call, hot.
func pieces() async {
    let request = requestWithRealisticHeaders(to: URL(string: "http://127.0.0.1:41234/ok")!)
    let url = request.url!
    print("ns per call, hot:")
    print("hostKey", timePerCall(200_000) { _ = CircuitBreakerRegistry.hostKey(for: request) })
    print("request.url", timePerCall(200_000) { _ = request.url })
    print("url.host", timePerCall(200_000) { _ = url.host })
    print("url.port", timePerCall(200_000) { _ = url.port })
    print("now", timePerCall(200_000) { _ = ContinuousClock.now })
    let lock = NSLock()
    print(
        "lock",
        timePerCall(200_000) {
            lock.lock(); lock.unlock()
        })
    let table: [String: Int] = ["127.0.0.1:41234": 1, "example.com": 2]
    print("table lookup", timePerCall(200_000) { _ = table["127.0.0.1:41234"] })

    // A retry decision logged by a LoggingRetrier whose sink drops it: building the event is the cost.
    let logger = LoggingRetrier(sink: { _ in })
    let response = HTTPURLResponse(url: url, statusCode: 503, httpVersion: "HTTP/1.1", headerFields: nil)!
    let attempt = Attempt(
        number: 1, request: request, response: response, failure: .unacceptableStatusCode(503),
        duration: .milliseconds(3))
    let outcome = AttemptOutcome(
        originalRequest: request, attempt: attempt, decision: .retry(after: .milliseconds(500)))
    let clock = ContinuousClock()
    let start = clock.now
    for _ in 0..<20_000 { await logger.attemptDidFinish(outcome) }
    let perEvent = (clock.now - start).nanoseconds / 20_000
    print("LoggingRetrier event", perEvent)
}

/// `Benchmarks cold CONTENDER… N`: each contender's request in memory (on a transport that answers with a real
/// response at once), timed right after a real loopback request through URLSession, so that its code and data are as
/// cold as between two round trips end to end; N iterations, the contenders interleaved in each. Prints, per
/// contender, the median time of that cold request, of the same request sent again at once (warm), and the median of
/// the per-iteration differences over the first contender.
///
/// Contenders: `direct` (the transport called directly), `session` (no interceptor), `chain` (a chain that does
/// nothing on a success), and the chains of `profile` (`adapters`, `breaker`, `logging`, `policy`, `realistic`, …)
/// and `ahc-realistic`, the AsyncHTTPClient benchmark's realistic chain; chains whose adapters set the headers are
/// sent a URL, as section 2 sends them, the others a request with the headers, made beforehand. With
/// `REBOUND_COLD_TWIN=1`, a twin of each contender sends a request first (see below).
func cold(_ contenders: [String], count: Int) async throws {
    let url = try ChildServer.url().appendingPathComponent("ok")
    let urlSession = URLSession(configuration: plainConfiguration())
    let transport = try await CannedTransport(answeringLike: URLRequest(url: url))
    let sends: [@Sendable () async throws -> Void] = contenders.map { contender in
        if contender == "direct" {
            let request = requestWithRealisticHeaders(to: url)
            return { _ = try await transport.send(request) }
        }
        let session = Session(transport: transport, interceptor: contenderInterceptor(named: contender))
        // `built`: a bare session whose request is built with the realistic headers inside the timed part, as plain
        // URLSession's is end to end: what the chains that set those headers themselves compare with.
        if contender == "built" { return { _ = try await session.send(requestWithRealisticHeaders(to: url)) } }
        if contendersSentAURL.contains(contender) {
            return { _ = try await session.send(url) }
        }
        let request = requestWithRealisticHeaders(to: url)
        return { _ = try await session.send(request) }
    }
    // `REBOUND_COLD_TWIN=1`: each timed request follows, after the round trip, one sent by a twin of its contender (a
    // session of its own, with parts of its own, to another path), which runs the same code on other objects. What
    // the twin leaves cold is the contender's own data; the rest of the cold time is code and what every instance
    // shares (Docs/Performance.md, section 2).
    let twins: [@Sendable () async throws -> Void] = contenders.map { contender in
        let session = Session(transport: transport, interceptor: contenderInterceptor(named: contender))
        let request = requestWithRealisticHeaders(to: url.appendingPathComponent("twin"))
        return { _ = try await session.send(request) }
    }
    let twin = ProcessInfo.processInfo.environment["REBOUND_COLD_TWIN"] == "1"
    let clock = ContinuousClock()
    @Sendable func nanoseconds(_ send: @Sendable () async throws -> Void) async throws -> Double {
        let start = clock.now
        try await send()
        return (clock.now - start).nanoseconds
    }
    let (cold, warm) = try await Task.detached {
        for send in sends { for _ in 0..<100 { try await send() } }
        var cold = Array(repeating: [Double](), count: sends.count)
        var warm = cold
        for _ in 0..<count {
            for (index, send) in sends.enumerated() {
                _ = try await urlSession.data(for: requestWithRealisticHeaders(to: url))
                if twin { try await twins[index]() }
                cold[index].append(try await nanoseconds(send))
                warm[index].append(try await nanoseconds(send))
            }
        }
        return (cold, warm)
    }.value
    print(
        "contender".padding(toLength: 14, withPad: " ", startingAt: 0)
            + "cold µs   warm µs   cold over \(contenders[0])")
    for (index, contender) in contenders.enumerated() {
        let over = median(zip(cold[index], cold[0]).map { $0 - $1 })
        print(
            contender.padding(toLength: 14, withPad: " ", startingAt: 0)
                + String(
                    format: "%7.2f   %7.2f   %+7.2f", median(cold[index]) / 1_000, median(warm[index]) / 1_000,
                    over / 1_000))
    }
}
