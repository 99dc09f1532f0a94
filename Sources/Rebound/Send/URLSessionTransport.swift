import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Sends requests with Foundation's `URLSession` (FoundationNetworking on Linux); the default transport.
///
/// Cancelling the calling task cancels the data task at once and the send ends with `CancellationError`.
/// Errors are the `URLError`s that `URLSession` reports, with their codes unchanged.
public struct URLSessionTransport: HTTPTransport {
    /// The session requests go through; `URLSession.shared` by default.
    public let session: URLSession

    /// Creates a transport that sends through `session`, `URLSession.shared` by default.
    public init(session: URLSession = .shared) {
        self.session = session
    }

    /// Sends `request` with a data task, cancelling the task if the calling task is cancelled.
    public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let cancellation = DataTaskCancellation()
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation {
                    (continuation: CheckedContinuation<(Data, URLResponse), any Error>) in
                    let task = session.dataTask(with: request) { data, response, error in
                        if let error {
                            continuation.resume(throwing: error)
                        } else if let response {
                            continuation.resume(returning: (data ?? Data(), response))
                        } else {
                            continuation.resume(throwing: URLError(.badServerResponse))
                        }
                    }
                    cancellation.start(task)
                }
            } onCancel: {
                cancellation.cancel()
            }
        } catch {
            // A cancelled data task reports `URLError.cancelled`; the caller asked for cancellation, so say that.
            if Task.isCancelled { throw CancellationError() }
            throw error
        }
        if Task.isCancelled { throw CancellationError() }
        guard let httpResponse = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
        return (data, httpResponse)
    }
}

/// Hands a data task from the code that starts it to a cancellation handler that may run first, on another thread.
private final class DataTaskCancellation: Sendable {
    private enum State {
        case idle
        case running(URLSessionDataTask)
        case cancelled
    }

    private let state = Locked(State.idle)

    /// Resumes `task`, or cancels it at once if cancellation came first.
    func start(_ task: URLSessionDataTask) {
        let cancelledFirst = state.withLock { state in
            if case .cancelled = state { return true }
            state = .running(task)
            return false
        }
        // A cancelled data task still calls its completion handler (with `URLError.cancelled`), which resumes the caller.
        if cancelledFirst { task.cancel() } else { task.resume() }
    }

    /// Cancels the running task, or makes `start` cancel it.
    func cancel() {
        let task = state.withLock { state -> URLSessionDataTask? in
            defer { state = .cancelled }
            if case .running(let task) = state { return task }
            return nil
        }
        task?.cancel()
    }
}
