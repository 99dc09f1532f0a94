import Foundation
import ReboundTesting
import Testing

@testable import Rebound

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The request machine's transitions, on plain values: each event is fed by hand with the time it happens at, and
/// each action it returns is read; nothing is sent, slept or awaited.
@Suite("RequestMachine")
struct RequestMachineTests {
    /// A machine for a GET with `deadline` and `attemptTimeout`, started at 0 s (the plan, which records when the
    /// deadline comes, is made at 0 s on a manual clock); its session has `gates`, by default one that the machine
    /// asks about each retry (a request with no gate given and no registrations has each retry granted without
    /// asking).
    func machine(
        deadline: Duration? = nil, attemptTimeout: Duration? = nil, hedging: Hedging? = nil,
        original: URLRequest = request(), gates: [any RetryGate] = [GrantsEveryRetry()]
    ) -> RequestMachine {
        let session = Session(
            transport: ScriptedTransport([]), retriers: [RetryPolicy()], gates: gates, clock: ManualClock())
        let plan = RequestPlan(
            session: session, original: .request(original), deadline: deadline, attemptTimeout: attemptTimeout,
            hedging: hedging)
        return RequestMachine(plan, now: .zero)
    }

    func status(_ code: Int, retryAfter: String? = nil) -> AttemptResult {
        let head = ResponseHead(
            url: exampleURL, statusCode: code, headerFields: retryAfter.map { [("Retry-After", $0)] } ?? [])
        let kind: AttemptResult.Kind =
            (200..<300).contains(code) ? .success : .failure(.unacceptableStatusCode(code))
        return AttemptResult(kind, sent: request(), response: head, data: Data("body \(code)".utf8))
    }

    /// What an action that backs off or ends the request reports of the last attempt: its record's number and body,
    /// with the decision the observers hear and the error the request ends with.
    struct Told {
        let attempt: Int
        let data: Data?
        let decision: AttemptDecision
        let error: ReboundError?
    }

    /// What an action reports before it backs off or ends the request; fails the test for any other action.
    func reported(_ action: RequestMachine.Action) throws -> Told {
        switch action {
        case .backOff(let delay, _, let report):
            return Told(attempt: report.attempt, data: report.data, decision: .retry(after: delay), error: nil)
        case .finish(let ending, _, let report?):
            let (decision, error) = ending.decision
            return Told(attempt: report.attempt, data: report.data, decision: decision, error: error)
        default: throw Unexpected(action: action)
        }
    }

    struct Unexpected: Error {
        let action: String

        init(action: RequestMachine.Action) {
            self.action = "\(action)"
        }
    }

    /// A gate that grants every retry; given one, a request keeps registrations.
    struct GrantsEveryRetry: RetryGate {
        func admitRetry(_ request: RetryRequest, dueTo error: ReboundError, after delay: Duration) -> (any Error)? {
            nil
        }
    }

    @Test(
        "A request that keeps registrations asks where its retry goes before the retriers, and the deadline's rule reads it",
        arguments: [true, false])
    func aRetryIsRoutedBeforeTheRetriersAreAsked(toAnotherHost: Bool) throws {
        var machine = machine(deadline: .seconds(5))
        _ = machine.handle(.start(first: request()), now: .zero)
        // A 503 that asks for 30 s, past the deadline.
        let failed = machine.handle(
            .attemptEnded(status(503, retryAfter: "30"), admittedByBreaker: false), now: .seconds(1))
        guard case .route(let retry) = failed else {
            Issue.record("a failure the retriers are asked about is routed first, not \(failed)")
            return
        }
        #expect(retry.attempts.count == 1)
        let elsewhere = URLRequest(url: URL(string: "https://other.example.com/items")!)
        let asked = machine.handle(.routed(destination: toAnotherHost ? elsewhere : nil), now: .seconds(2))
        guard case .askRetriers(let question, let limit) = asked else {
            Issue.record("the retriers are asked once the retry is routed, not \(asked)")
            return
        }
        #expect(question.request.leavesAnsweringHost == toAnotherHost)
        #expect(limit == .deadline(.seconds(3)))
        let next = machine.handle(.retriersAnswered(.answered(.retryWithDelay(.seconds(1)))), now: .seconds(2))
        if toAnotherHost {
            // Another host did not ask for the 30 s: the gates are asked about the retry, as going there.
            guard case .askGates(let gated, _, let delay) = next else {
                Issue.record("the retry goes to the gates, not \(next)")
                return
            }
            #expect(delay == .seconds(1) && gated.destination?.url == elsewhere.url)
        } else {
            #expect(try reported(next).error?.stopReason == .retryAfterPastDeadline)
        }
    }

