import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Every string the library produces, collected from every place it produces one: log events, observer events, what
/// retriers are handed, errors, responses.
private final class Strings: AttemptObserver {
    private let all = Locked<[String]>([])

    func add(_ strings: String...) { all.withLock { $0.append(contentsOf: strings) } }
    var collected: [String] { all.withLock { $0 } }

    func attemptDidFinish(_ outcome: AttemptOutcome) async {
        add("\(outcome)", String(reflecting: outcome), "\(outcome.attempt)", outcome.error?.description ?? "")
        add(dumped(outcome))
    }

    func requestDidFinish(_ outcome: RequestOutcome) async {
        add("\(outcome)", String(reflecting: outcome), outcome.error?.localizedDescription ?? "")
        add(dumped(outcome))
    }

    func attemptWasRedirected(_ hop: RedirectHop) async {
        add("\(hop)", String(reflecting: hop), dumped(hop))
    }

    /// Every string of an error a request ended with.
    func add(error: any Error) {
        add("\(error)", String(reflecting: error), error.localizedDescription, (error as NSError).description)
        guard let error = error as? ReboundError else { return }
        add("\(error.reason)", String(reflecting: error.reason), dumped(error))
        add(contentsOf: error.attempts.map(\.description))
        if let stop = error.retrierError { add("\(stop)") }
        if let open = error.circuitBreakerOpenError { add("\(open)") }
    }

    func add(contentsOf strings: [String]) { all.withLock { $0.append(contentsOf: strings) } }

}

/// What `dump` prints of a record: reflection, which must be as redacted as the descriptions.
private func dumped(_ value: Any) -> String {
    var text = ""
    dump(value, to: &text)
    return text
}

private struct SecretKey: AuthenticationCredential {
    var requiresRefresh: Bool { false }
}

/// Applies `Authorization: Bearer SECRET-AUTH`; its refresh fails.
private struct SecretAuthenticator: Authenticator {
    func apply(_ credential: SecretKey, to request: inout URLRequest) {
        request.setValue("Bearer SECRET-AUTH", forHTTPHeaderField: "Authorization")
    }
    func refresh(_ credential: SecretKey) async throws -> SecretKey { throw URLError(.userAuthenticationRequired) }
    func isRequest(_ request: URLRequest, authenticatedWith credential: SecretKey) -> Bool { true }
}

/// On every failure path, over real HTTP, with the secret in the query, the user-info and the `Authorization` header,
/// no string the library produces contains it.
@Suite("No secret in any string the library produces, on any failure path", .timeLimit(.minutes(5)))
struct SecretSweepOverLoopbackTests {
    enum Path: String, CaseIterable, Sendable {
        case refused, reset, timeout, clientError, serverError, deadline, budgetDenial, openBreaker
        case authenticationFailure, jsonBody, decoding, cancellation, redirect, success
    }

    @Test("The secret appears nowhere", arguments: Path.allCases)
    func sweep(path: Path) async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        let other = try LoopbackServer()
        defer { other.stop() }
        let refused = try RefusedPort()
        defer { refused.close() }
        let strings = Strings()

