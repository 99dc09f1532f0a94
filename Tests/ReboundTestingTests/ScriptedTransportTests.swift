import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

private let url = URL(string: "https://example.com/a")!

@Suite("ScriptedTransport", .timeLimit(.minutes(5)))
struct ScriptedTransportTests {
    @Test func answersStepsInOrderAndRecordsRequests() async throws {
        let transport = ScriptedTransport([
            .response(status: 201, headers: ["Retry-After": "3"], body: "made"), .urlError(.timedOut),
        ])

        let (data, response) = try await transport.send(URLRequest(url: url, method: .post))
        await #expect(throws: URLError(.timedOut)) { try await transport.send(URLRequest(url: url)) }

        #expect(response.statusCode == 201)
        #expect(response.value(forHTTPHeaderField: "Retry-After") == "3")
        #expect(response.url == url)
        #expect(String(decoding: data, as: UTF8.self) == "made")
        #expect(transport.requests.map(\.method) == [.post, .get])
        #expect(transport.requestCount == 2)
    }

    @Test func failsWithAClearErrorWhenTheScriptRunsOut() async throws {
        let transport = ScriptedTransport([.status(200)])
        _ = try await transport.send(URLRequest(url: url))

        let error = try await #require(throws: ScriptedTransport.Exhausted.self) {
            try await transport.send(URLRequest(url: url))
        }

        #expect(error.requestNumber == 2)
        #expect(error.description == "ScriptedTransport has no step for request #2 (GET https://example.com/a)")
    }

    @Test func enqueuedStepsAreAnsweredAfterTheFirst() async throws {
        let transport = ScriptedTransport([.status(500)])
        transport.enqueue(.status(201), .status(202))

        var statuses: [Int] = []
        for _ in 0..<3 { statuses.append(try await transport.send(URLRequest(url: url)).1.statusCode) }

        #expect(statuses == [500, 201, 202])
    }

    @Test func handlerPicksTheStepFromTheRequestAndItsNumber() async throws {
        let transport = ScriptedTransport { request, number in
            .response(status: 200, body: "\(request.method) #\(number)")
        }

        let first = try await transport.send(URLRequest(url: url, method: .put))
        let second = try await transport.send(URLRequest(url: url))

        #expect(String(decoding: first.0, as: UTF8.self) == "PUT #1")
        #expect(String(decoding: second.0, as: UTF8.self) == "GET #2")
    }

    @Test func delayedStepsSleepOnTheGivenClock() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport([.status(200).delayed(by: .seconds(2))], clock: clock)

        let task = Task { try await transport.send(URLRequest(url: url)) }
        try await clock.waitForSleepers(1)
        clock.advance(by: .seconds(2))
        let (_, response) = try await task.value

        #expect(response.statusCode == 200)
        #expect(clock.sleeps == [.seconds(2)])
    }

    @Test func hangLastsUntilCancelled() async throws {
        let transport = ScriptedTransport([.hang])

        let task = Task { try await transport.send(URLRequest(url: url)) }
        try await transport.waitForRequests(1)
        task.cancel()

        await #expect(throws: CancellationError.self) { try await task.value }
    }
}
