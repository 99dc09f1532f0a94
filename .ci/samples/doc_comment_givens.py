"""What the samples of the `///` documentation comments leave to the reader, for .ci/samples/run.

A sample in a documentation comment shows a symbol in use, inside code the reader already has: the check supplies the
imports a file of that module would have (Foundation, Rebound, the module itself; Testing where the sample uses
`#expect`), and the names below, each keyed by the sample's file and its first line. A sample that changes its first
line fails the check until its entry here is updated; a sample that only compiles on Apple platforms is listed in
SKIPPED, with why.
"""

URL = 'let url = URL(string: "https://api.example.com/items")!'
REQUEST = 'let request = URLRequest(url: URL(string: "https://api.example.com/items")!)'
SESSION = "let session = Session()"
EMPTY_BODY = "struct EmptyBody: Error {}"
OPENAPI_CLIENT = [
    "struct Client { init(serverURL: URL, transport: any ClientTransport, middlewares: [any ClientMiddleware] = []) {} }",
    'enum Servers { enum Server1 { static func url() throws -> URL { URL(string: "https://api.example.com")! } } }',
]

# (file, first line of the sample) -> (given declarations, extra imports)
GIVENS = {
    ("Sources/ReboundTesting/FastForwardClock.swift", "let clock = FastForwardClock()"): ([URL], []),
    ("Sources/ReboundTesting/RefusedPort.swift", "let down = try RefusedPort()"): ([SESSION], []),
    ("Sources/ReboundTesting/ManualClock.swift", "let clock = ManualClock()"): (
        ["let transport = ScriptedTransport([.status(503), .status(200)])", REQUEST], ["ReboundTesting"]),
    ("Sources/ReboundTesting/LoopbackServer.swift", "let server = try LoopbackServer()"): ([SESSION], []),
    ("Sources/Rebound/Authentication/Authenticator.swift", "struct OAuth: Authenticator {"): (
        [
            "struct Token: AuthenticationCredential { let access: String; let refresh: String; "
            "var requiresRefresh: Bool { false } }",
            "struct TokenService: Sendable { func refresh(using token: String) async throws -> Token "
            '{ Token(access: "a", refresh: token) } }',
        ],
        [],
    ),
    ("Sources/Rebound/Adapt/RequestAdapter.swift", "let upload = Adapter.bodyStream { InputStream(url: fileURL)! }"): (
        ['let fileURL = URL(fileURLWithPath: "/tmp/upload.bin")', SESSION, REQUEST], []),
    ("Sources/Rebound/Adapt/RequestAdapter.swift", "let auth = Adapter.modifying { request, _ in"): (
        ['let token = "token"'], []),
    ("Sources/Rebound/Session/Session.swift", "let session = Session("): (
        ['let token = "token"', "struct Item: Decodable {}"], []),
    ("Sources/Rebound/Errors/ReboundError.swift", "do {"): ([SESSION, REQUEST, "func showMaintenancePage() {}"], []),
    ("Sources/Rebound/Observe/StopReason.swift", "do {"): ([SESSION, REQUEST], []),
    (
        "Sources/Rebound/Errors/ReboundError.swift",
        "if let persisted = error.retrierError as? JSONBodyRetrier.SignalPersisted { showBusyBanner(persisted.signal) }",
    ): (
        [
            "let error = ReboundError(reason: .unacceptableStatusCode(503), "
            'originalRequest: URLRequest(url: URL(string: "https://api.example.com")!))',
            "func showBusyBanner(_ signal: JSONBodyRetrier.Signal) {}",
        ],
        [],
    ),
    ("Sources/Rebound/Validate/Validator.swift", "let session = Session(validator: .successfulStatusCodes.and { response, data in"): (
        [EMPTY_BODY], []),
    (
        "Sources/Rebound/Validate/ResponseValidator.swift",
        "let validator = Validator.successfulStatusCodes.and { response, data, context in",
    ): ([EMPTY_BODY], []),
    ("Sources/Rebound/Send/HTTPTransport.swift", "struct OtherClientTransport: HTTPTransport {"): (
        [
            "struct OtherClient: Sendable { func fetch(_ request: URLRequest) async throws -> "
            "(status: Int, fields: [(name: String, value: String)], body: Data) { (200, [], Data()) } }",
        ],
        [],
    ),
    ("Sources/Rebound/Backoff/Retry.swift", "let (data, _) = try await retry(maxAttempts: 5) {"): ([URL], []),
    ("Sources/ReboundLogging/CircuitBreaker+Logger.swift", "let transitions = registry.transitions()"): (
        ["let registry = CircuitBreakerRegistry()", 'let logger = Logger(label: "app")'], ["Logging"]),
    ("Sources/ReboundOpenAPI/ReboundMiddleware.swift", "let client = Client("): (
        OPENAPI_CLIENT, ["OpenAPIRuntime", "OpenAPIURLSession"]),
    (
        "Sources/ReboundOpenAPI/ReboundTransport.swift",
        "let session = Session(adapters: [CircuitBreakerRegistry()], retriers: [RetryPolicy()], attemptTimeout: .seconds(10))",
    ): (OPENAPI_CLIENT, ["OpenAPIRuntime"]),
}

SKIPPED = {
    (
        "Sources/Rebound/Logging/LoggingRetrier+OSLog.swift",
        'let logger = os.Logger(subsystem: "com.example.app", category: "http")',
    ): "os.Logger exists on Apple platforms only",
}
