import Foundation
import ReboundTesting
import Testing

@testable import Rebound

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A hedged round's transitions, on plain values: each report is fed by hand with the time it comes at, and each step
/// it returns is read; nothing is sent, slept or awaited, and no part is asked (the tests say what the parts answered).
@Suite("HedgeRound")
struct HedgeRoundTests {
    /// A round of a GET under `hedging`, the request's first, with `delay` (the settings' by default) and `deadline`
    /// (none by default); its chain is `policy`, by default one that honours a `Retry-After` up to 60 s.
    func round(
        _ hedging: Hedging = Hedging(delay: .milliseconds(50)), delay: Duration?? = nil, deadline: Duration? = nil,
        policy: RetryPolicy = RetryPolicy(), learnsDelay: Bool = false
    ) -> HedgeRound {
        let session = Session(transport: ScriptedTransport([]), retriers: [policy], clock: ManualClock())
        let plan = RequestPlan(
            session: session, original: .request(request()), deadline: deadline, attemptTimeout: nil,
            hedging: hedging)
        let start = RequestMachine.RoundStart(request(), hedging: hedging, of: RequestMachine(plan, now: .zero))
        return HedgeRound(plan: plan, atStart: start, delay: learnsDelay ? .learned : .fixed(delay ?? hedging.delay))
    }

    func status(_ code: Int, headers: [(String, String)] = []) -> AttemptResult {
        let head = ResponseHead(url: exampleURL, statusCode: code, headerFields: headers)
        let kind: AttemptResult.Kind =
            (200..<300).contains(code) ? .success : .failure(.unacceptableStatusCode(code))
        return AttemptResult(kind, sent: request(), response: head, data: Data("body \(code)".utf8))
    }

    /// A hedge a part refused before it was sent (no room in a limiter, say): never retried, no response.
    struct NoRoom: NonRetryableError {}
    let refusedBeforeSending = AttemptResult(.failure(.adaptationFailed(error: NoRoom())))

    /// A round under `policy` whose first attempt was sent as `sent` at 0 s and whose hedge, attempt 2, started at
    /// 50 ms and was sent as `sent` then.
    func roundWithAHedgeSent(policy: RetryPolicy = RetryPolicy(), sent: URLRequest = request()) -> HedgeRound {
        var round = round(policy: policy)
        _ = round.start(at: .zero)
        _ = round.handle(.sent(number: 1, request: sent), now: .zero)
        _ = round.handle(.tick(at: .milliseconds(50)), now: .milliseconds(50))
        _ = round.start(at: .milliseconds(50))
        _ = round.handle(.sent(number: 2, request: sent), now: .milliseconds(50))
        return round
    }

    @Test func theHedgeDelayCountsFromWhenTheNewestAttemptWasSent() throws {
        var round = round()
        let first = round.start(at: .zero)
        #expect(first.number == 1 && first.attempt.hedge == 0 && first.attempt.base.url == exampleURL)
        #expect(round.due == .afterSend && round.nextHedge(now: .zero) == nil)
        // Sent at 20 ms, after waiting on the client: the delay counts from then.
        #expect(isGoOn(round.handle(.sent(number: 1, request: request()), now: .milliseconds(20))))
        #expect(round.due == .at(.milliseconds(70)) && round.nextHedge(now: .milliseconds(20)) == nil)
        _ = round.handle(.tick(at: .milliseconds(70)), now: .milliseconds(70))
        let hedge = try #require(round.nextHedge(now: .milliseconds(70)))
        #expect(hedge.number == 2 && hedge.judged.url == exampleURL && hedge.retrying == nil)
        let second = round.start(at: .milliseconds(70))
        #expect(second.number == 2 && second.attempt.hedge == 1 && second.attempt.start == .milliseconds(70))
        // No hedge before the new one was sent.
        #expect(round.due == .afterSend && round.nextHedge(now: .milliseconds(70)) == nil)
    }

