import Foundation
import FuzzDriver
import Rebound

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

private let retrier = JSONBodyRetrier(path: "error.code", values: ["busy", 503, true])
private let deep = JSONBodyRetrier(maximumDepth: JSONBodyRetrier.maximumDepthLimit) { $0["retry"] == true }
private let response = HTTPURLResponse(
    url: URL(string: "https://fuzz.invalid/")!, statusCode: 200, httpVersion: nil,
    headerFields: ["Content-Type": "application/json"])!

/// A response body through the JSON-body matcher, at the default depth and at the deepest allowed: a match or no
/// match, never a crash, a hang or unbounded memory.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let body = Data(bytes: start, count: count)
    let context = RequestContext()
    _ = try? retrier.validate(response, data: body, context: context)
    _ = try? deep.validate(response, data: body, context: context)
    return 0
}

/// The entry point SwiftPM links the executable with.
@_cdecl("FuzzJSONBody_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { start, count in fuzz(UnsafeRawPointer(start!), count) }
}
