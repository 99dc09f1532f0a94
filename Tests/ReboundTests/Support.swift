import Foundation
import Rebound
import ReboundTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A thread-safe log that interceptors in tests append to, to check what ran and in which order.
final class Log: Sendable {
    private let entries = Locked<[String]>([])

    func append(_ entry: String) {
        entries.withLock { $0.append(entry) }
    }

    var all: [String] { entries.withLock { $0 } }
}

let exampleURL = URL(string: "https://api.example.com/items")!

func request(_ method: HTTPMethod = .get, _ url: URL = exampleURL) -> URLRequest {
    URLRequest(url: url, method: method)
}

/// An adapter that logs its name and the attempt, and adds its name to the `X-Adapters` header.
func taggingAdapter(_ name: String, log: Log) -> Adapter {
    Adapter { request, context in
        log.append("adapt \(name) #\(context.attempt)")
        var request = request
        let previous = request.value(forHTTPHeaderField: "X-Adapters").map { $0 + "," } ?? ""
        request.setValue(previous + name, forHTTPHeaderField: "X-Adapters")
        return request
    }
}

/// A retrier that logs its name and answers `result`.
func loggingRetrier(_ name: String, log: Log, answer result: RetryResult) -> Retrier {
    Retrier { request, _ in
        log.append("retry \(name) #\(request.retryCount)")
        return result
    }
}

/// A retrier that retries at once up to `limit` times, whatever the failure.
func retryAnything(limit: Int, delay: Duration = .zero) -> Retrier {
    Retrier { request, _ in request.retryCount < limit ? .retryWithDelay(delay) : .doNotRetry }
}

struct TestError: Error, Equatable {
    let name: String
    init(_ name: String) { self.name = name }
}