    @Test func aLearnedDelayIsAskedForAsTheFirstAttemptIsSentAndCountsFromThen() {
        var round = round(learnsDelay: true)
        _ = round.start(at: .zero)
        #expect(!round.stopped && round.delay == nil && round.nextHedge(now: .zero) == nil)
        var keyed = request()
        keyed.setValue("key-1", forHTTPHeaderField: "Idempotency-Key")
        guard case .learnDelay(let sent) = round.handle(.sent(number: 1, request: keyed), now: .milliseconds(20)) else {
            Issue.record("the first attempt's handoff asks for the learned delay")
            return
        }
        // The request as the adapters sent it, for the driver to judge.
        #expect(sent.value(forHTTPHeaderField: "Idempotency-Key") == "key-1")
        round.delayLearned(.milliseconds(30), now: .milliseconds(20))
        #expect(round.due == .at(.milliseconds(50)) && round.nextHedge(now: .milliseconds(20)) == nil)
        _ = round.handle(.tick(at: .milliseconds(50)), now: .milliseconds(50))
        #expect(round.nextHedge(now: .milliseconds(50))?.number == 2)
        // The hedge's handoff asks nothing more: the delay is the round's.
        _ = round.start(at: .milliseconds(50))
        #expect(isGoOn(round.handle(.sent(number: 2, request: keyed), now: .milliseconds(50))))
        #expect(round.due == .at(.milliseconds(80)))
    }

    @Test func aRoundTheLearnerGivesNoDelaySendsNoHedge() {
        var round = round(learnsDelay: true)
        _ = round.start(at: .zero)
        _ = round.handle(.sent(number: 1, request: request()), now: .zero)
        round.delayLearned(nil, now: .zero)
        #expect(round.stopped && round.nextHedge(now: .seconds(10)) == nil)
    }

    @Test func aTickOfATimerReplacedSinceIsDropped() {
        var round = round()
        _ = round.start(at: .zero)
        _ = round.handle(.sent(number: 1, request: request()), now: .zero)
        round.hedgeNotStarted(heldUntil: .seconds(3))
        _ = round.handle(.tick(at: .milliseconds(50)), now: .milliseconds(50))
        #expect(round.due == .at(.seconds(3)) && round.nextHedge(now: .milliseconds(50)) == nil)
        _ = round.handle(.tick(at: .seconds(3)), now: .seconds(3))
        #expect(round.due == .now && round.nextHedge(now: .seconds(3)) != nil)
    }

    @Test func noHedgeIsDueOnceTheDeadlineCame() {
        var round = round(deadline: .milliseconds(100))
        _ = round.start(at: .zero)
        _ = round.handle(.sent(number: 1, request: request()), now: .zero)
        _ = round.handle(.tick(at: .milliseconds(50)), now: .milliseconds(99))
        #expect(round.nextHedge(now: .milliseconds(99))?.number == 2)
        #expect(round.nextHedge(now: .milliseconds(100)) == nil)
    }

    @Test func aRoundWithNoDelaySendsNoHedgeAndOneWithZeroHedgesOnceTheFirstIsSent() {
        var none = round(delay: .some(nil))
        _ = none.start(at: .zero)
        _ = none.handle(.sent(number: 1, request: request()), now: .zero)
        #expect(none.stopped && none.nextHedge(now: .zero) == nil)
        var atOnce = round(Hedging(delay: .zero))
        _ = atOnce.start(at: .zero)
        #expect(atOnce.due == .now && atOnce.nextHedge(now: .zero) == nil)
        _ = atOnce.handle(.sent(number: 1, request: request()), now: .zero)
        #expect(atOnce.nextHedge(now: .zero)?.number == 2)
    }

    @Test func aSuccessEndsTheRoundUnrecordedAndTheLosersAreRecordedBeforeIt() throws {
        var round = roundWithAHedgeSent()
        guard case .end(let ending) = round.handle(.finished(number: 2, result: status(200)), now: .milliseconds(90))
        else {
            Issue.record("a success ends the round")
            return
        }
        let sent = Handoff(request: request(), at: .zero)
        let (result, losers) = round.end(with: ending, handoffs: [1: sent], now: .milliseconds(90))
        #expect(result.records.map(\.attempt.number) == [1, 2])
        #expect(result.records.map(\.attempt.hedge) == [0, 1])
        // The first attempt, cancelled, had handed its request over: its record says it was sent.
        #expect(result.records[0].attempt.failure == nil && result.records[0].attempt.timeOnWire != nil)
        #expect(losers.map(\.attempt) == [1] && losers[0].elapsed == .milliseconds(90))
        #expect(result.answer == nil && result.target == nil)
        guard case .success = result.result.kind else {
            Issue.record("the round goes on with the winner")
            return
        }
    }

