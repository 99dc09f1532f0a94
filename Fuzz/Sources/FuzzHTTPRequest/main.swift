import FuzzDriver
@_spi(Fuzzing) import ReboundTesting

/// Bytes a client sent to the loopback server, parsed request after request: never a crash or a loop.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    _ = parseRequestsForFuzzing(bytes)
    return 0
}

/// The entry point SwiftPM links the executable with.
@_cdecl("FuzzHTTPRequest_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { start, count in fuzz(UnsafeRawPointer(start!), count) }
}
