#if OpenAPI
    import Foundation
    import HTTPTypes
    import OpenAPIRuntime
    import Rebound

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    /// The conversions between swift-http-types' values, which generated clients speak, and Foundation's, which a
    /// Rebound session speaks.
    enum Conversions {
        /// The URL `request` is sent to: the base URL followed by the request's path (which carries the query).
        static func url(of request: HTTPRequest, baseURL: URL) throws -> URL {
            let base = prefix(of: baseURL)
            let path = request.path ?? ""
            guard let url = URL(string: base + (path.hasPrefix("/") || path.isEmpty ? path : "/" + path)) else {
                throw URLError(.badURL)
            }
            return url
        }

        /// The `URLRequest` for `request` at `url`, with its method and header fields; no body.
        static func urlRequest(for request: HTTPRequest, at url: URL) -> URLRequest {
            var urlRequest = URLRequest(url: url)
            urlRequest.httpMethod = request.method.rawValue
            for field in request.headerFields {
                urlRequest.addValue(field.value, forHTTPHeaderField: field.name.rawName)
            }
            return urlRequest
        }

        /// The request and base URL to hand a generated client's transport for `urlRequest`, whose URL began as
        /// `baseURL` followed by a path: an adapter may have changed its headers, its query or (rarely) its host.
        static func httpRequest(for urlRequest: URLRequest, baseURL: URL) throws -> (HTTPRequest, URL) {
            guard let url = urlRequest.url, let method = HTTPRequest.Method(urlRequest.httpMethod ?? "GET") else {
                throw URLError(.badURL)
            }
            let base = prefix(of: baseURL)
            let absolute = url.absoluteString
            let (sendBase, path): (URL, String)
            if absolute.hasPrefix(base), let same = URL(string: base) {
                (sendBase, path) = (same, String(absolute.dropFirst(base.count)))
            } else {
                var components = URLComponents(url: url, resolvingAgainstBaseURL: false) ?? URLComponents()
                let query = components.percentEncodedQuery.map { "?" + $0 } ?? ""
                let pathOnly = components.percentEncodedPath
                components.percentEncodedPath = ""
                components.percentEncodedQuery = nil
                components.fragment = nil
                guard let origin = components.url else { throw URLError(.badURL) }
                (sendBase, path) = (origin, pathOnly + query)
            }
            var fields = HTTPFields()
            for (name, value) in urlRequest.allHTTPHeaderFields ?? [:] {
                guard let name = HTTPField.Name(name) else { continue }
                fields.append(HTTPField(name: name, value: value))
            }
            let request = HTTPRequest(
                method: method, scheme: nil, authority: nil, path: path.isEmpty ? "/" : path, headerFields: fields)
            return (request, sendBase)
        }

        /// The base URL as the start of its requests' URLs: its text without trailing slashes.
        private static func prefix(of baseURL: URL) -> String {
            var base = baseURL.absoluteString
            while base.hasSuffix("/") { base.removeLast() }
            return base
        }

        /// The head of a generated client's response to `url`: its status and fields, in order, with no
        /// `HTTPURLResponse` built.
        static func head(of response: HTTPResponse, url: URL) -> ResponseHead {
            ResponseHead(
                url: url, statusCode: response.status.code,
                headerFields: response.headerFields.map { (name: $0.name.canonicalName, value: $0.value) })
        }

        /// The response a generated client reads, for a session's response: its fields in order (as the server sent
        /// them, when the transport said so), repeated fields kept apart.
        static func httpResponse(for head: ResponseHead, data: Data?) -> (HTTPResponse, HTTPBody?) {
            var fields = HTTPFields()
            for (name, value) in head.headerFields {
                guard let name = HTTPField.Name(name) else { continue }
                fields.append(HTTPField(name: name, value: value))
            }
            let response = HTTPResponse(status: .init(code: head.statusCode), headerFields: fields)
            return (response, data.map { HTTPBody($0) } ?? HTTPBody())
        }
    }
#endif
