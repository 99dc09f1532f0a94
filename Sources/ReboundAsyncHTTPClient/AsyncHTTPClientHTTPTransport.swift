#if AsyncHTTPClient
    import AsyncHTTPClient
    import Foundation
    import NIOCore
    import NIOHTTP1
    import NIOPosix
    import NIOSSL
    import Rebound

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    /// A Rebound transport that sends each attempt with AsyncHTTPClient, the HTTP client of Swift on the server.
    ///
    /// ```swift
    /// let session = Session(transport: AsyncHTTPClientHTTPTransport(), retriers: [RetryPolicy()])
    /// ```
    ///
    /// **The client.** Give it your `HTTPClient` (its event loops, pool and TLS settings are yours, and so is its
    /// shutdown), created with ``configuration()`` or at least `redirectConfiguration: .disallow`; or take the default,
    /// one process-wide client made for Rebound, which needs no shutdown (as `HTTPClient.shared`). The session follows
    /// redirects itself, with its rules (credentials dropped across origins, an authenticator's hosts per hop, the hop
    /// cap): a client that followed one itself makes the attempt fail with ``RedirectFollowedByClient`` rather than
    /// bypass them. That comes after the fact (a client's redirect setting cannot be read): the hop was sent with
    /// AsyncHTTPClient's own rules, which drop `Authorization`, `Cookie` and `Proxy-Authorization` across origins but
    /// no credential in a header of another name.
    ///
    /// **Requests.** The method, the header fields and the body are mapped: `httpBody` is sent as bytes with its
    /// length, `httpBodyStream` is streamed in chunks as it is read, never collected whole. `timeoutInterval` (60 s
    /// unless set) bounds the whole exchange, where `URLSession` counts it between packets; the session's
    /// `attemptTimeout` is the precise limit. Cancelling the calling task cancels the request in flight at once.
    ///
    /// **Errors** are mapped to the `URLError` codes `RetryPolicy` already classifies, so its defaults mean the same on
    /// both transports: a refused connection is `.cannotConnectToHost`, a reset or a connection closed mid-body
    /// `.networkConnectionLost`, a timeout `.timedOut`, a host that does not resolve `.cannotFindHost`, a malformed
    /// response `.badServerResponse`, a TLS handshake that failed `.secureConnectionFailed` or, for a certificate or a
    /// host name that does not validate, `.serverCertificateUntrusted` (swift-nio-ssl's errors, where the client's TLS is
    /// swift-nio-ssl's, as on Linux; on Apple platforms the default client's TLS is Network.framework's, whose errors
    /// pass on as they are); cancellation is `CancellationError`. Any other error is passed on as it is.
    ///
    /// **Failures before sending** (``failedBeforeSending(_:)``): a host that does not resolve, a connection that could
    /// not be made (refused, unreachable, or timed out while connecting, or while waiting for a pooled connection), or
    /// a TLS handshake that failed or timed out: the request was not written. A failure on a connection the request was
    /// written to (a reset, a close mid-body, a read timeout, a TLS connection closed without its closing message) may
    /// come after it reached the server. swift-nio-ssl sends no TLS early data.
    ///
    /// **Responses** are collected whole, up to ``maximumResponseBodySize``. Thread-safe: sessions share one transport.
    public final class AsyncHTTPClientHTTPTransport: HTTPTransport {
        /// The error of an attempt whose response came through a redirect the `HTTPClient` followed by itself, which
        /// would have bypassed the session's redirect rules: create the client with `redirectConfiguration: .disallow`.
        public struct RedirectFollowedByClient: Error, Sendable, CustomStringConvertible {
            /// Says what to change.
            public var description: String {
                "the HTTPClient followed a redirect itself; create it with redirectConfiguration: .disallow"
            }
        }

        /// The client every attempt is sent with.
        public let client: HTTPClient
        /// The largest response body collected, in bytes; a larger one fails the attempt. 64 MiB by default.
        public let maximumResponseBodySize: Int

        /// Creates a transport that sends with `client`, which must not follow redirects.
        ///
        /// - Parameters:
        ///   - client: The client; one made for Rebound and shared by the process (no shutdown needed) by default.
        ///   - maximumResponseBodySize: The largest response body collected, in bytes, more than 0 (0 or less traps);
        ///     64 MiB by default.
        public init(
            client: HTTPClient = AsyncHTTPClientHTTPTransport.sharedClient, maximumResponseBodySize: Int = 64 << 20
        ) {
            precondition(maximumResponseBodySize > 0, "maximumResponseBodySize must be more than 0")
            self.client = client
            self.maximumResponseBodySize = maximumResponseBodySize
        }

        /// The client the default transport sends with: the platform's default event loops, redirects not followed, a
        /// refused connection reported at once, never shut down (it lives as long as the process, as
        /// `HTTPClient.shared` does).
        public static let sharedClient = HTTPClient(
            eventLoopGroup: HTTPClient.defaultEventLoopGroup,
            configuration: AsyncHTTPClientHTTPTransport.configuration())

        /// A client configuration that suits the transport: redirects not followed (the session follows them), and a
        /// connection that cannot be established reported at once rather than tried again until the connect timeout (10
        /// s by default), so that the session's retriers decide.
        public static func configuration() -> HTTPClient.Configuration {
            var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
            configuration.connectionPool.retryConnectionEstablishment = false
            return configuration
        }

        /// The `URLError` user-info key that marks a failure before the request was written (resolving the host,
        /// connecting, the TLS handshake, or waiting for a pooled connection), which ``failedBeforeSending(_:)`` reads.
        public static let beforeSendingKey = "ReboundFailedBeforeSending"

        /// Whether `error`, thrown by ``exchange(_:)``, came before the request was written: a `URLError` the transport
        /// marked with ``beforeSendingKey``, which it does for the failures of making a connection only (a host that
        /// does not resolve, a connection refused or unreachable while connecting, a connect, TLS-handshake or pool
        /// timeout, a TLS handshake that failed), never for an error on a connection the request may have been written
        /// to (an unclean TLS shutdown among them).
        public func failedBeforeSending(_ error: any Error) -> Bool {
            (error as? URLError)?.userInfo[Self.beforeSendingKey] as? Bool == true
        }

        /// Sends `request` with the client and collects the response: the call the session makes, which builds no
        /// `HTTPURLResponse` (the head reads the client's status and fields, in the order the server sent them).
        public func exchange(_ request: URLRequest) async throws -> (Data, ResponseHead) {
            guard let url = request.url else { throw URLError(.badURL) }
            let prepared = try Self.clientRequest(for: request, url: url)
            do {
                let response = try await client.execute(prepared, timeout: .nanoseconds(Self.nanoseconds(request)))
                if response.history.count > 1 { throw RedirectFollowedByClient() }
                let body = try await response.body.collect(upTo: maximumResponseBodySize)
                return (Data(body.readableBytesView), Self.head(of: response, url: url))
            } catch {
                // `mapped` passes on what it does not know, `RedirectFollowedByClient` included.
                throw Self.mapped(error)
            }
        }

        static func nanoseconds(_ request: URLRequest) -> Int64 {
            let seconds = request.timeoutInterval > 0 ? request.timeoutInterval : 60
            return Int64(min(seconds, 86_400) * 1_000_000_000)
        }

        /// The client's request for `request`: method, header fields, body.
        static func clientRequest(for request: URLRequest, url: URL) throws -> HTTPClientRequest {
            var prepared = HTTPClientRequest(url: url.absoluteString)
            prepared.method = HTTPMethod(rawValue: request.httpMethod ?? "GET")
            for (name, value) in request.allHTTPHeaderFields ?? [:] {
                prepared.headers.add(name: name, value: value)
            }
            if let stream = request.httpBodyStream {
                let length = request.value(forHTTPHeaderField: "Content-Length").flatMap(Int64.init)
                prepared.body = .stream(InputStreamChunks(stream), length: length.map { .known($0) } ?? .unknown)
            } else if let body = request.httpBody {
                prepared.body = .bytes(ByteBuffer(bytes: body))
            }
            return prepared
        }

        /// The head of the client's response: its status and fields, in order.
        static func head(of response: HTTPClientResponse, url: URL) -> ResponseHead {
            ResponseHead(
                url: url, statusCode: Int(response.status.code),
                httpVersion: "HTTP/\(response.version.major).\(response.version.minor)",
                headerFields: response.headers.map { (name: $0.name, value: $0.value) })
        }

        /// The `URLError` (or `CancellationError`) that stands for a client error, or the error itself.
        /// Whether a handshake failed because the peer's certificate chain did not verify: BoringSSL's
        /// `CERTIFICATE_VERIFY_FAILED`, which swift-nio-ssl names only in its errors' descriptions.
        static func isCertificateFailure(_ failure: BoringSSLError) -> Bool {
            guard case .sslError(let stack) = failure else { return false }
            return stack.contains { $0.description.contains("CERTIFICATE_VERIFY_FAILED") }
        }

        static func mapped(_ error: any Error) -> any Error {
            if error is CancellationError { return error }
            if let error = error as? HTTPClientError {
                switch error {
                case .cancelled: return CancellationError()
                // No connection was made, so nothing was written.
                case .connectTimeout, .tlsHandshakeTimeout, .getConnectionFromPoolTimeout:
                    return URLError(.timedOut, userInfo: [beforeSendingKey: true])
                case .readTimeout, .writeTimeout, .deadlineExceeded:
                    return URLError(.timedOut)
                case .remoteConnectionClosed: return URLError(.networkConnectionLost)
                case .invalidURL, .emptyHost, .emptyScheme: return URLError(.badURL)
                default: return error
                }
            }
            if let error = error as? NIOConnectionError {
                // No connection was made: whatever the error of the first try, the request was not written.
                let code: URLError.Code =
                    if let first = error.connectionErrors.first {
                        (mapped(first.error) as? URLError)?.code ?? .cannotConnectToHost
                    } else if error.dnsAError != nil || error.dnsAAAAError != nil {
                        .cannotFindHost
                    } else {
                        .cannotConnectToHost
                    }
                return URLError(code, userInfo: [beforeSendingKey: true])
            }
            if let error = error as? IOError {
                switch error.errnoCode {
                // Only a connection attempt is refused: nothing was written.
                case ECONNREFUSED: return URLError(.cannotConnectToHost, userInfo: [beforeSendingKey: true])
                case ECONNRESET, EPIPE, ECONNABORTED: return URLError(.networkConnectionLost)
                case ETIMEDOUT: return URLError(.timedOut)
                case EHOSTUNREACH, ENETUNREACH: return URLError(.cannotConnectToHost)
                default: return error
                }
            }
            if let error = error as? ChannelError {
                switch error {
                case .connectTimeout: return URLError(.timedOut, userInfo: [beforeSendingKey: true])
                case .ioOnClosedChannel, .eof, .alreadyClosed, .outputClosed, .inputClosed:
                    return URLError(.networkConnectionLost)
                default: return error
                }
            }
            // A TLS handshake that failed (swift-nio-ssl holds the request's bytes until it ends): nothing was written. A
            // certificate that does not validate is `serverCertificateUntrusted`, as URLSession says on Apple platforms,
            // which no policy retries by default; swift-nio-ssl's error stays under `NSUnderlyingErrorKey`. An error
            // after the handshake (an unclean shutdown, a stall while writing) is passed on as it is.
            if let error = error as? NIOSSLError {
                let underlying: [String: Any] = [beforeSendingKey: true, NSUnderlyingErrorKey: error]
                switch error {
                case .handshakeFailed(let failure) where Self.isCertificateFailure(failure):
                    return URLError(.serverCertificateUntrusted, userInfo: underlying)
                case .handshakeFailed: return URLError(.secureConnectionFailed, userInfo: underlying)
                case .cannotMatchULabel, .noCertificateToValidate, .unableToValidateCertificate:
                    return URLError(.serverCertificateUntrusted, userInfo: underlying)
                default: return error
                }
            }
            if let error = error as? NIOSSLExtraError {
                let underlying: [String: Any] = [beforeSendingKey: true, NSUnderlyingErrorKey: error]
                switch error {
                case .failedToValidateHostname, .serverHostnameImpossibleToMatch:
                    return URLError(.serverCertificateUntrusted, userInfo: underlying)
                case .cannotUseIPAddressInSNI, .invalidSNIHostname:
                    return URLError(.secureConnectionFailed, userInfo: underlying)
                default: return error
                }
            }
            if let error = error as? HTTPParserError {
                // The connection closed before the response's end: what URLSession calls a lost connection.
                return error == .invalidEOFState ? URLError(.networkConnectionLost) : URLError(.badServerResponse)
            }
            return error
        }
    }

    /// The bytes of an `InputStream`, read chunk by chunk as the client asks for them.
    ///
    /// `@unchecked Sendable`: the stream is read only by the iterator the client makes, which it drives from one task
    /// at a time; nothing else touches it.
    private struct InputStreamChunks: AsyncSequence, @unchecked Sendable {
        typealias Element = ByteBuffer
        let stream: InputStream

        init(_ stream: InputStream) { self.stream = stream }

        func makeAsyncIterator() -> Iterator { Iterator(stream: stream) }

        struct Iterator: AsyncIteratorProtocol {
            let stream: InputStream
            var opened = false

            mutating func next() async throws -> ByteBuffer? {
                if !opened {
                    stream.open()
                    opened = true
                }
                var buffer = [UInt8](repeating: 0, count: 16 * 1024)
                let count = stream.read(&buffer, maxLength: buffer.count)
                if count < 0 { throw stream.streamError ?? URLError(.cannotDecodeRawData) }
                if count == 0 {
                    stream.close()
                    return nil
                }
                return ByteBuffer(bytes: buffer[..<count])
            }
        }
    }
#endif
