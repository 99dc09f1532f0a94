/// How many refreshes an ``AuthenticationInterceptor`` allows within a window of time.
///
/// Every refresh started counts, whether it succeeds, fails or times out: a refresh that timed out may still be
/// running at the token server (its late result is only dropped), so not counting it would let a slow server be sent
/// a new refresh at every time limit.
public struct AuthenticationRefreshLimit: Sendable, Equatable {
    /// The default limit: 5 refreshes in 30 seconds.
    public static let `default` = AuthenticationRefreshLimit(checkedMaximumCount: 5, window: .seconds(30))

    /// The most refreshes allowed within ``window``; `5` by default.
    public let maximumCount: Int
    /// The window; 30 seconds by default.
    public let window: Duration

    /// Creates a limit of `maximumCount` refreshes within `window`, written in code; an invalid setting traps.
    ///
    /// An invalid setting is a programming error; the trap's message names it, for example
    /// `AuthenticationRefreshLimit.maximumCount must be at least 1, got 0`. For settings that arrive at run time, use
    /// ``validated(maximumCount:window:)``, which throws instead.
    ///
    /// - Parameters:
    ///   - maximumCount: The most refreshes allowed within `window`, at least 1.
    ///   - window: The window, longer than zero.
    public init(maximumCount: Int, window: Duration) {
        ConfigurationError.trapIfInvalid { () throws(ConfigurationError) in
            try Self.check(maximumCount: maximumCount, window: window)
        }
        self.init(checkedMaximumCount: maximumCount, window: window)
    }

    /// Creates a limit from settings that arrive at run time, throwing when one is invalid.
    ///
    /// The parameters and what is valid are those of ``init(maximumCount:window:)``.
    ///
    /// - Throws: ``ConfigurationError`` naming the first invalid setting.
    public static func validated(maximumCount: Int, window: Duration) throws(ConfigurationError)
        -> AuthenticationRefreshLimit
    {
        try check(maximumCount: maximumCount, window: window)
        return AuthenticationRefreshLimit(checkedMaximumCount: maximumCount, window: window)
    }

    /// Throws a ``ConfigurationError`` for the first invalid setting.
    private static func check(maximumCount: Int, window: Duration) throws(ConfigurationError) {
        guard maximumCount >= 1 else {
            throw ConfigurationError(
                field: "AuthenticationRefreshLimit.maximumCount", problem: "must be at least 1, got \(maximumCount)")
        }
        guard window > .zero else {
            throw ConfigurationError(
                field: "AuthenticationRefreshLimit.window", problem: "must be longer than zero, got \(window)")
        }
    }

    private init(checkedMaximumCount: Int, window: Duration) {
        self.maximumCount = checkedMaximumCount
        self.window = window
    }
}
