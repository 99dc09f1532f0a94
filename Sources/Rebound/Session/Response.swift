import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A successful response: the body, the HTTP response, the final request sent and the record of every attempt.
public struct Response: Sendable {
    /// The response body; empty when the server sent none.
    public let data: Data
    /// The HTTP response of the successful attempt; built from ``head`` on first use when the transport answered
    /// without an `HTTPURLResponse`.
    public var httpResponse: HTTPURLResponse { head.httpURLResponse }
    /// The status and header fields of the successful attempt's response.
    public let head: ResponseHead
    /// The request sent in the successful attempt, after adaptation.
    public let request: URLRequest
    /// The request as the caller passed it to the session, before any adapter ran.
    public var originalRequest: URLRequest { original.request }
    /// Every attempt made, in order; the last one is the successful one.
    public let attempts: [Attempt]

    /// The caller's request, or what it is made of (see ``OriginalRequest``).
    private let original: OriginalRequest

    /// Creates a response; the session creates these, and test code may too.
    public init(
        data: Data, httpResponse: HTTPURLResponse, request: URLRequest, originalRequest: URLRequest,
        attempts: [Attempt]
    ) {
        self.init(
            data: data, head: ResponseHead(httpResponse), request: request, original: .request(originalRequest),
            attempts: attempts)
    }

    init(data: Data, head: ResponseHead, request: URLRequest, original: OriginalRequest, attempts: [Attempt]) {
        self.data = data
        self.head = head
        self.request = request
        self.original = original
        self.attempts = attempts
    }

    /// The HTTP status code.
    public var statusCode: Int { head.statusCode }

    /// The value of a header field, looked up without regard to case; `nil` if the response lacks it.
    public func value(forHTTPHeaderField name: String) -> String? {
        head.value(forHTTPHeaderField: name)
    }

    /// How many attempts came before the one that succeeded, hedges included: `0` when the first attempt succeeded.
    public var retryCount: Int { attempts.count - 1 }

    /// Decodes the body as JSON into `type`.
    ///
    /// - Throws: ``ReboundError`` with reason ``ReboundError/Reason/decodingFailed(error:)`` that keeps the decoder's
    ///   error, this response and its body.
    public func decode<Value: Decodable>(
        _ type: Value.Type = Value.self, using decoder: JSONDecoder = JSONDecoder()
    ) throws(ReboundError) -> Value {
        do {
            return try decoder.decode(type, from: data)
        } catch {
            throw ReboundError(
                reason: .decodingFailed(error: error), original: original, lastRequest: request,
                responseHead: head, data: data, attempts: attempts)
        }
    }
}
