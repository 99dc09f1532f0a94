import Foundation
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

/// The entry point SwiftPM links an executable with (`main` is made an alias of it): hands over to libFuzzer's
/// driver with this target's test function.
@_cdecl("FuzzJSONBody_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv) { start, count in
        fuzz(UnsafeRawPointer(start!), count)
    }
}

@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ test: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt
