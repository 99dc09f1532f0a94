import Foundation
import Rebound
import ReboundTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

private func response(_ status: Int) -> HTTPURLResponse {
    HTTPURLResponse(url: exampleURL, statusCode: status, httpVersion: "HTTP/1.1", headerFields: [:])!
}

/// What `validator` throws for a response of `status` with `body`; `nil` when it accepts it.
private func failure(
    _ validator: some ResponseValidator, _ status: Int, body: String = "", context: RequestContext = RequestContext()
) -> (any Error)? {
    do {
        try validator.validate(response(status), data: Data(body.utf8), context: context)
        return nil
    } catch {
        return error
    }
}

@Suite("Validator")
struct ValidatorTests {
    @Test(arguments: [200, 201, 204, 299])
    func successfulStatusCodesAcceptTwoHundreds(status: Int) {
        #expect(failure(Validator.successfulStatusCodes, status) == nil)
    }

    @Test(arguments: [100, 199, 300, 304, 404, 500, 503])
    func successfulStatusCodesRejectTheRestWithTheStatus(status: Int) {
        #expect(
            failure(Validator.successfulStatusCodes, status) as? UnacceptableStatusCode
                == UnacceptableStatusCode(status))
    }

    @Test func acceptableStatusCodesTakeARangeAClosedRangeOrASet() {
        #expect(failure(Validator.acceptableStatusCodes(200...299), 299) == nil)
        #expect(failure(Validator.acceptableStatusCodes(200...299), 300) != nil)
        #expect(failure(Validator.acceptableStatusCodes(0...Int.max), 599) == nil)
        #expect(failure(Validator.acceptableStatusCodes(200..<400), 304) == nil)
        #expect(failure(Validator.acceptableStatusCodes(200..<400), 400) != nil)
        #expect(failure(Validator.acceptableStatusCodes([200, 404]), 404) == nil)
        #expect(failure(Validator.acceptableStatusCodes([200, 404]), 201) != nil)
    }

    @Test func acceptAllAcceptsEveryStatus() {
        #expect(failure(Validator.acceptAll, 500) == nil)
    }

    @Test func customValidatorSeesStatusHeadersBodyAndContextAndKeepsItsError() {
        let validator = Validator { response, data, context in
            if response.statusCode == 200, context.label != "lenient",
                String(decoding: data, as: UTF8.self).contains("RATE_LIMITED")
            {
                throw TestError("rate limited #\(context.attempt)")
            }
        }
        let body = #"{"error_code":"RATE_LIMITED"}"#

        #expect(
            failure(validator, 200, body: body, context: RequestContext(attempt: 2)) as? TestError
                == TestError("rate limited #2"))
        #expect(failure(validator, 200, body: body, context: RequestContext(label: "lenient")) == nil)
        #expect(failure(validator, 200, body: "{}") == nil)
    }

    @Test func andRunsBothAndTheFirstFailureWins() {
        let log = Log()
        let validator = Validator.successfulStatusCodes.and { _, _ in
            log.append("body checked")
            throw TestError("body")
        }

        #expect(failure(validator, 500) as? UnacceptableStatusCode == UnacceptableStatusCode(500))
        #expect(failure(validator, 200) as? TestError == TestError("body"))
        #expect(log.all == ["body checked"])
    }

    @Test func aThrownUnacceptableStatusCodeIsReportedAsOne() async throws {
        let session = Session(
            transport: ScriptedTransport([.status(200)]),
            validator: .validator { response, _, _ in throw UnacceptableStatusCode(response.statusCode) },
            clock: FastForwardClock())

        let error = try await #require(throws: ReboundError.self) { try await session.send(request()) }

        guard case .unacceptableStatusCode(200) = error.reason else {
            Issue.record("reason: \(error.reason)")
            return
        }
    }

    @Test func validatorsSeeEachAttemptsNumberAndTheRequestsLabel() async throws {
        let seen = Locked<[String]>([])
        let session = Session(
            transport: ScriptedTransport([.status(200), .status(200)]), retriers: [retryAnything(limit: 1)],
            validator: Validator.successfulStatusCodes.and { _, _, context in
                seen.withLock { $0.append("\(context.label ?? "-") #\(context.attempt)") }
                if context.attempt == 1 { throw TestError("first") }
            }, clock: FastForwardClock())

        _ = try await session.send(request(), label: "quote")

        #expect(seen.withLock { $0 } == ["quote #1", "quote #2"])
    }
}
