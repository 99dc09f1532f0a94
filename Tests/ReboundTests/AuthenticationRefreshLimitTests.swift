import Rebound
import Testing

@Suite("AuthenticationRefreshLimit")
struct AuthenticationRefreshLimitTests {
    @Test func theDefaultIsFiveRefreshesInThirtySeconds() {
        #expect(AuthenticationRefreshLimit.default == AuthenticationRefreshLimit(maximumCount: 5, window: .seconds(30)))
    }

    @Test(arguments: [
        (0, Duration.seconds(30), "AuthenticationRefreshLimit.maximumCount", "must be at least 1, got 0"),
        (5, .zero, "AuthenticationRefreshLimit.window", "must be longer than zero, got 0.0 seconds"),
    ])
    func validatedRejectsAnInvalidSettingNamingIt(count: Int, window: Duration, field: String, problem: String) {
        let error = #expect(throws: ConfigurationError.self) {
            try AuthenticationRefreshLimit.validated(maximumCount: count, window: window)
        }

        #expect(error?.field == field)
        #expect(error?.message == "\(field) \(problem)")
    }

    @Test func validatedReturnsTheLimitTheInitializerWould() throws {
        let limit = try AuthenticationRefreshLimit.validated(maximumCount: 1, window: .milliseconds(1))

        #expect(limit == AuthenticationRefreshLimit(maximumCount: 1, window: .milliseconds(1)))
    }

    @Test func anInvalidSettingWrittenInCodeTrapsNamingIt() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = AuthenticationRefreshLimit(maximumCount: 0, window: .seconds(30))
        }

        expectStandardError(of: result, contains: "AuthenticationRefreshLimit.maximumCount must be at least 1, got 0")
    }
}