    @Test func aFailureWhileAnotherIsInFlightIsRecordedAndPutToTheRetriers() throws {
        var round = roundWithAHedgeSent()
        let step = round.handle(.finished(number: 2, result: status(503)), now: .milliseconds(60))
        guard case .ask(2, let question, nil) = step else {
            Issue.record("the retriers are asked about attempt 2, with no limit, got \(step)")
            return
        }
        #expect(question.request.attempts.map(\.number) == [2])
        #expect(round.records.map(\.attempt.number) == [2] && round.inFlight.keys.sorted() == [1])
        // They would retry it: the request goes on with attempt 1, which was sent, and a hedge is due at once in
        // place of the retry.
        #expect(isTellGranted(round.handle(.answered(number: 2, answer: .answered(.retry)), now: .milliseconds(61))))
        #expect(round.takeGranted().map(\.number) == [2])
        let hedge = try #require(round.nextHedge(now: .milliseconds(61)))
        #expect(hedge.number == 3 && hedge.retrying?.number == 2)
    }

    @Test func aRetryGrantedWhileTheOnlyOtherAttemptIsUnsentIsToldOnceThatAttemptIsSent() {
        var round = round(Hedging(delay: .zero))
        _ = round.start(at: .zero)
        _ = round.handle(.sent(number: 1, request: request()), now: .zero)
        // The hedge starts at once, and waits in an adapter while attempt 1 fails.
        _ = round.start(at: .zero)
        _ = round.handle(.finished(number: 1, result: status(503)), now: .milliseconds(10))
        // Not told yet: the request has not gone on with an attempt that was sent (the hedge may never leave).
        #expect(isGoOn(round.handle(.answered(number: 1, answer: .answered(.retry)), now: .milliseconds(11))))
        #expect(isTellGranted(round.handle(.sent(number: 2, request: request()), now: .milliseconds(12))))
        #expect(round.takeGranted().map(\.number) == [1] && round.takeGranted().isEmpty)
    }

    @Test func theLastAttemptInFlightFailingEndsTheRound() {
        var round = round()
        _ = round.start(at: .zero)
        _ = round.handle(.sent(number: 1, request: request()), now: .zero)
        guard
            case .end(.finished(1, _, _, at: .milliseconds(30))) = round.handle(
                .finished(number: 1, result: status(503)), now: .milliseconds(30))
        else {
            Issue.record("the last attempt in flight failing ends the round")
            return
        }
        #expect(round.records.isEmpty)
    }

    @Test func aResponseNoRetrierWouldRetryEndsTheRoundWithTheirAnswer() {
        var round = roundWithAHedgeSent()
        _ = round.handle(.finished(number: 1, result: status(404)), now: .milliseconds(60))
        let step = round.handle(.answered(number: 1, answer: .answered(.doNotRetry)), now: .milliseconds(61))
        guard case .end(.decided(1, let failed, .answered(.doNotRetry))) = step else {
            Issue.record("a 404 no retrier retries ends the round, got \(step)")
            return
        }
        #expect(failed.response?.statusCode == 404)
        let (result, losers) = round.end(
            with: .decided(1, failed, answer: .answered(.doNotRetry)), handoffs: [:], now: .milliseconds(61))
        // The hedge in flight is the loser; the 404 is recorded last, as the one the request goes on with.
        #expect(result.records.map(\.attempt.number) == [2, 1] && losers.map(\.attempt) == [2])
    }