        var target = server.baseURL
        var routes: [LoopbackServer.Reply] = [.status(200, body: "{}")]
        var retriers: [any RequestRetrier] = [RetryPolicy(retryLimit: 1, backoff: .zero)]
        var adapters: [any RequestAdapter] = []
        var interceptor: (any RequestInterceptor)?
        var deadline: Duration?
        var timeoutInterval: TimeInterval = 30
        switch path {
        case .refused: target = refused.url()
        case .reset: routes = [.drop]
        case .timeout:
            routes = [Reply.status(200).delayed(by: .seconds(3))]
            timeoutInterval = 0.2
        case .clientError: routes = [.status(404, body: "no such item")]
        case .serverError: routes = [.status(503)]
        case .deadline:
            routes = [Reply.status(200).delayed(by: .seconds(3))]
            deadline = .milliseconds(200)
        case .budgetDenial:
            routes = [.status(503)]
            adapters = [RetryBudget(configuration: .init(initialTokens: 0, maximumTokens: 10))]
        case .openBreaker:
            let breaker = CircuitBreaker()
            breaker.forceOpen()
            adapters = [breaker]
        case .authenticationFailure:
            routes = [.status(401, headers: ["WWW-Authenticate": "Bearer"])]
            interceptor = AuthenticationInterceptor(
                authenticator: SecretAuthenticator(), credential: SecretKey(),
                hosts: ["127.0.0.1:\(server.port)"])
        case .jsonBody:
            routes = [.json(#"{"error_code": "busy"}"#)]
            adapters = [JSONBodyRetrier(values: ["busy"], retryLimit: 1, delay: .zero)]
        case .decoding: routes = [.status(200, body: "not json")]
        case .cancellation: routes = [Reply.status(200).delayed(by: .seconds(3))]
        case .redirect:
            other.route("/landed", [.status(500)])
            routes = [.status(302, headers: ["Location": other.url("/landed?token=SECRET-HOP").absoluteString])]
        case .success: break
        }
        server.route("/items", routes)
        retriers = retriers.map { retrier in
            retrier is LoggingRetrier
                ? retrier
                : LoggingRetrier(wrapping: retrier, minimumLevel: .debug, includesHeaders: true) {
                    strings.add($0.message, "\($0)", String(reflecting: $0))
                }
        }
        retriers.append(
            Retrier { request, error in
                strings.add("\(request)", String(reflecting: request), "\(error)", dumped(request))
                return .doNotRetry
            })

        var components = URLComponents(url: target, resolvingAgainstBaseURL: false)!
        components.user = "alice"
        components.password = "SECRET-PASSWORD"
        components.path = "/items"
        components.query = "token=SECRET-QUERY&page=2"
        var request = URLRequest(url: components.url!, timeoutInterval: timeoutInterval)
        request.setValue("Bearer SECRET-HEADER", forHTTPHeaderField: "Authorization")

        var transport = URLSessionHTTPTransport()
        if path == .timeout {
            let configuration = URLSessionConfiguration.ephemeral
            configuration.timeoutIntervalForRequest = timeoutInterval
            transport = URLSessionHTTPTransport(configuration: configuration)
        }
        let session = Session(
            transport: transport, adapters: adapters, retriers: retriers, interceptor: interceptor,
            observers: [strings],
            deadline: deadline, clock: ContinuousClock())
        let task = Task { () throws -> Response in
            let response = try await session.send(request)
            if path == .decoding { _ = try response.decode([String: Int].self) }
            return response
        }
        if path == .cancellation {
            try await server.waitForRequests(1)
            task.cancel()
        }
        switch await task.result {
        case .success(let response):
            #expect(path == .success)
            strings.add("\(response)", String(reflecting: response), dumped(response))
        case .failure(let error):
            #expect(path != .success)
            expect(error, endsAs: path)
            strings.add(error: error)
        }

        let collected = strings.collected
        #expect(collected.count >= 3, "too few strings to be a sweep: \(collected)")
        for string in collected {
            #expect(!string.contains("SECRET"), "\(path): \(string)")
        }
    }
}

/// Checks that the request took the failure path it was meant to.
private func expect(_ error: any Error, endsAs path: SecretSweepOverLoopbackTests.Path) {
    guard path != .cancellation else {
        #expect(error is CancellationError)
        return
    }
    guard let error = error as? ReboundError else {
        Issue.record("\(path) ended with \(type(of: error))")
        return
    }
    switch path {
    case .refused: #expect(error.urlError?.code == .cannotConnectToHost)
    case .reset, .serverError: #expect(error.attempts.count == 2)
    case .timeout: #expect(error.urlError?.code == .timedOut)
    case .clientError: #expect(error.statusCode == 404)
    case .deadline:
        guard case .deadlineExceeded = error.reason else { Issue.record("not the deadline: \(error)"); return }
    case .budgetDenial: #expect(error.retrierError is RetryBudgetExhausted)
    case .openBreaker: #expect(error.circuitBreakerOpenError != nil)
    case .authenticationFailure: #expect(error.statusCode == 401 && error.retrierError is URLError)
    case .jsonBody: #expect(error.attempts.count == 2 && error.statusCode == 200)
    case .decoding:
        guard case .decodingFailed = error.reason else { Issue.record("not decoding: \(error)"); return }
    case .redirect: #expect(error.statusCode == 500 && error.lastRequest?.url?.path == "/landed")
    case .cancellation, .success: break
    }
}

private typealias Reply = LoopbackServer.Reply