    @Test func aFailureThatIsNeverRetriedIsNotRouted() throws {
        struct Refused: NonRetryableError {}
        var machine = machine()
        _ = machine.handle(.start(first: request()), now: .zero)
        let refused = AttemptResult(.failure(.adaptationFailed(error: Refused())))
        let action = machine.handle(.attemptEnded(refused, admittedByBreaker: false), now: .seconds(1))
        // Not offered to the retriers, so not routed either: the request ends, stopped by no rule of Rebound's.
        let report = try reported(action)
        #expect(report.decision == .failed && report.error?.stopReason == .notRetried)
    }

    @Test func aSuccessAtTheFirstAttemptIsReportedThenEndsTheRequestWithNothingToGiveBack() throws {
        var machine = machine()
        guard case .attempt(_, number: 1, limit: nil) = machine.handle(.start(first: request()), now: .zero) else {
            Issue.record("the first action is attempt 1 without a time limit")
            return
        }
        let action = machine.handle(.attemptEnded(status(200), admittedByBreaker: false), now: .milliseconds(40))
        let report = try reported(action)
        #expect(report.decision == .succeeded)
        #expect(report.attempt == 1)
        #expect(machine.attempts[0].duration == .milliseconds(40))
        guard case .finish(.succeeded(let result), let endsAccounts, _) = action, case .finished = machine.phase else {
            Issue.record("a reported success ends the request")
            return
        }
        #expect(result.response?.statusCode == 200)
        #expect(!endsAccounts)
        #expect(machine.outcome(of: .succeeded(result), now: .milliseconds(40)).attempts.count == 1)
    }

    @Test func aRetriedFailureAsksTheRetriersThenTheGatesThenReportsAndBacksOff() throws {
        var machine = machine(deadline: .seconds(10))
        _ = machine.handle(.start(first: request()), now: .zero)
        // The gate is handed the request's context, so the request keeps registrations: an endpoint group may have
        // registered to route the retry, and none did.
        guard case .route = machine.handle(.attemptEnded(status(503), admittedByBreaker: false), now: .seconds(1))
        else {
            Issue.record("a failure of a request that keeps registrations is routed first")
            return
        }
        guard case .askRetriers(let question, let limit) = machine.handle(.routed(destination: nil), now: .seconds(1))
        else {
            Issue.record("a failure asks the retriers")
            return
        }
        #expect(limit == .deadline(.seconds(9)))
        #expect(question.request.attempts.count == 1)
        #expect(question.error.responseHead?.statusCode == 503)

        guard
            case .askGates(let retry, _, let delay) = machine.handle(
                .retriersAnswered(.answered(.retryWithDelay(.seconds(2)))), now: .seconds(1))
        else {
            Issue.record("a retry is put to the gates")
            return
        }
        #expect(delay == .seconds(2))
        #expect(retry.retryTarget == nil)

        let backOff = machine.handle(.gatesAnswered(refusal: nil), now: .seconds(1))
        let report = try reported(backOff)
        #expect(report.decision == .retry(after: .seconds(2)))
        #expect(machine.attempts[0].retryDelay == .seconds(2))
        #expect(report.data == Data("body 503".utf8))
        guard case .backOff(.seconds(2), wait: nil, _) = backOff else {
            Issue.record("a granted retry is reported, then backs off for its delay")
            return
        }
        guard
            case .attempt(_, number: 2, limit: .deadline(.seconds(7))) = machine.handle(
                .backoffEnded(.slept), now: .seconds(3))
        else {
            Issue.record("the slept backoff starts attempt 2 within the time left")
            return
        }
        #expect(machine.attempts.map(\.number) == [1])
    }

