import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("RetryHandler", .timeLimit(.minutes(1)))
struct RetryHandlerTests {
    let fallback = URL(string: "https://fallback.example.com/items")!

    /// Critical requests get five retries on the fallback host; the others one, on the same host.
    var handler: RetryHandler {
        let fallback = fallback
        return RetryHandler { failure in
            let patience = failure.label == "critical" ? 5 : 1
            guard failure.retryCount < patience else { return .abort }
            guard failure.label == "critical" else { return .retry(after: .seconds(1)) }
            var moved = failure.originalRequest
            moved.url = fallback
            return .retry(after: .milliseconds(250), request: moved)
        }
    }

    @Test func sendsTheNextAttemptsToTheModifiedRequest() async throws {
        let log = Log()
        let transport = ScriptedTransport { request, _ in
            request.url?.host == "api.example.com" ? .status(503) : .status(200)
        }
        let session = Session(
            transport: transport,
            interceptor: Interceptor(adapters: [taggingAdapter("a", log: log)], retriers: [handler]),
            clock: ImmediateClock())

        let response = try await session.send(request(), label: "critical")

        #expect(transport.requests.map(\.url?.host) == ["api.example.com", "fallback.example.com"])
        #expect(response.request.value(forHTTPHeaderField: "X-Adapters") == "a")
        #expect(response.originalRequest.url == exampleURL)
        #expect(response.attempts.map(\.retryDelay) == [.milliseconds(250), nil])
    }

    @Test func treatsKindsOfRequestDifferently() async throws {
        let transport = ScriptedTransport { _, _ in .urlError(.cannotConnectToHost) }
        let session = Session(transport: transport, retriers: [handler], clock: ImmediateClock())

        let plain = await #expect(throws: ReboundError.self) { try await session.send(request()) }
        let critical = await #expect(throws: ReboundError.self) { try await session.send(request(), label: "critical") }

        #expect(plain?.attemptCount == 2)
        #expect(critical?.attemptCount == 6)
    }

    @Test func seesTheLastResponseOrError() async throws {
        let seen = Locked<[String]>([])
        let recorder = RetryHandler { failure in
            switch failure.last {
            case .response(let response, let data):
                seen.withLock { $0.append("\(response.statusCode) \(String(decoding: data, as: UTF8.self))") }
            case .error(let error):
                seen.withLock { $0.append("\((error as? URLError)?.code.rawValue ?? 0)") }
            }
            return failure.retryCount < 1 ? .retry(after: .zero) : .abort
        }
        let session = Session(
            transport: ScriptedTransport([.response(status: 500, body: "oops"), .urlError(.timedOut)]),
            retriers: [recorder], clock: ImmediateClock())

        _ = try? await session.send(request())

        #expect(seen.withLock { $0 } == ["500 oops", "-1001"])
    }

    @Test func retryWithRequestCarriesItsRequestAndDelay() {
        let result = RetryResult.retryWithRequest(request(), delay: .seconds(-3))
        #expect(result.retryRequired)
        #expect(result.delay == .zero)
        #expect(result.request?.url == exampleURL)
        #expect(RetryResult.retry.request == nil)
    }
}
