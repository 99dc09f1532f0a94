import Rebound
import Testing

@Suite("ConfigurationError")
struct ConfigurationErrorTests {
    @Test func theMessageIsTheFieldThenTheProblemAndDescribesTheError() {
        let error = ConfigurationError(field: "RetryPolicy.retryLimit", problem: "must be 0 or more, got -1")

        #expect(error.field == "RetryPolicy.retryLimit")
        #expect(error.message == "RetryPolicy.retryLimit must be 0 or more, got -1")
        #expect(error.description == error.message)
    }
}
