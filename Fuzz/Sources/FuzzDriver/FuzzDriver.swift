/// The signature of a libFuzzer test function: the input's bytes and their count in, 0 out.
public typealias FuzzTest = @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt

/// Hands over to libFuzzer's driver with `test`: what each target's entry point calls.
///
/// SwiftPM links an executable with `main` as an alias of `<Target>_main`, so libFuzzer's own `main` is not used;
/// each target defines that symbol and calls this.
public func runFuzzer(
    _ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ test: FuzzTest
) -> CInt {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv, test)
}

@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ test: FuzzTest
) -> CInt
