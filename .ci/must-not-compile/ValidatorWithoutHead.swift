// Must not compile: a validator implements `validate` on a `ResponseHead`, its one requirement; the `HTTPURLResponse`
// form is a convenience for callers. Expected error: "does not conform to protocol 'ResponseValidator'".
import Foundation
import Rebound

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

struct HeaderValidator: ResponseValidator {
    func validate(_ response: HTTPURLResponse, data: Data, context: RequestContext) throws {}
}
