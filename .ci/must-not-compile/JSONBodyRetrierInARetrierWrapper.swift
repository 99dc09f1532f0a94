// Must not compile: a JSONBodyRetrier is not a RequestRetrier, so a retrier-only wrapper cannot hold it (only `retry` would be
// forwarded, and a 200 would never be read). Expected error: "does not conform to expected type 'RequestRetrier'".
import Rebound

struct ForwardingRetrier: RequestRetrier {
    let wrapped: any RequestRetrier
    func retry(_ request: RetryRequest, dueTo error: ReboundError) async -> RetryResult {
        await wrapped.retry(request, dueTo: error)
    }
}

let wrapped = ForwardingRetrier(wrapped: JSONBodyRetrier(values: ["RATE_LIMITED"]))
