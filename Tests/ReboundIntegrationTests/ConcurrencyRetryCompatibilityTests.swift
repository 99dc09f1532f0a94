import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// The examples of swift-concurrency-retry's README (ph1ps/swift-concurrency-retry), as written there with only
// `import Retry` changed to `import Rebound`: Docs/RetrySafety.md says switching is a change of import, and these
// keep it true. Each runs against a loopback server.

/// README, "Customization 1": the defaults.
private func customization1(_ url: URL) async throws -> (Data, URLResponse) {
    let (data, response) = try await retry {
        try await URLSession.shared.data(from: url)
    }
    return (data, response)
}

/// README, "Customization 2": five attempts, 2 s apart.
private func customization2(_ url: URL) async throws -> (Data, URLResponse) {
    let (data, response) = try await retry(maxAttempts: 5) {
        try await URLSession.shared.data(from: url)
    } strategy: { _ in
        return .backoff(.constant(.seconds(2)))
    }
    return (data, response)
}

/// README, "Customization 3": the strategy chosen by the error, with the server's retry-after.
private struct TooManyRequests: Error {
    let retryAfter: Double
}

private func customization3(_ url: URL) async throws -> (Data, URLResponse) {
    let (data, response) = try await retry {
        let (data, response) = try await URLSession.shared.data(from: url)

        if let response = response as? HTTPURLResponse,
            let retryAfter = response.value(forHTTPHeaderField: "Retry-After").flatMap(Double.init),
            response.statusCode == 429
        {
            throw TooManyRequests(retryAfter: retryAfter)
        }

        return (data, response)
    } strategy: { error in
        if let error = error as? TooManyRequests {
            return .backoff(.constant(.seconds(error.retryAfter)))
        } else {
            return .stop
        }
    }
    return (data, response)
}

/// README, "Details": the default strategy, spelled out as the signature writes it.
private func defaultStrategySpelledOut(_ url: URL) async throws -> (Data, URLResponse) {
    let (data, response) = try await retry(maxAttempts: 3) {
        try await URLSession.shared.data(from: url)
    } strategy: { _ in
        .backoff(.none)
    }
    return (data, response)
}

/// The README's prebuilt strategies, each where a strategy goes.
private let readmeStrategies: [RetryStrategy] = [
    .backoff(.none),
    .backoff(.constant(.seconds(2))),
    .backoff(.linear(a: .seconds(1), b: .seconds(1))),
    .backoff(.exponential(a: .seconds(1), b: 2.0)),
    .backoff(.exponential(a: .seconds(1), b: 2).min(.milliseconds(200))),
    .backoff(.exponential(a: .seconds(1), b: 2).max(.seconds(10))),
    .backoff(.exponential(a: .seconds(1), b: 2).jitter()),
    .backoff(.exponential(a: .seconds(1), b: 2).jitter(using: SystemRandomNumberGenerator())),
    .stop,
]

/// A retrier that calls the free `retry` from inside its own `retry(_:dueTo:)`, where users reach for it: qualified
/// with the module, as the compiler's fix-it says, since `retry` there names the retrier's own method.
private struct ProbingRetrier: RequestRetrier {
    let probe: URL

    func retry(_ request: RetryRequest, dueTo error: ReboundError) async -> RetryResult {
        let reachable = try? await Rebound.retry(maxAttempts: 2) {
            try await URLSession.shared.data(from: probe)
        }
        return reachable == nil || request.retryCount > 0 ? .doNotRetry : .retry
    }
}

@Suite("swift-concurrency-retry's README, with Rebound", .timeLimit(.minutes(5)))
struct ConcurrencyRetryCompatibilityTests {
    @Test func theDefaultsRetryAnErrorAtOnce() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        // A body cut short makes URLSession throw; the second answer is whole.
        server.route("/flaky", [.truncated(), .status(200, body: "ok")])

        let (data, _) = try await customization1(server.url("/flaky"))

        #expect(String(decoding: data, as: UTF8.self) == "ok")
        #expect(server.hits("/flaky") == 2)
    }

    @Test func theDefaultStrategyWrittenAsBackoffNoneRetries() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/flaky", [.truncated(), .truncated(), .status(200, body: "ok")])

        let (data, _) = try await defaultStrategySpelledOut(server.url("/flaky"))

        #expect(String(decoding: data, as: UTF8.self) == "ok")
        #expect(server.hits("/flaky") == 3)
    }

    @Test func aConstantBackoffWithFiveAttempts() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/ok", [.status(200, body: "ok")])

        let (data, _) = try await customization2(server.url("/ok"))

        #expect(String(decoding: data, as: UTF8.self) == "ok")
    }

    @Test func aStrategyChosenByTheErrorWaitsTheServersRetryAfter() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/busy", [.status(429, headers: ["Retry-After": "0.01"]), .status(200, body: "done")])

        let (data, response) = try await customization3(server.url("/busy"))

        #expect(String(decoding: data, as: UTF8.self) == "done")
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        #expect(server.hits("/busy") == 2)
    }

    @Test func everyPrebuiltStrategyOfTheReadmeIsThere() {
        let delays = readmeStrategies.map { strategy -> Duration? in
            guard case .backoff(let backoff) = strategy else { return nil }
            return backoff.delay(forRetryCount: 1)
        }

        #expect(delays[0] == .zero)
        #expect(delays[1] == .seconds(2))
        #expect(delays[2] == .seconds(2))
        #expect(delays[3] == .seconds(2))
        #expect(delays[4] == .seconds(2))
        #expect(delays[5] == .seconds(2))
        #expect(delays[6].map { $0 >= .zero && $0 < .seconds(2) } == true)
        #expect(delays[7].map { $0 >= .zero && $0 < .seconds(2) } == true)
        #expect(delays[8] == nil)
    }

    @Test func theFreeRetryIsCallableInsideARetrier() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/health", [.status(200)])
        server.route("/items", [.status(503), .status(200)])
        let session = Session(retriers: [ProbingRetrier(probe: server.url("/health"))])

        let response = try await session.send(server.url("/items"))

        #expect(response.retryCount == 1)
        #expect(server.hits("/health") == 1)
    }
}
