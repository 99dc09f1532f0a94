import Foundation
import ReboundTesting
import Testing

@testable import Rebound

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

private let secretURL = URL(string: "https://user:pa55@api.example.com/items?token=s3cret&page=2")!

private func head(_ status: Int = 200, _ fields: [(String, String)]) -> ResponseHead {
    ResponseHead(url: exampleURL, statusCode: status, headerFields: fields.map { (name: $0.0, value: $0.1) })
}

/// A transport that answers every request with `status` and `fields`, as a transport on another HTTP client does,
/// and counts what it was asked.
private struct FieldsTransport: HTTPTransport {
    let answers: [(status: Int, fields: [(String, String)])]
    let count = Locked(0)

    func exchange(_ request: URLRequest) async throws -> (Data, ResponseHead) {
        let number = count.withLock { count in
            count += 1
            return count
        }
        let answer = answers[min(number, answers.count) - 1]
        return (Data("ok".utf8), head(answer.status, answer.fields))
    }
}

/// A transport on Foundation: it answers with a head made of an `HTTPURLResponse`.
private struct FoundationTransport: HTTPTransport {
    func exchange(_ request: URLRequest) async throws -> (Data, ResponseHead) {
        let response = HTTPURLResponse(
            url: request.url!, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: ["X-Kind": "foundation"])!
        return (Data(), ResponseHead(response))
    }
}

@Suite("ResponseHead", .timeLimit(.minutes(5)))
struct ResponseHeadTests {
    @Test func looksFieldsUpWithoutRegardToCaseAndJoinsRepeatedOnes() {
        let head = head(
            200, [("Content-Type", "text/plain"), ("Vary", "Accept"), ("X-A", "1"), ("vary", "Origin"), ("X@", "2")])
        #expect(head.value(forHTTPHeaderField: "content-type") == "text/plain")
        #expect(head.value(forHTTPHeaderField: "CONTENT-TYPE") == "text/plain")
        #expect(head.value(forHTTPHeaderField: "Vary") == "Accept, Origin")
        #expect(head.value(forHTTPHeaderField: "x-a") == "1")
        // Only letters fold: `@` is not the upper case of a backtick.
        #expect(head.value(forHTTPHeaderField: "X`") == nil)
        #expect(head.value(forHTTPHeaderField: "Content-Typ") == nil)
        #expect(head.value(forHTTPHeaderField: "Content-Types") == nil)
        #expect(head.headerFields.map(\.name) == ["Content-Type", "Vary", "X-A", "vary", "X@"])
    }

    @Test func joinsManyRepeatedFieldsInTheirOrder() {
        let values = (1...2_000).map { "v\($0)" }
        let head = head(200, values.map { ("RateLimit", $0) } + [("Other", "x")])
        #expect(head.value(forHTTPHeaderField: "ratelimit") == values.joined(separator: ", "))
        #expect(head.value(forHTTPHeaderField: "other") == "x")
    }

    @Test func buildsItsHTTPURLResponseOnceWhenAskedAndSharesItBetweenCopies() async throws {
        let head = head(503, [("Retry-After", "5"), ("Set-Cookie", "a=1"), ("Set-Cookie", "b=2")])
        let copy = head
        #expect(!head.hasHTTPURLResponse)
        let built = await withTaskGroup(of: ObjectIdentifier.self) { group in
            for _ in 0..<16 { group.addTask { ObjectIdentifier(copy.httpURLResponse) } }
            return await Set(group.reduce(into: []) { $0.append($1) })
        }
        #expect(built.count == 1)
        #expect(head.hasHTTPURLResponse)
        #expect(head.httpURLResponse === copy.httpURLResponse)
        let response = head.httpURLResponse
        #expect(response.statusCode == 503)
        #expect(response.url == exampleURL)
        #expect(response.value(forHTTPHeaderField: "retry-after") == "5")
        #expect(response.value(forHTTPHeaderField: "Set-Cookie") == "a=1, b=2")
    }

