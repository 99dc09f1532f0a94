import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Hedging real HTTP over loopback", .timeLimit(.minutes(5)))
struct HedgingOverLoopbackTests {
    @Test(
        "A slow first attempt loses to a fast hedge: the client gets the fast answer, the server sees the slow one dropped"
    )
    func fastHedgeWins() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        // Never sent: the client drops the slow attempt first, however slow a loaded machine makes its connections and
        // its timers. The session waits as long for the slow attempt's bytes, rather than timing it out after the
        // configuration's default 60 s.
        let slow = Duration.seconds(600)
        server.route("/tail") { _, number in
            number == 1 ? .status(200, body: "slow").delayed(by: slow) : .status(200, body: "fast")
        }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 600
        let session = Session(
            transport: URLSessionHTTPTransport(session: URLSession(configuration: configuration)),
            hedging: Hedging(delay: .milliseconds(100)))

        let response = try await session.send(server.url("/tail"))

        // The fast answer, with the slow one never written (timing targets belong in benchmarks, not in tests: that
        // the slow reply was never sent is what shows that the client did not wait for it).
        // The attempts' records say why, should the hedge not win (how each ended).
        #expect(String(decoding: response.data, as: UTF8.self) == "fast", "attempts: \(response.attempts)")
        #expect(response.attempts.map(\.hedge) == [0, 1])
        #expect(response.attempts[0].wasCancelled && response.attempts[1].succeeded)
        #expect(server.hits("/tail") == 2)
        // The loser's connection is closed when its task is cancelled; the server notices within its delay, and never
        // writes the slow reply.
        while server.abandoned("/tail") < 1 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(server.abandoned("/tail") == 1)
    }

    @Test("A POST without an Idempotency-Key is never hedged; with one, every hedge carries the same key")
    func onlyRepeatablePostsAreHedged() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.route("/pay") { _, number in
            number == 1 ? .status(200, body: "first").delayed(by: .milliseconds(400)) : .status(200, body: "second")
        }
        let plain = Session(hedging: Hedging(delay: .milliseconds(50)))
        let plainResponse = try await plain.send(server.url("/pay"), method: .post, body: Data("{}".utf8))
        #expect(String(decoding: plainResponse.data, as: UTF8.self) == "first")
        #expect(server.hits("/pay") == 1)

        server.route("/pay") { _, number in
            number == 1 ? .status(200, body: "first").delayed(by: .seconds(50)) : .status(200, body: "second")
        }
        let keyed = Session(adapters: [IdempotencyKeyAdapter()], hedging: Hedging(delay: .milliseconds(50)))
        let keyedResponse = try await keyed.send(server.url("/pay"), method: .post, body: Data("{}".utf8))
        #expect(String(decoding: keyedResponse.data, as: UTF8.self) == "second")
        let keys = server.requests("/pay").map { $0.value(forHeader: "Idempotency-Key") }
        #expect(keys.count == 2 && keys[0] != nil && keys[0] == keys[1])
    }
}
