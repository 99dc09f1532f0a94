@_spi(Fuzzing) import ReboundTesting

/// Bytes a client sent to the loopback server, parsed request after request: never a crash or a loop.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    _ = parseRequestsForFuzzing(bytes)
    return 0
}

/// The entry point SwiftPM links an executable with (`main` is made an alias of it): hands over to libFuzzer's
/// driver with this target's test function.
@_cdecl("FuzzHTTPRequest_main")
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