    @Test func aFailureDeclinedForTheAttemptsMadeStopsHedgingAndTheOthersGoOn() {
        var round = roundWithAHedgeSent()
        _ = round.handle(.finished(number: 2, result: status(503)), now: .milliseconds(60))
        let answer = RequestMachine.RetriersAnswer.answered(.doNotRetryBecause(.retryLimit))
        #expect(isGoOn(round.handle(.answered(number: 2, answer: answer), now: .milliseconds(61))))
        #expect(round.stopped && round.nextHedge(now: .milliseconds(61)) == nil && round.inFlight.keys.sorted() == [1])
        // Attempt 1's success wins; the declined failure is told as a loser.
        guard case .end(let ending) = round.handle(.finished(number: 1, result: status(200)), now: .milliseconds(90))
        else {
            Issue.record("the attempt in flight still wins")
            return
        }
        let (result, losers) = round.end(with: ending, handoffs: [:], now: .milliseconds(90))
        #expect(losers.map(\.attempt) == [2] && result.records.map(\.attempt.number) == [2, 1])
    }

    @Test func aRetryAfterTheRetriersHonourHoldsTheNextHedgeAtTheHostThatAskedIt() {
        var round = roundWithAHedgeSent()
        let busy = status(503, headers: [("Retry-After", "120")])
        _ = round.handle(.finished(number: 2, result: busy), now: .seconds(1))
        // Held at the longest delay the chain's retry policies honour: 60 s.
        #expect(round.quiet.until(for: request()) == .seconds(61))
        #expect(round.quiet.until(for: URLRequest(url: URL(string: "https://other.example.com/items")!)) == nil)
    }

    @Test(arguments: [false, true])
    func aServerThatAsksForNoRetryStopsTheRoundsHedgingWhereThePolicyReadsIt(reads: Bool) {
        var round = roundWithAHedgeSent(policy: RetryPolicy(retryAfter: RetryAfter(signals: reads ? .shouldRetry : [])))
        let noRetry = status(503, headers: [("x-should-retry", "false")])
        _ = round.handle(.finished(number: 2, result: noRetry), now: .seconds(1))
        #expect(round.stopped == reads)
    }

    @Test func aHedgeRefusedBeforeItWasSentIsAnsweredAtOnceAndTheRoundEndsWithTheNewestFailureSent() {
        var round = roundWithAHedgeSent()
        _ = round.handle(.finished(number: 1, result: status(503)), now: .milliseconds(60))
        #expect(isTellGranted(round.handle(.answered(number: 1, answer: .answered(.retry)), now: .milliseconds(61))))
        _ = round.takeGranted()
        _ = round.start(at: .milliseconds(61))
        // Attempt 2 fails too while hedge 3 waits in an adapter, which then refuses it.
        _ = round.handle(.finished(number: 2, result: status(503)), now: .milliseconds(62))
        let step = round.handle(.finished(number: 3, result: refusedBeforeSending), now: .milliseconds(63))
        guard case .answerAtOnce(3) = step else {
            Issue.record("a hedge refused before it was sent is answered at once, got \(step)")
            return
        }
        // Declined with no response: no new hedge starts after it, not even before its answer is read.
        #expect(round.stopped && round.inFlight.isEmpty)
        _ = round.handle(.answered(number: 3, answer: .answered(.doNotRetry)), now: .milliseconds(63))
        let last = round.handle(.answered(number: 2, answer: .answered(.retry)), now: .milliseconds(64))
        // Nothing in flight and no question open: the round ends as though the hedge had not started, with attempt 2.
        guard case .end(.decided(2, _, .answered(.retry))) = last else {
            Issue.record("the round ends with the newest failure it sent, got \(last)")
            return
        }
    }

