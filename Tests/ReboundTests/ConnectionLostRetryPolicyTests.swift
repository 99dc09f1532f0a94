import Foundation
import Rebound
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("ConnectionLostRetryPolicy")
struct ConnectionLostRetryPolicyTests {
    @Test func retriesALostConnection() async {
        #expect(
            await decision(ConnectionLostRetryPolicy(), urlError: .networkConnectionLost).delay == .milliseconds(500))
    }

    @Test func onLinuxAConnectionClosedBeforeAnyResponseCountsAsLost() async {
        #if canImport(FoundationNetworking)
            #expect(await decision(ConnectionLostRetryPolicy(), urlError: .badServerResponse).retryRequired)
            #expect(await decision(ConnectionLostRetryPolicy(), urlError: .unknown).retryRequired)
        #else
            #expect(await decision(ConnectionLostRetryPolicy(), urlError: .badServerResponse).retryRequired == false)
        #endif
    }

    @Test(arguments: [URLError.Code.cannotConnectToHost, .timedOut, .notConnectedToInternet, .cannotFindHost])
    func doesNotRetryOtherNetworkErrors(code: URLError.Code) async {
        #expect(await decision(ConnectionLostRetryPolicy(), urlError: code).retryRequired == false)
    }

    @Test(arguments: [500, 503, 408])
    func doesNotRetryStatusCodes(status: Int) async {
        #expect(await decision(ConnectionLostRetryPolicy(), status: status).retryRequired == false)
    }

    @Test func keepsRetryPolicysLimitAndMethods() async throws {
        let policy = ConnectionLostRetryPolicy(retryLimit: 1)

        #expect(await decision(policy, urlError: .networkConnectionLost, retryCount: 1).retryRequired == false)
        #expect(await decision(policy, method: .post, urlError: .networkConnectionLost).retryRequired == false)
    }

    // MARK: - Configuration

    @Test func validatedRejectsAnInvalidSettingUnderItsOwnName() {
        let error = #expect(throws: ConfigurationError.self) {
            try ConnectionLostRetryPolicy.validated(exponentialBackoffBase: 0)
        }

        #expect(error?.field == "ConnectionLostRetryPolicy.exponentialBackoffBase")
        #expect(error?.message == "ConnectionLostRetryPolicy.exponentialBackoffBase must be at least 2, got 0")
    }

    @Test func validatedReturnsAPolicyThatRetriesOnlyLostConnections() throws {
        let policy = try ConnectionLostRetryPolicy.validated(retryLimit: 1, retryableHTTPMethods: [.get])

        #expect(policy.policy.retryLimit == 1)
        #expect(policy.policy.retryableHTTPMethods == [.get])
        #expect(policy.policy.retryableHTTPStatusCodes.isEmpty)
        #expect(policy.policy.retryableURLErrorCodes == ConnectionLostRetryPolicy.connectionLostURLErrorCodes)
    }

    @Test func anInvalidSettingWrittenInCodeTrapsNamingIt() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = ConnectionLostRetryPolicy(exponentialBackoffScale: -1)
        }

        expectStandardError(
            of: result,
            contains:
                "ConnectionLostRetryPolicy.exponentialBackoffScale must be a number of seconds from 0 to 1e12 (RetryResult.longestDelay), got -1.0"
        )
    }
}