    @Test func withoutAGateTheRetriersRetryIsReportedAndBacksOffWithoutAskingAnyone() throws {
        var machine = machine(gates: [])
        _ = machine.handle(.start(first: request()), now: .zero)
        // No registrations: no group can route the retry, so the retriers are asked at once.
        guard
            case .askRetriers(_, limit: nil) = machine.handle(
                .attemptEnded(status(503), admittedByBreaker: false), now: .seconds(1))
        else {
            Issue.record("a request that keeps no registrations asks the retriers straight away")
            return
        }
        let backOff = machine.handle(.retriersAnswered(.answered(.retryWithDelay(.seconds(2)))), now: .seconds(1))
        guard case .backOff(.seconds(2), wait: nil, _) = backOff else {
            Issue.record("with no gate, the retriers' retry backs off at once, not \(backOff)")
            return
        }
        let report = try reported(backOff)
        #expect(report.decision == .retry(after: .seconds(2)))
        #expect(machine.attempts[0].retryDelay == .seconds(2))
        guard case .attempt(_, number: 2, limit: nil) = machine.handle(.backoffEnded(.slept), now: .seconds(3)) else {
            Issue.record("the slept backoff starts attempt 2")
            return
        }
    }

    @Test func aRetryWithoutDelayIsReportedThenAttemptedOnceItsZeroBackoffEnds() throws {
        var machine = machine()
        _ = machine.handle(.start(first: request()), now: .zero)
        _ = machine.handle(.attemptEnded(status(503), admittedByBreaker: false), now: .seconds(1))
        _ = machine.handle(.retriersAnswered(.answered(.retry)), now: .seconds(1))
        guard case .backOff(.zero, _, let report) = machine.handle(.gatesAnswered(refusal: nil), now: .seconds(1))
        else {
            Issue.record("a retry without delay backs off for no time")
            return
        }
        #expect(report.attempt == 1)
        guard case .attempt(_, number: 2, limit: nil) = machine.handle(.backoffEnded(.slept), now: .seconds(1)) else {
            Issue.record("a retry without delay is attempted at once")
            return
        }
    }

    @Test func aDelayThatWouldEndAfterTheDeadlineEndsTheRequestNowWithoutAskingTheGates() throws {
        var machine = machine(deadline: .seconds(5))
        _ = machine.handle(.start(first: request()), now: .zero)
        _ = machine.handle(.attemptEnded(status(503), admittedByBreaker: false), now: .seconds(4))
        let action = machine.handle(.retriersAnswered(.answered(.retryWithDelay(.seconds(2)))), now: .seconds(4))
        let report = try reported(action)
        #expect(report.decision == .failed)
        guard case .deadlineExceeded(let deadline, let last) = report.error?.reason else {
            Issue.record("the request ends on its deadline")
            return
        }
        #expect(deadline == .seconds(5))
        guard case .unacceptableStatusCode(503) = last else {
            Issue.record("the deadline error keeps the failure before it")
            return
        }
        guard case .finish(.failed(let error), endsAccounts: true, _) = action, case .finished = machine.phase else {
            Issue.record("the reported failure ends the request")
            return
        }
        #expect(error.responseHead?.statusCode == 503)
    }

    @Test func aRetryAfterThatEndsAfterTheDeadlineEndsTheRequestWhateverDelayTheRetriersChose() throws {
        var machine = machine(deadline: .seconds(5))
        _ = machine.handle(.start(first: request()), now: .zero)
        _ = machine.handle(.attemptEnded(status(503, retryAfter: "30"), admittedByBreaker: false), now: .seconds(1))
        let report = try reported(
            machine.handle(.retriersAnswered(.answered(.retryWithDelay(.seconds(1)))), now: .seconds(1)))
        #expect(report.decision == .failed)
        guard case .deadlineExceeded = report.error?.reason else {
            Issue.record("the server's Retry-After past the deadline ends the request")
            return
        }
    }

