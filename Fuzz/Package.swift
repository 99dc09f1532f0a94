// swift-tools-version: 6.0
import PackageDescription

// libFuzzer targets for Rebound's parsers of untrusted input. Built and run by `Fuzz/run` with
// `-sanitize=fuzzer,address` passed on the command line (never in a manifest); see Fuzz/README.md.
let package = Package(
    name: "Fuzz",
    platforms: [.macOS(.v13)],
    dependencies: [
        // `name:` pins the root's identity, which would otherwise be the checkout folder's name.
        .package(name: "Rebound", path: "../")
    ],
    targets: [
        // The entry point every target hands over to libFuzzer's driver with.
        .target(name: "FuzzDriver"),
        .executableTarget(
            name: "FuzzRetryAfter", dependencies: ["FuzzDriver", .product(name: "Rebound", package: "Rebound")]),
        .executableTarget(
            name: "FuzzJSONBody", dependencies: ["FuzzDriver", .product(name: "Rebound", package: "Rebound")]),
        .executableTarget(
            name: "FuzzHTTPRequest", dependencies: ["FuzzDriver", .product(name: "ReboundTesting", package: "Rebound")]),
    ],
    swiftLanguageModes: [.v6]
)
