import Foundation
import Rebound
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

private func response(_ status: Int) -> HTTPURLResponse {
    HTTPURLResponse(url: exampleURL, statusCode: status, httpVersion: "HTTP/1.1", headerFields: [:])!
}

@Suite("ResponseValidator")
struct ResponseValidatorTests {
    @Test(arguments: [200, 201, 204, 299])
    func successfulStatusCodesAcceptTwoHundreds(status: Int) {
        #expect(ResponseValidator.successfulStatusCodes.validate(response(status), data: Data()) == nil)
    }

    @Test(arguments: [100, 199, 300, 304, 404, 500, 503])
    func successfulStatusCodesRejectTheRest(status: Int) {
        guard
            case .unacceptableStatusCode(status) = ResponseValidator.successfulStatusCodes.validate(
                response(status), data: Data())
        else {
            Issue.record("status \(status) was not rejected as unacceptable")
            return
        }
    }

    @Test func acceptableStatusCodesTakeARangeAClosedRangeOrASet() {
        #expect(ResponseValidator.acceptableStatusCodes(200...299).validate(response(299), data: Data()) == nil)
        #expect(ResponseValidator.acceptableStatusCodes(200...299).validate(response(300), data: Data()) != nil)
        #expect(ResponseValidator.acceptableStatusCodes(0...Int.max).validate(response(599), data: Data()) == nil)
        #expect(ResponseValidator.acceptableStatusCodes(200..<400).validate(response(304), data: Data()) == nil)
        #expect(ResponseValidator.acceptableStatusCodes(200..<400).validate(response(400), data: Data()) != nil)
        #expect(ResponseValidator.acceptableStatusCodes([200, 404]).validate(response(404), data: Data()) == nil)
        #expect(ResponseValidator.acceptableStatusCodes([200, 404]).validate(response(201), data: Data()) != nil)
    }

    @Test func acceptAllAcceptsEveryStatus() {
        #expect(ResponseValidator.acceptAll.validate(response(500), data: Data()) == nil)
    }

    @Test func customValidatorSeesStatusHeadersAndBodyAndKeepsItsError() {
        let validator = ResponseValidator { response, data in
            if response.statusCode == 200, String(decoding: data, as: UTF8.self).contains("RATE_LIMITED") {
                throw TestError("rate limited")
            }
        }

        let reason = validator.validate(response(200), data: Data(#"{"error_code":"RATE_LIMITED"}"#.utf8))

        guard case .validationFailed(let error) = reason else {
            Issue.record("reason: \(String(describing: reason))")
            return
        }
        #expect(error as? TestError == TestError("rate limited"))
        #expect(validator.validate(response(200), data: Data("{}".utf8)) == nil)
    }

    @Test func andRunsBothAndTheFirstFailureWins() {
        let log = Log()
        let validator = ResponseValidator.successfulStatusCodes.and { _, _ in
            log.append("body checked")
            throw TestError("body")
        }

        let statusFailure = validator.validate(response(500), data: Data())
        let bodyFailure = validator.validate(response(200), data: Data())

        guard case .unacceptableStatusCode(500) = statusFailure, case .validationFailed = bodyFailure else {
            Issue.record("\(String(describing: statusFailure)), \(String(describing: bodyFailure))")
            return
        }
        #expect(log.all == ["body checked"])
    }
}