    @Test func aGatesRefusalEndsTheRequestWithTheRefusalBesideTheFailure() throws {
        struct Refused: Error {}
        var machine = machine()
        _ = machine.handle(.start(first: request()), now: .zero)
        _ = machine.handle(.attemptEnded(status(503), admittedByBreaker: false), now: .seconds(1))
        _ = machine.handle(.retriersAnswered(.answered(.retryWithDelay(.seconds(1)))), now: .seconds(1))
        let report = try reported(machine.handle(.gatesAnswered(refusal: Refused()), now: .seconds(1)))
        #expect(report.decision == .failed)
        guard case .retryAborted(let error, let original) = report.error?.reason else {
            Issue.record("a refused retry ends with the refusal")
            return
        }
        #expect(error is Refused)
        guard case .unacceptableStatusCode(503) = original else {
            Issue.record("the refusal keeps the failure it refused a retry of")
            return
        }
        #expect(machine.attempts[0].retryDelay == nil)
    }

    @Test func aBackoffEndedByAGateEndsTheRequestWithTheGatesErrorAndTheFailedAttemptsBody() throws {
        struct Opened: Error {}
        var machine = machine()
        _ = machine.handle(.start(first: request()), now: .zero)
        _ = machine.handle(.attemptEnded(status(503), admittedByBreaker: true), now: .seconds(1))
        _ = machine.handle(.retriersAnswered(.answered(.retryWithDelay(.seconds(2)))), now: .seconds(1))
        guard case .backOff(_, wait: .some, _) = machine.handle(.gatesAnswered(refusal: nil), now: .seconds(1)) else {
            Issue.record("a request a breaker let through backs off on a wait the breaker can end")
            return
        }
        guard
            case .finish(.failed(let error), endsAccounts: true, report: nil) = machine.handle(
                .backoffEnded(.ended(Opened())), now: .seconds(2))
        else {
            Issue.record("an ended backoff ends the request, its attempt reported before the backoff")
            return
        }
        guard case .retryAborted(let opened, .unacceptableStatusCode(503)) = error.reason else {
            Issue.record("the gate's error stands beside the failure")
            return
        }
        #expect(opened is Opened)
        #expect(error.data == Data("body 503".utf8))
    }

    @Test func retriersThatAnswerTooLateEndTheRequestOnItsDeadline() throws {
        var machine = machine(deadline: .seconds(2))
        _ = machine.handle(.start(first: request()), now: .zero)
        _ = machine.handle(.attemptEnded(status(500), admittedByBreaker: false), now: .seconds(1))
        let report = try reported(machine.handle(.retriersAnswered(.tooLate), now: .seconds(2)))
        #expect(report.decision == .failed)
        guard case .deadlineExceeded(_, .unacceptableStatusCode(500)) = report.error?.reason else {
            Issue.record("too late is the deadline, after the failure")
            return
        }
    }

    @Test func aRequestCancelledWhileTheRetriersDecideIsReportedAndEndsAsCancelled() throws {
        var machine = machine()
        _ = machine.handle(.start(first: request()), now: .zero)
        _ = machine.handle(.attemptEnded(status(500), admittedByBreaker: false), now: .seconds(1))
        let action = machine.handle(.retriersAnswered(.cancelled), now: .seconds(1))
        let report = try reported(action)
        #expect(report.decision == .cancelled)
        #expect(report.error == nil)
        guard case .finish(.cancelled, endsAccounts: true, _) = action else {
            Issue.record("a cancelled request ends as cancelled")
            return
        }
    }

