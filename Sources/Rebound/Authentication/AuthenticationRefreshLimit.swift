/// How many refreshes an ``AuthenticationInterceptor`` allows within a window of time.
public struct AuthenticationRefreshLimit: Sendable, Equatable {
    /// The default limit: 5 refreshes in 30 seconds.
    public static let `default` = AuthenticationRefreshLimit(checkedMaximumCount: 5, window: .seconds(30))

    /// The most refreshes allowed within ``window``; `5` by default.
    public let maximumCount: Int
    /// The window; 30 seconds by default.
    public let window: Duration

    /// Creates a limit of `maximumCount` refreshes (at least 1) within `window` (longer than zero).
    ///
    /// - Throws: ``ConfigurationError`` naming the invalid setting.
    public init(maximumCount: Int, window: Duration) throws(ConfigurationError) {
        guard maximumCount >= 1 else {
            throw ConfigurationError(
                "AuthenticationInterceptor refresh limit must allow at least 1 refresh, got \(maximumCount)")
        }
        guard window > .zero else {
            throw ConfigurationError(
                "AuthenticationInterceptor refresh window must be longer than zero, got \(window)")
        }
        self.init(checkedMaximumCount: maximumCount, window: window)
    }

    private init(checkedMaximumCount: Int, window: Duration) {
        self.maximumCount = checkedMaximumCount
        self.window = window
    }
}