    @Test func aRetryWithAnotherRequestMovesTheNextHedgesWithTheFieldsTheAdaptersGave() throws {
        let fallback = URLRequest(url: URL(string: "https://fallback.example.com/items")!)
        var adapted = request()
        adapted.setValue("key-1", forHTTPHeaderField: "Idempotency-Key")
        var round = roundWithAHedgeSent(sent: adapted)
        _ = round.handle(.finished(number: 2, result: status(503)), now: .milliseconds(60))
        let moved = RetryResult.retryWithRequest(fallback, delay: .zero)
        _ = round.handle(.answered(number: 2, answer: .answered(moved)), now: .milliseconds(61))
        _ = round.takeGranted()
        let hedge = try #require(round.nextHedge(now: .milliseconds(61)))
        #expect(hedge.judged.url == fallback.url)
        #expect(hedge.judged.value(forHTTPHeaderField: "Idempotency-Key") == "key-1")
        #expect(round.start(at: .milliseconds(61)).attempt.base.url == fallback.url)
        #expect(round.target?.url == fallback.url)
    }

    @Test func theRetriersQuestionCutByTheDeadlineEndsTheRound() {
        var round = roundWithAHedgeSent()
        _ = round.handle(.finished(number: 2, result: status(503)), now: .milliseconds(60))
        guard
            case .end(.decided(2, _, .tooLate)) = round.handle(.answered(number: 2, answer: .tooLate), now: .seconds(2))
        else {
            Issue.record("the deadline cutting the question ends the round")
            return
        }
    }

    @Test func reportsOfAttemptsTheRoundNoLongerKnowsAreDropped() {
        var round = roundWithAHedgeSent()
        _ = round.handle(.finished(number: 2, result: status(503)), now: .milliseconds(60))
        #expect(isGoOn(round.handle(.finished(number: 2, result: status(503)), now: .milliseconds(61))))
        #expect(isGoOn(round.handle(.answered(number: 7, answer: .answered(.retry)), now: .milliseconds(61))))
        #expect(round.records.count == 1 && round.inFlight.keys.sorted() == [1])
    }

    @Test func aHandoffOfAnAttemptTheRoundNoLongerHasIsDropped() throws {
        var round = roundWithAHedgeSent()
        _ = round.handle(.finished(number: 2, result: status(503)), now: .milliseconds(60))
        _ = round.handle(.answered(number: 2, answer: .answered(.retry)), now: .milliseconds(61))
        _ = round.takeGranted()
        let elsewhere = URLRequest(url: URL(string: "https://other.example.com/items")!)
        #expect(isGoOn(round.handle(.sent(number: 2, request: elsewhere), now: .milliseconds(62))))
        // The next hedge is still judged as the newest request the round's attempts sent.
        #expect(try #require(round.nextHedge(now: .milliseconds(62))).judged.url == exampleURL)
    }

    @Test func aCancelledRoundGoesOnWithItsNewestAttemptInFlight() {
        let round = roundWithAHedgeSent()
        let (result, losers) = round.end(with: nil, handoffs: [:], now: .milliseconds(70))
        #expect(result.records.map(\.attempt.number) == [1, 2] && losers.map(\.attempt) == [1])
        guard case .cancelled = result.result.kind else {
            Issue.record("a cancelled round ends cancelled")
            return
        }
    }

    @Test func theSettingsCapTheAttemptsInFlightAndInAll() {
        var round = round(Hedging(delay: .zero, maximumInFlight: 2, maximumAttempts: 3))
        _ = round.start(at: .zero)
        _ = round.handle(.sent(number: 1, request: request()), now: .zero)
        _ = round.start(at: .zero)
        _ = round.handle(.sent(number: 2, request: request()), now: .zero)
        // Two in flight: no third until one ends.
        #expect(round.nextHedge(now: .zero) == nil)
        _ = round.handle(.finished(number: 1, result: status(503)), now: .milliseconds(10))
        #expect(round.nextHedge(now: .milliseconds(10))?.number == 3)
        _ = round.start(at: .milliseconds(10))
        _ = round.handle(.sent(number: 3, request: request()), now: .milliseconds(10))
        // Three attempts in all: no fourth.
        _ = round.handle(.finished(number: 2, result: status(503)), now: .milliseconds(20))
        #expect(round.nextHedge(now: .milliseconds(20)) == nil)
    }

    func isGoOn(_ step: HedgeRound.Step) -> Bool {
        if case .goOn = step { true } else { false }
    }

    func isTellGranted(_ step: HedgeRound.Step) -> Bool {
        if case .tellGranted = step { true } else { false }
    }
}