    @Test func aFailureThatIsNeverRetriedIsNotOfferedToTheRetriers() throws {
        var machine = machine()
        _ = machine.handle(.start(first: request()), now: .zero)
        let open = CircuitBreakerOpenError(key: "api.example.com", state: .open, retryAfter: .seconds(5))
        let report = try reported(
            machine.handle(
                .attemptEnded(AttemptResult(.failure(.circuitOpen(open))), admittedByBreaker: false), now: .zero))
        #expect(report.decision == .failed)
        // Ended by the breaker's rule, with the refusal as its reason.
        let error = try #require(report.error)
        #expect(error.stopReason == .circuitOpen && error.attemptCount == 1)
        guard case .circuitOpen = error.reason else {
            Issue.record("the request ends with the breaker's refusal")
            return
        }
    }

    @Test func aRoundWhoseQuestionAboutANeverRetriedFailureWasCutEndsAsItsQuestionDid() throws {
        var machine = machine(hedging: Hedging(delay: .milliseconds(50)))
        _ = machine.handle(.start(first: request()), now: .zero)
        let open = CircuitBreakerOpenError(key: "api.example.com", state: .open, retryAfter: .seconds(5))
        let refused = AttemptResult(.failure(.circuitOpen(open)))
        let round = HedgingExecutor.RoundResult(
            records: [RequestMachine.Recorded(refused, number: 1, since: .zero, now: .milliseconds(10))],
            result: refused, answer: .cancelled, target: nil, quiet: HostQuiet())
        // The round was cancelled before its answer was read: the request is cancelled, not failed by the breaker.
        let report = try reported(machine.handle(.roundEnded(round, admittedByBreaker: false), now: .milliseconds(10)))
        #expect(report.decision == .cancelled && report.error == nil)
    }

    @Test func anAttemptTheDeadlineCutShortIsRecordedAsTimedOutAndEndsTheRequest() throws {
        var machine = machine(deadline: .seconds(1))
        _ = machine.handle(.start(first: request()), now: .zero)
        let report = try reported(
            machine.handle(.attemptEnded(.deadlineReached, admittedByBreaker: false), now: .seconds(1)))
        #expect(report.decision == .failed)
        guard case .transportFailed(let cut as URLError) = machine.attempts[0].failure else {
            Issue.record("an attempt the deadline cut short is recorded as timed out")
            return
        }
        #expect(cut.code == .timedOut)
        guard case .deadlineExceeded(.seconds(1), _) = report.error?.reason else {
            Issue.record("the deadline ends the request")
            return
        }
    }

    @Test func aRetrierThatMovesTheRequestHasTheGatesAskedAboutTheNewTargetAndTheNextAttemptStartFromIt() throws {
        let fallback = URLRequest(url: URL(string: "https://fallback.example.com/items")!)
        var machine = machine()
        _ = machine.handle(.start(first: request()), now: .zero)
        _ = machine.handle(.attemptEnded(status(503), admittedByBreaker: false), now: .zero)
        guard
            case .askGates(let retry, _, _) = machine.handle(
                .retriersAnswered(.answered(.retryWithRequest(fallback, delay: .seconds(1)))), now: .zero)
        else {
            Issue.record("the retry is put to the gates")
            return
        }
        #expect(retry.retryTarget?.url == fallback.url)
        // Where the failed attempt started from, for a per-host part to compare with where it went.
        #expect(retry.retrySource?.url == exampleURL && !retry.movedMidRound)
        _ = machine.handle(.gatesAnswered(refusal: nil), now: .zero)
        guard case .attempt(let next, number: 2, _) = machine.handle(.backoffEnded(.slept), now: .seconds(1)) else {
            Issue.record("the next attempt follows the backoff")
            return
        }
        #expect(next.url == fallback.url)
    }

