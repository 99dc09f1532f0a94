import Foundation
import FuzzDriver
import Rebound

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

private let retrier = JSONBodyRetrier(path: "error.code", values: ["busy", 503, true])
private let deep = JSONBodyRetrier(maximumDepth: JSONBodyRetrier.maximumDepthLimit) { $0["retry"] == true }
private let url = URL(string: "https://fuzz.invalid/")!

/// A response body through the JSON-body matcher, at the default depth and at the deepest allowed: a match or no
/// match, never a crash, a hang or unbounded memory.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let body = Data(bytes: start, count: count)
    let context = RequestContext()
    // Made for each input: the matcher reads only the body, and a head held in a global reads as a leak to the address
    // sanitizer's leak check.
    let response = ResponseHead(
        url: url, statusCode: 200, headerFields: [(name: "Content-Type", value: "application/json")])
    _ = try? retrier.validate(response, data: body, context: context)
    _ = try? deep.validate(response, data: body, context: context)
    return 0
}

/// The entry point SwiftPM links the executable with.
@_cdecl("FuzzJSONBody_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { start, count in fuzz(UnsafeRawPointer(start!), count) }
}
