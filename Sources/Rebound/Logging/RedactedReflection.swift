import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// What `dump`, `Mirror(reflecting:)` and `String(reflecting:)` show of the library's records. A stored `URLRequest` or
// `HTTPURLResponse` would otherwise be reflected as it is: its URL with the query and user-info, and every header,
// `Authorization` and `Set-Cookie` included. Each record below reflects a redacted stand-in instead, redacted as
// `Redaction.default` redacts log lines; the record's own properties still hold the real values for code to read.
// Bodies are shown by size only, and a failure by its redacted description (an underlying error is the cause's own
// and is reached through `underlyingError`, as it is).

/// A request as reflection shows it: method, redacted URL, headers with secret values replaced, body size.
struct RedactedRequest: CustomReflectable, CustomStringConvertible {
    let request: URLRequest

    var description: String { "\(request.method) \(Redaction.default.string(for: request.url))" }

    var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "method": request.method.rawValue,
                "url": Redaction.default.string(for: request.url),
                "headers": redactedHeaders(request.allHTTPHeaderFields ?? [:]),
                "body": RedactedBody(count: request.httpBody?.count, isStream: request.httpBodyStream != nil),
            ], displayStyle: .struct)
    }
}

/// A response as reflection shows it: status, redacted URL, headers with secret values replaced.
struct RedactedResponse: CustomReflectable, CustomStringConvertible {
    let response: ResponseHead

    var description: String { "\(response.statusCode) \(Redaction.default.string(for: response.url))" }

    var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "statusCode": response.statusCode, "url": Redaction.default.string(for: response.url),
                "headers": redactedHeaders(response.combinedHeaderFields),
            ], displayStyle: .struct)
    }
}

/// A body as reflection shows it: its size, never its bytes.
struct RedactedBody: CustomReflectable, CustomStringConvertible {
    let count: Int?
    var isStream = false

    var description: String {
        if isStream { return "a stream" }
        return count.map { "\($0) bytes" } ?? "none"
    }

    var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}

/// A failure as reflection shows it: its redacted one-line description.
struct RedactedFailure: CustomReflectable, CustomStringConvertible {
    let description: String

    var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}

/// `Name: value` lines, sorted by name, with the values of secret headers replaced.
private func redactedHeaders(_ headers: [String: String]) -> [String] {
    headers.sorted { $0.key.lowercased() < $1.key.lowercased() }.map { name, value in
        "\(name): \(Redaction.default.value(ofHeader: name, value))"
    }
}

extension RedactedRequest {
    /// The stand-in for an optional request.
    static func of(_ request: URLRequest?) -> RedactedRequest? { request.map(RedactedRequest.init) }
}

extension RedactedResponse {
    /// The stand-in for an optional response.
    static func of(_ response: ResponseHead?) -> RedactedResponse? { response.map(RedactedResponse.init) }
}

extension RedactedBody {
    /// The stand-in for an optional body.
    static func of(_ data: Data?) -> RedactedBody { RedactedBody(count: data?.count) }
}

extension ReboundError: CustomReflectable {
    /// Reflection shows redacted stand-ins: the URL's query values and user-info, secret headers and bodies are hidden.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "reason": RedactedFailure(description: reason.description),
                "originalRequest": RedactedRequest(request: originalRequest),
                "lastRequest": RedactedRequest.of(lastRequest) as Any,
                "response": RedactedResponse.of(responseHead) as Any,
                "data": RedactedBody.of(data),
                "attempts": attempts,
            ], displayStyle: .struct)
    }
}

extension ReboundError.Reason: CustomReflectable {
    /// Reflection shows the redacted description only; the underlying error is reached through
    /// ``ReboundError/Reason/underlyingError``.
    public var customMirror: Mirror {
        Mirror(self, children: ["description": RedactedFailure(description: description)], displayStyle: .enum)
    }
}

extension Response: CustomReflectable {
    /// Reflection shows redacted stand-ins: the URL's query values and user-info, secret headers and the body are hidden.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "statusCode": statusCode,
                "request": RedactedRequest(request: request),
                "originalRequest": RedactedRequest(request: originalRequest),
                "httpResponse": RedactedResponse(response: head),
                "data": RedactedBody.of(data),
                "attempts": attempts,
            ], displayStyle: .struct)
    }
}

extension Attempt: CustomReflectable {
    /// Reflection shows redacted stand-ins: the URL's query values and user-info and secret headers are hidden.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "number": number,
                "request": RedactedRequest.of(request) as Any,
                "response": RedactedResponse.of(responseHead) as Any,
                "failure": failure.map { RedactedFailure(description: $0.description) } as Any,
                "duration": duration,
                "retryDelay": retryDelay as Any,
                "hedge": hedge,
            ], displayStyle: .struct)
    }
}

extension RetryRequest: CustomReflectable {
    /// Reflection shows redacted stand-ins: the URL's query values and user-info, secret headers and the body are hidden.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "requestID": requestID,
                "label": label as Any,
                "originalRequest": RedactedRequest(request: originalRequest),
                "lastRequest": RedactedRequest.of(lastRequest) as Any,
                "response": RedactedResponse.of(responseHead) as Any,
                "data": RedactedBody.of(data),
                "attempts": attempts,
            ], displayStyle: .struct)
    }
}

extension AttemptOutcome: CustomReflectable {
    /// Reflection shows redacted stand-ins: the URL's query values and user-info, secret headers and the body are hidden.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "requestID": requestID,
                "label": label as Any,
                "originalRequest": RedactedRequest(request: originalRequest),
                "attempt": attempt,
                "data": RedactedBody.of(data),
                "elapsed": elapsed,
                "decision": decision,
                "error": error as Any,
                "shadowRefusals": shadowRefusals,
            ], displayStyle: .struct)
    }
}

extension RequestOutcome: CustomReflectable {
    /// Reflection shows redacted stand-ins: the URL's query values and user-info and secret headers are hidden.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "requestID": requestID,
                "label": label as Any,
                "originalRequest": RedactedRequest(request: originalRequest),
                "attempts": attempts,
                "elapsed": elapsed,
                "decision": decision,
                "error": error as Any,
                "shadowRefusals": shadowRefusals,
            ], displayStyle: .struct)
    }
}

extension RedirectHop: CustomReflectable {
    /// Reflection shows redacted stand-ins: the URL's query values and user-info and secret headers are hidden.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "requestID": requestID,
                "label": label as Any,
                "attempt": attempt,
                "number": number,
                "request": RedactedRequest(request: request),
                "response": RedactedResponse(response: responseHead),
                "next": RedactedRequest(request: next),
            ], displayStyle: .struct)
    }
}

extension ResponseHead: CustomReflectable {
    /// Reflection shows a redacted stand-in: the URL's query values and user-info and secret headers are hidden.
    public var customMirror: Mirror {
        let redacted = RedactedResponse(response: self).customMirror
        return Mirror(self, children: redacted.children, displayStyle: .struct)
    }
}