    @Test func aHedgedRoundsAttemptsJoinTheRecordsInTheRoundsOrderAndItsWinnerEndsTheRequest() throws {
        let hedging = Hedging(delay: .milliseconds(50))
        var machine = machine(hedging: hedging)
        guard case .hedgedRound(let start) = machine.handle(.start(first: request()), now: .zero) else {
            Issue.record("a request that hedges starts a hedged round")
            return
        }
        #expect(start.attempts.isEmpty && start.hedging.delay == .milliseconds(50))
        // The round's records: attempt 2 failed while 1 was in flight, 3 won, 1 lost.
        let records = [
            RequestMachine.Recorded(status(503), number: 2, since: .milliseconds(50), now: .milliseconds(60), hedge: 1),
            RequestMachine.Recorded(
                AttemptResult(.cancelled, sent: request()), number: 1, since: .zero, now: .milliseconds(90)),
            RequestMachine.Recorded(status(200), number: 3, since: .milliseconds(60), now: .milliseconds(90), hedge: 2),
        ]
        let round = HedgingExecutor.RoundResult(
            records: records, result: status(200), answer: nil, target: nil, quiet: HostQuiet())
        let action = machine.handle(.roundEnded(round, admittedByBreaker: false), now: .milliseconds(90))
        #expect(machine.attempts.map(\.number) == [2, 1, 3])
        #expect(machine.attempts.map(\.hedge) == [1, 0, 2])
        #expect(machine.attempts[0].failure != nil && machine.attempts[2].failure == nil)
        let report = try reported(action)
        #expect(report.attempt == 3 && report.decision == .succeeded)
        // A request retried within its round gave the parts something to forget.
        guard case .finish(.succeeded, endsAccounts: true, _) = action else {
            Issue.record("the winner ends the request")
            return
        }
    }

    @Test func aRoundThatEndsOnAFailureTheRetriersAnsweredDecidesWithThatAnswerAndTheRequestARetrierMovedItTo() throws {
        let fallback = URLRequest(url: URL(string: "https://fallback.example.com/items")!)
        var machine = machine(hedging: Hedging(delay: .milliseconds(50)))
        _ = machine.handle(.start(first: request()), now: .zero)
        let round = HedgingExecutor.RoundResult(
            records: [RequestMachine.Recorded(status(503), number: 1, since: .zero, now: .milliseconds(70))],
            result: status(503), answer: .answered(.retryWithDelay(.seconds(1))), target: fallback, quiet: HostQuiet())
        // The round asked the retriers already: the gates are asked next, never the retriers again.
        guard
            case .askGates(let retry, _, .seconds(1)) = machine.handle(
                .roundEnded(round, admittedByBreaker: false), now: .milliseconds(70))
        else {
            Issue.record("the retriers' answer from the round goes to the gates")
            return
        }
        #expect(retry.attempts.map(\.number) == [1])
        #expect(retry.retryTarget?.url == fallback.url)
        // Moved mid-round: the failed attempt may have started from either request, so none is named as its source,
        // and the fallback's breaker judges the retry.
        #expect(retry.movedMidRound && retry.retrySource == nil)
        _ = machine.handle(.gatesAnswered(refusal: nil), now: .milliseconds(70))
        guard case .hedgedRound(let next) = machine.handle(.backoffEnded(.slept), now: .seconds(2)) else {
            Issue.record("the next round follows the backoff")
            return
        }
        // The next round starts from the request the retrier moved the request to, and so do its hedges; it reads
        // the round before's record.
        #expect(next.request.url == fallback.url && next.nextBase.url == fallback.url)
        #expect(next.attempts.map(\.number) == [1])
        #expect(next.lastSentRequest?.url == exampleURL)
    }

