import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Everything the session hands out, as it records it: the records of a request that failed with secrets in its URL
/// (query and user-info), its headers, the response's headers and body, after a redirect.
private final class Records: AttemptObserver {
    let attempts = Locked<[AttemptOutcome]>([])
    let requests = Locked<[RequestOutcome]>([])
    let hops = Locked<[RedirectHop]>([])
    let retryRequests = Locked<[RetryRequest]>([])

    func attemptDidFinish(_ outcome: AttemptOutcome) async { attempts.withLock { $0.append(outcome) } }
    func requestDidFinish(_ outcome: RequestOutcome) async { requests.withLock { $0.append(outcome) } }
    func attemptWasRedirected(_ hop: RedirectHop) async { hops.withLock { $0.append(hop) } }
}

/// What `dump` prints, what `String(reflecting:)` gives, and every value reachable through `Mirror` as text.
private func reflections(of value: Any) -> [String] {
    var dumped = ""
    dump(value, to: &dumped)
    var texts = [dumped, String(reflecting: value), String(describing: value)]
    func walk(_ value: Any, depth: Int) {
        guard depth < 12 else { return }
        for child in Mirror(reflecting: value).children {
            texts.append(String(describing: child.value))
            walk(child.value, depth: depth + 1)
        }
    }
    walk(value, depth: 0)
    return texts
}

@Suite("Secrets under reflection")
struct ReflectionRedactionTests {
    static let secret = "SECRET-9f2c"

    /// Sends `GET https://user:SECRET@api.example.com/fail?token=SECRET` with secret headers; it is redirected once,
    /// then fails with a 503 whose headers and body carry the secret, retried once.
    private func failingRequest() async throws -> (ReboundError, Records) {
        let secret = Self.secret
        let transport = ScriptedTransport { request, _ in
            if request.url?.path == "/fail" {
                return .response(status: 302, headers: ["Location": "/moved?sig=\(secret)"])
            }
            return .response(
                status: 503, headers: ["Set-Cookie": "session=\(secret)", "X-Api-Key": secret],
                body: #"{"token": "\#(secret)"}"#)
        }
        let records = Records()
        let keep = Retrier { request, _ in
            records.retryRequests.withLock { $0.append(request) }
            return request.retryCount < 1 ? .retry : .doNotRetry
        }
        var request = URLRequest(url: URL(string: "https://user:\(secret)@api.example.com/fail?token=\(secret)")!)
        request.setValue("Bearer \(secret)", forHTTPHeaderField: "Authorization")
        request.setValue("id=\(secret)", forHTTPHeaderField: "Cookie")
        request.httpBody = Data(secret.utf8)
        let session = Session(transport: transport, retriers: [keep], observers: [records], clock: FastForwardClock())
        let error = try await #require(throws: ReboundError.self) { try await session.send(request) }
        return (error, records)
    }

    @Test("dump, Mirror and String(reflecting:) of every record show no query value, user-info, secret header or body")
    func everyRecordIsRedacted() async throws {
        let (error, records) = try await failingRequest()
        let hop = try #require(records.hops.withLock { $0.first })
        let retryRequest = try #require(records.retryRequests.withLock { $0.first })
        let attempt = try #require(records.attempts.withLock { $0.first })
        let outcome = try #require(records.requests.withLock { $0.first })
        let values: [(String, Any)] = [
            ("ReboundError", error), ("ReboundError.Reason", error.reason), ("Attempt", error.attempts[0]),
            ("RetryRequest", retryRequest), ("AttemptOutcome", attempt), ("RequestOutcome", outcome),
            ("RedirectHop", hop),
        ]
        for (name, value) in values {
            for text in reflections(of: value) {
                #expect(!text.contains(Self.secret), "\(name) reflects the secret: \(text)")
            }
        }
        // Still useful: the redacted URL, the status, the secret headers' names and the other headers' values.
        var dumped = ""
        dump(error, to: &dumped)
        #expect(dumped.contains("https://<redacted>@api.example.com/fail?token=<redacted>"))
        #expect(dumped.contains("Authorization: <redacted>"))
        #expect(dumped.contains("Set-Cookie: <redacted>"))
        #expect(dumped.contains("statusCode: 503"))
        #expect(dumped.contains("unacceptable status code 503"))
        #expect(dumped.contains("data: \(#"{"token": "\#(Self.secret)"}"#.utf8.count) bytes"))
        // The records themselves still hold the real values for code that asks.
        #expect(error.originalRequest.url?.query == "token=\(Self.secret)")
        #expect(error.response?.value(forHTTPHeaderField: "Set-Cookie") == "session=\(Self.secret)")
    }

    @Test("A successful Response reflects its request, its HTTP response and its body redacted")
    func responseIsRedacted() async throws {
        let secret = Self.secret
        let transport = ScriptedTransport([
            .response(status: 200, headers: ["Set-Cookie": "s=\(secret)", "Content-Type": "text/plain"], body: secret)
        ])
        var request = URLRequest(url: URL(string: "https://api.example.com/ok?api_key=\(secret)")!)
        request.setValue("Bearer \(secret)", forHTTPHeaderField: "Authorization")
        let response = try await Session(transport: transport).send(request)
        for text in reflections(of: response) {
            #expect(!text.contains(secret), "Response reflects the secret: \(text)")
        }
        var dumped = ""
        dump(response, to: &dumped)
        #expect(dumped.contains("Content-Type: text/plain"))
        #expect(dumped.contains("api_key=<redacted>"))
        #expect(String(decoding: response.data, as: UTF8.self) == secret)
    }

    @Test("A transport error that carries the URL is reflected by its code only inside a ReboundError")
    func foundationErrorInsideIsNotReflected() {
        let secret = Self.secret
        let url = URL(string: "https://api.example.com/x?token=\(secret)")!
        let cause = URLError(.timedOut, userInfo: [NSURLErrorFailingURLErrorKey: url])
        let error = ReboundError(reason: .transportFailed(error: cause), originalRequest: URLRequest(url: url))
        for text in reflections(of: error) {
            #expect(!text.contains(secret), "ReboundError reflects the secret: \(text)")
        }
        // The cause itself is the transport's own, reachable and unchanged.
        #expect((error.underlyingError as? URLError)?.failingURL == url)
    }
}