    @Test func wrapsATransportsHTTPURLResponseAsItIs() throws {
        let response = try #require(
            HTTPURLResponse(
                url: exampleURL, statusCode: 429, httpVersion: "HTTP/1.1", headerFields: ["Retry-After": "7"]))
        let head = ResponseHead(response)
        #expect(head.httpURLResponse === response)
        #expect(head.statusCode == 429)
        #expect(head.url == exampleURL)
        #expect(head.value(forHTTPHeaderField: "retry-after") == "7")
        #expect(head.headerFields.map(\.name) == ["Retry-After"])
        #expect(RetryAfter.default.delay(for: head) == .seconds(7))
    }

    @Test func aSessionBuildsNoHTTPURLResponseThatNoCodeAskedFor() async throws {
        // The realistic chain, a 503 with Retry-After retried, then a 200: validation, the policy's Retry-After, the
        // breaker, the budget and the records all read heads.
        let transport = FieldsTransport(answers: [
            (503, [("Retry-After", "2")]), (200, [("Content-Type", "text/plain")]),
        ])
        let session = Session(
            transport: transport,
            adapters: [
                CircuitBreakerRegistry(), RetryBudget(ratio: .default), IdempotencyKeyAdapter(),
                Adapter.modifying { request, _ in request.setValue("1", forHTTPHeaderField: "X-Client") },
            ],
            retriers: [RetryPolicy()], clock: FastForwardClock())
        let response = try await session.send(request(.post))
        #expect(response.attempts.count == 2)
        #expect(response.attempts[0].retryDelay == .seconds(2))
        #expect(response.statusCode == 200)
        #expect(response.value(forHTTPHeaderField: "content-type") == "text/plain")
        #expect(!response.head.hasHTTPURLResponse)
        #expect(response.attempts.allSatisfy { $0.responseHead?.hasHTTPURLResponse == false })
        // Asked for, it is there, with the fields.
        #expect(response.httpResponse.value(forHTTPHeaderField: "Content-Type") == "text/plain")
        #expect(response.attempts[0].response?.statusCode == 503)
        #expect(response.head.hasHTTPURLResponse)
    }

    @Test func validatorsAndRedirectHandlersThatReadFoundationsResponseGetOne() async throws {
        struct NeedsHeader: ResponseValidator {
            struct Missing: Error {}
            func validate(_ head: ResponseHead, data: Data, context: RequestContext) throws {
                guard head.httpURLResponse.value(forHTTPHeaderField: "X-Signed") != nil else { throw Missing() }
            }
        }
        struct StopAt303: RedirectHandler {
            func redirect(
                _ sent: URLRequest, to next: URLRequest, for head: ResponseHead, context: RequestContext
            ) async -> URLRequest? {
                head.httpURLResponse.statusCode == 303 ? nil : next
            }
        }
        let signed = Session(
            transport: FieldsTransport(answers: [(200, [("X-Signed", "yes")])]), validator: NeedsHeader())
        #expect(try await signed.send(request()).statusCode == 200)
        let unsigned = Session(transport: FieldsTransport(answers: [(200, [])]), validator: NeedsHeader())
        await #expect(throws: ReboundError.self) { try await unsigned.send(request()) }

        let closure = Session(
            transport: FieldsTransport(answers: [(200, [("X-Signed", "yes")])]),
            validator: .successfulStatusCodes.and { response, _ in
                if response.value(forHTTPHeaderField: "x-signed") != "yes" { throw NeedsHeader.Missing() }
            })
        #expect(try await closure.send(request()).statusCode == 200)

        let redirected = Session(
            transport: FieldsTransport(answers: [(303, [("Location", "/elsewhere")]), (200, [])]),
            validator: .acceptAll, redirectHandler: StopAt303())
        let response = try await redirected.send(request())
        #expect(response.statusCode == 303)
    }

    @Test func aTransportAnsweringWithFoundationsResponseKeepsIt() async throws {
        let transport = FoundationTransport()
        let session = Session(transport: transport)
        let response = try await session.send(request())
        #expect(response.value(forHTTPHeaderField: "x-kind") == "foundation")
        #expect(response.head.hasHTTPURLResponse)
        // `send` is `exchange` with the head's response.
        let (_, sent) = try await transport.send(request())
        #expect(sent.value(forHTTPHeaderField: "X-Kind") == "foundation")
    }

    @Test func theHTTPURLResponseFormsCallTheHeadForms() async throws {
        struct NeedsStatus: ResponseValidator {
            func validate(_ head: ResponseHead, data: Data, context: RequestContext) throws {
                if head.statusCode != 204 { throw UnacceptableStatusCode(head.statusCode) }
            }
        }
        struct Rewrites: RedirectHandler {
            func redirect(
                _ sent: URLRequest, to next: URLRequest, for head: ResponseHead, context: RequestContext
            ) async -> URLRequest? {
                var rewritten = next
                rewritten.setValue("\(head.statusCode)", forHTTPHeaderField: "X-Redirected-By")
                return rewritten
            }
        }
        let context = RequestContext()
        let noContent = HTTPURLResponse(url: exampleURL, statusCode: 204, httpVersion: nil, headerFields: nil)!
        let ok = HTTPURLResponse(url: exampleURL, statusCode: 200, httpVersion: nil, headerFields: nil)!
        try NeedsStatus().validate(noContent, data: Data(), context: context)
        #expect(throws: UnacceptableStatusCode(200)) { try NeedsStatus().validate(ok, data: Data(), context: context) }
        let moved = HTTPURLResponse(url: exampleURL, statusCode: 307, httpVersion: nil, headerFields: nil)!
        let next = await Rewrites().redirect(URLRequest(url: exampleURL), to: request(), for: moved, context: context)
        #expect(next?.value(forHTTPHeaderField: "X-Redirected-By") == "307")
    }

    @Test func reflectionAndDescriptionHideSecrets() {
        let head = ResponseHead(
            url: secretURL, statusCode: 401,
            headerFields: [(name: "Set-Cookie", value: "session=abc123"), (name: "Content-Type", value: "text/plain")])
        var dumped = ""
        dump(head, to: &dumped)
        for text in [dumped, String(reflecting: head), head.description] {
            #expect(!text.contains("s3cret"))
            #expect(!text.contains("pa55"))
            #expect(!text.contains("abc123"))
        }
        #expect(dumped.contains("text/plain"))
        #expect(head.description.hasPrefix("401 "))
    }
}