    @Test(
        "A retry after a round waits until the time its host asked for in the round, and ends past the deadline",
        arguments: [
            (nil, exampleURL), (Duration.seconds(20), exampleURL), (nil, URL(string: "https://b.example/")!),
            (Duration.seconds(20), URL(string: "https://b.example/")!),
        ] as [(Duration?, URL)])
    func aRetryAfterARoundWaitsForTheQuietItsHostAskedFor(deadline: Duration?, askedBy: URL) throws {
        var machine = machine(deadline: deadline, hedging: Hedging(delay: .milliseconds(100)))
        _ = machine.handle(.start(first: request()), now: .zero)
        // A hedge's 503 asked for 30 s of quiet at 0.1 s, from the host the retry goes to or another one; the round
        // ended on the first attempt's 500 at 1 s, whose retry the retriers want after 0.5 s.
        var quiet = HostQuiet()
        quiet.note(.seconds(30), askedBy: URLRequest(url: askedBy), now: .milliseconds(100))
        let round = HedgingExecutor.RoundResult(
            records: [
                RequestMachine.Recorded(
                    status(503, retryAfter: "30"), number: 2, since: .zero, now: .milliseconds(100)),
                RequestMachine.Recorded(status(500), number: 1, since: .zero, now: .seconds(1)),
            ],
            result: status(500), answer: .answered(.retryWithDelay(.milliseconds(500))), target: nil, quiet: quiet)
        let action = machine.handle(.roundEnded(round, admittedByBreaker: false), now: .seconds(1))
        guard let deadline, askedBy == exampleURL else {
            guard case .askGates(_, _, let delay) = action else {
                Issue.record("the retry goes to the gates, not \(action)")
                return
            }
            // Another host's quiet does not hold it.
            #expect(delay == (askedBy == exampleURL ? .milliseconds(29_100) : .milliseconds(500)))
            return
        }
        // The quiet ends after the deadline: the request ends now, stopped by the server's ask.
        let told = try reported(action)
        #expect(deadline == .seconds(20) && told.decision == .failed)
        #expect(told.error?.stopReason == .retryAfterPastDeadline)
    }

    @Test(
        arguments: [
            (nil, nil, nil),
            (Duration.seconds(10), nil, TimeLimit.deadline(.seconds(7))),
            (nil, Duration.seconds(1), TimeLimit.attemptTimeout(.seconds(1))),
            (Duration.seconds(10), Duration.seconds(1), TimeLimit.attemptTimeout(.seconds(1))),
            (Duration.seconds(10), Duration.seconds(8), TimeLimit.deadline(.seconds(7))),
        ] as [(Duration?, Duration?, TimeLimit?)])
    func anAttemptIsGivenTheTimeLeftOrItsTimeoutWhicheverComesFirst(
        deadline: Duration?, attemptTimeout: Duration?, expected: TimeLimit?
    ) {
        let time = RequestTime(
            start: .seconds(1), end: deadline.map { .seconds(1) + $0 }, attemptTimeout: attemptTimeout)
        #expect(time.limits?.limit(of: .attempt, now: .seconds(4)) == expected)
    }

    @Test func theRetriersDecisionIsGivenTheTimeLeftWhateverTheAttemptTimeout() {
        let time = RequestTime(start: .seconds(1), end: .seconds(11), attemptTimeout: .seconds(1))
        #expect(time.limits?.limit(of: .decision, now: .seconds(4)) == .deadline(.seconds(7)))
        #expect(time.limits?.limit(of: .attempt, now: .seconds(4)) == .attemptTimeout(.seconds(1)))
        #expect(
            RequestTime(start: .zero, end: nil, attemptTimeout: .seconds(1)).limits?.limit(of: .decision, now: .zero)
                == nil)
    }

    @Test func aWaitIsAllowedWhenItEndsByTheDeadlineAndNotAfter() {
        let time = RequestTime(start: .seconds(1), end: .seconds(11), attemptTimeout: nil)
        #expect(time.allows(.seconds(6), from: .seconds(5)))
        #expect(!time.allows(.seconds(6) + .nanoseconds(1), from: .seconds(5)))
        #expect(RequestTime(start: .zero, end: nil, attemptTimeout: nil).allows(.seconds(1_000_000), from: .zero))
    }

    @Test func anEventThatCannotHappenInThePhaseTrapsNamingThePhase() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let session = Session(transport: ScriptedTransport([]))
            let plan = RequestPlan(
                session: session, original: .request(URLRequest(url: URL(string: "https://example.com")!)))
            var machine = RequestMachine(plan, now: .zero)
            _ = machine.handle(.gatesAnswered(refusal: nil), now: .zero)
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("gatesAnswered(refusal: nil) cannot happen in attempting"))
    }
}
