import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension URLError.Code {
    /// The Swift name of common codes, for readable logs; `nil` for codes not listed.
    var name: String? {
        switch self {
        case .unknown: "unknown"
        case .cancelled: "cancelled"
        case .badURL: "badURL"
        case .timedOut: "timedOut"
        case .unsupportedURL: "unsupportedURL"
        case .cannotFindHost: "cannotFindHost"
        case .cannotConnectToHost: "cannotConnectToHost"
        case .networkConnectionLost: "networkConnectionLost"
        case .dnsLookupFailed: "dnsLookupFailed"
        case .httpTooManyRedirects: "httpTooManyRedirects"
        case .resourceUnavailable: "resourceUnavailable"
        case .notConnectedToInternet: "notConnectedToInternet"
        case .badServerResponse: "badServerResponse"
        case .userAuthenticationRequired: "userAuthenticationRequired"
        case .cannotDecodeContentData: "cannotDecodeContentData"
        case .cannotParseResponse: "cannotParseResponse"
        case .secureConnectionFailed: "secureConnectionFailed"
        case .serverCertificateUntrusted: "serverCertificateUntrusted"
        case .cannotLoadFromNetwork: "cannotLoadFromNetwork"
        default: nil
        }
    }

    /// `URLError -1011 (badServerResponse)`, or `URLError <code>` for codes without a listed name.
    var logDescription: String {
        name.map { "URLError \(rawValue) (\($0))" } ?? "URLError \(rawValue)"
    }
}
