import Foundation
import Rebound
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("RetryResult")
struct RetryResultTests {
    @Test func delayIsZeroForRetryNeverNegativeAndNilWhenNotRetrying() {
        #expect(RetryResult.retry.delay == .zero)
        #expect(RetryResult.retryWithDelay(.seconds(2)).delay == .seconds(2))
        #expect(RetryResult.retryWithDelay(.seconds(-2)).delay == .zero)
        #expect(RetryResult.retryWithDelay(.seconds(Int64.max)).delay == RetryResult.longestDelay)
        #expect(RetryResult.doNotRetry.delay == nil)
        #expect(RetryResult.doNotRetryWithError(TestError("x")).delay == nil)
        #expect(RetryResult.doNotRetryWithError(TestError("x")).error as? TestError == TestError("x"))
    }
}
