import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// The overloads of RetryPolicy's initializer and factories for a backoff given as it is rather than as an optional.
// With the optional parameter alone, `backoff: .none` would be `Optional.none`, the default backoff; with these, the
// compiler prefers the parameter that is not optional, so `.none` is `BackoffStrategy.none`, no delay, as
// swift-concurrency-retry spells it. `nil`, an optional value, or no argument at all still reaches the optional
// parameter. One overload per parameter and one for both: with only the first two, a call giving both backoffs (each
// matching one overload with one optional promotion) would be ambiguous. Each forwards with `Optional(_:)`, so that it
// does not call itself.
//
// For the initializer that is enough. For the functions (`validated`, `.retryPolicy`) the compiler finds `.none`
// ambiguous between `Optional.none` and `BackoffStrategy.none` unless the optional overload is disfavoured, which it
// is; even so, `.none` beside another backoff written as a strategy (`backoff: .none, throttlingBackoff: .zero`) is
// ambiguous there, a compile error rather than `nil`: `.zero` is the spelling that works everywhere.

extension RetryPolicy {
    /// Creates a policy from settings written in code with `backoff` as it is, so that `.none` is no delay; an invalid
    /// setting traps.
    ///
    /// The parameters, their defaults and what is valid are those of
    /// ``init(retryLimit:exponentialBackoffBase:exponentialBackoffScale:retryableHTTPMethods:retryableHTTPStatusCodes:retryableURLErrorCodes:backoff:retryAfter:throttlingBackoff:stopsAfterRepeatedFailure:unsentRetryLimit:)-(_,_,_,_,_,_,BackoffStrategy?,_,BackoffStrategy?,_,_)``.
    public init(
        retryLimit: Int = defaultRetryLimit,
        exponentialBackoffBase: Int = defaultExponentialBackoffBase,
        exponentialBackoffScale: Double = defaultExponentialBackoffScale,
        retryableHTTPMethods: Set<HTTPMethod> = defaultRetryableHTTPMethods,
        retryableHTTPStatusCodes: Set<Int> = defaultRetryableHTTPStatusCodes,
        retryableURLErrorCodes: Set<URLError.Code> = defaultRetryableURLErrorCodes,
        backoff: BackoffStrategy,
        retryAfter: RetryAfter = .default,
        throttlingBackoff: BackoffStrategy? = nil,
        stopsAfterRepeatedFailure: Bool = false,
        unsentRetryLimit: Int = 0
    ) {
        self.init(
            retryLimit: retryLimit, exponentialBackoffBase: exponentialBackoffBase,
            exponentialBackoffScale: exponentialBackoffScale, retryableHTTPMethods: retryableHTTPMethods,
            retryableHTTPStatusCodes: retryableHTTPStatusCodes, retryableURLErrorCodes: retryableURLErrorCodes,
            backoff: Optional(backoff), retryAfter: retryAfter, throttlingBackoff: throttlingBackoff,
            stopsAfterRepeatedFailure: stopsAfterRepeatedFailure, unsentRetryLimit: unsentRetryLimit)
    }

    /// Creates a policy from settings written in code with `throttlingBackoff` as it is, so that `.none` is no delay
    /// after a 429; an invalid setting traps.
    ///
    /// The parameters, their defaults and what is valid are those of
    /// ``init(retryLimit:exponentialBackoffBase:exponentialBackoffScale:retryableHTTPMethods:retryableHTTPStatusCodes:retryableURLErrorCodes:backoff:retryAfter:throttlingBackoff:stopsAfterRepeatedFailure:unsentRetryLimit:)-(_,_,_,_,_,_,BackoffStrategy?,_,BackoffStrategy?,_,_)``.
    public init(
        retryLimit: Int = defaultRetryLimit,
        exponentialBackoffBase: Int = defaultExponentialBackoffBase,
        exponentialBackoffScale: Double = defaultExponentialBackoffScale,
        retryableHTTPMethods: Set<HTTPMethod> = defaultRetryableHTTPMethods,
        retryableHTTPStatusCodes: Set<Int> = defaultRetryableHTTPStatusCodes,
        retryableURLErrorCodes: Set<URLError.Code> = defaultRetryableURLErrorCodes,
        backoff: BackoffStrategy? = nil,
        retryAfter: RetryAfter = .default,
        throttlingBackoff: BackoffStrategy,
        stopsAfterRepeatedFailure: Bool = false,
        unsentRetryLimit: Int = 0
    ) {
        self.init(
            retryLimit: retryLimit, exponentialBackoffBase: exponentialBackoffBase,
            exponentialBackoffScale: exponentialBackoffScale, retryableHTTPMethods: retryableHTTPMethods,
            retryableHTTPStatusCodes: retryableHTTPStatusCodes, retryableURLErrorCodes: retryableURLErrorCodes,
            backoff: backoff, retryAfter: retryAfter, throttlingBackoff: Optional(throttlingBackoff),
            stopsAfterRepeatedFailure: stopsAfterRepeatedFailure, unsentRetryLimit: unsentRetryLimit)
    }

    /// Creates a policy from settings written in code with both backoffs as they are, so that `.none` is no delay;
    /// an invalid setting traps.
    ///
    /// The parameters, their defaults and what is valid are those of
    /// ``init(retryLimit:exponentialBackoffBase:exponentialBackoffScale:retryableHTTPMethods:retryableHTTPStatusCodes:retryableURLErrorCodes:backoff:retryAfter:throttlingBackoff:stopsAfterRepeatedFailure:unsentRetryLimit:)-(_,_,_,_,_,_,BackoffStrategy?,_,BackoffStrategy?,_,_)``.
    public init(
        retryLimit: Int = defaultRetryLimit,
        exponentialBackoffBase: Int = defaultExponentialBackoffBase,
        exponentialBackoffScale: Double = defaultExponentialBackoffScale,
        retryableHTTPMethods: Set<HTTPMethod> = defaultRetryableHTTPMethods,
        retryableHTTPStatusCodes: Set<Int> = defaultRetryableHTTPStatusCodes,
        retryableURLErrorCodes: Set<URLError.Code> = defaultRetryableURLErrorCodes,
        backoff: BackoffStrategy,
        retryAfter: RetryAfter = .default,
        throttlingBackoff: BackoffStrategy,
        stopsAfterRepeatedFailure: Bool = false,
        unsentRetryLimit: Int = 0
    ) {
        self.init(
            retryLimit: retryLimit, exponentialBackoffBase: exponentialBackoffBase,
            exponentialBackoffScale: exponentialBackoffScale, retryableHTTPMethods: retryableHTTPMethods,
            retryableHTTPStatusCodes: retryableHTTPStatusCodes, retryableURLErrorCodes: retryableURLErrorCodes,
            backoff: Optional(backoff), retryAfter: retryAfter, throttlingBackoff: Optional(throttlingBackoff),
            stopsAfterRepeatedFailure: stopsAfterRepeatedFailure, unsentRetryLimit: unsentRetryLimit)
    }

    /// Creates a policy from settings that arrive at run time with `backoff` as it is, so that `.none` is no delay,
    /// throwing when one is invalid.
    ///
    /// The parameters, their defaults and what is valid are those of
    /// ``init(retryLimit:exponentialBackoffBase:exponentialBackoffScale:retryableHTTPMethods:retryableHTTPStatusCodes:retryableURLErrorCodes:backoff:retryAfter:throttlingBackoff:stopsAfterRepeatedFailure:unsentRetryLimit:)-(_,_,_,_,_,_,BackoffStrategy?,_,BackoffStrategy?,_,_)``.
    ///
    /// - Throws: ``ConfigurationError`` naming the first invalid setting.
    public static func validated(
        retryLimit: Int = defaultRetryLimit,
        exponentialBackoffBase: Int = defaultExponentialBackoffBase,
        exponentialBackoffScale: Double = defaultExponentialBackoffScale,
        retryableHTTPMethods: Set<HTTPMethod> = defaultRetryableHTTPMethods,
        retryableHTTPStatusCodes: Set<Int> = defaultRetryableHTTPStatusCodes,
        retryableURLErrorCodes: Set<URLError.Code> = defaultRetryableURLErrorCodes,
        backoff: BackoffStrategy,
        retryAfter: RetryAfter = .default,
        throttlingBackoff: BackoffStrategy? = nil,
        stopsAfterRepeatedFailure: Bool = false,
        unsentRetryLimit: Int = 0
    ) throws(ConfigurationError) -> RetryPolicy {
        try validated(
            retryLimit: retryLimit, exponentialBackoffBase: exponentialBackoffBase,
            exponentialBackoffScale: exponentialBackoffScale, retryableHTTPMethods: retryableHTTPMethods,
            retryableHTTPStatusCodes: retryableHTTPStatusCodes, retryableURLErrorCodes: retryableURLErrorCodes,
            backoff: Optional(backoff), retryAfter: retryAfter, throttlingBackoff: throttlingBackoff,
            stopsAfterRepeatedFailure: stopsAfterRepeatedFailure, unsentRetryLimit: unsentRetryLimit)
    }

    /// Creates a policy from settings that arrive at run time with `throttlingBackoff` as it is, so that `.none` is no
    /// delay after a 429, throwing when one is invalid.
    ///
    /// The parameters, their defaults and what is valid are those of
    /// ``init(retryLimit:exponentialBackoffBase:exponentialBackoffScale:retryableHTTPMethods:retryableHTTPStatusCodes:retryableURLErrorCodes:backoff:retryAfter:throttlingBackoff:stopsAfterRepeatedFailure:unsentRetryLimit:)-(_,_,_,_,_,_,BackoffStrategy?,_,BackoffStrategy?,_,_)``.
    ///
    /// - Throws: ``ConfigurationError`` naming the first invalid setting.
    public static func validated(
        retryLimit: Int = defaultRetryLimit,
        exponentialBackoffBase: Int = defaultExponentialBackoffBase,
        exponentialBackoffScale: Double = defaultExponentialBackoffScale,
        retryableHTTPMethods: Set<HTTPMethod> = defaultRetryableHTTPMethods,
        retryableHTTPStatusCodes: Set<Int> = defaultRetryableHTTPStatusCodes,
        retryableURLErrorCodes: Set<URLError.Code> = defaultRetryableURLErrorCodes,
        backoff: BackoffStrategy? = nil,
        retryAfter: RetryAfter = .default,
        throttlingBackoff: BackoffStrategy,
        stopsAfterRepeatedFailure: Bool = false,
        unsentRetryLimit: Int = 0
    ) throws(ConfigurationError) -> RetryPolicy {
        try validated(
            retryLimit: retryLimit, exponentialBackoffBase: exponentialBackoffBase,
            exponentialBackoffScale: exponentialBackoffScale, retryableHTTPMethods: retryableHTTPMethods,
            retryableHTTPStatusCodes: retryableHTTPStatusCodes, retryableURLErrorCodes: retryableURLErrorCodes,
            backoff: backoff, retryAfter: retryAfter, throttlingBackoff: Optional(throttlingBackoff),
            stopsAfterRepeatedFailure: stopsAfterRepeatedFailure, unsentRetryLimit: unsentRetryLimit)
    }

    /// Creates a policy from settings that arrive at run time with both backoffs as they are, so that `.none` is no
    /// delay, throwing when one is invalid.
    ///
    /// The parameters, their defaults and what is valid are those of
    /// ``init(retryLimit:exponentialBackoffBase:exponentialBackoffScale:retryableHTTPMethods:retryableHTTPStatusCodes:retryableURLErrorCodes:backoff:retryAfter:throttlingBackoff:stopsAfterRepeatedFailure:unsentRetryLimit:)-(_,_,_,_,_,_,BackoffStrategy?,_,BackoffStrategy?,_,_)``.
    ///
    /// - Throws: ``ConfigurationError`` naming the first invalid setting.
    public static func validated(
        retryLimit: Int = defaultRetryLimit,
        exponentialBackoffBase: Int = defaultExponentialBackoffBase,
        exponentialBackoffScale: Double = defaultExponentialBackoffScale,
        retryableHTTPMethods: Set<HTTPMethod> = defaultRetryableHTTPMethods,
        retryableHTTPStatusCodes: Set<Int> = defaultRetryableHTTPStatusCodes,
        retryableURLErrorCodes: Set<URLError.Code> = defaultRetryableURLErrorCodes,
        backoff: BackoffStrategy,
        retryAfter: RetryAfter = .default,
        throttlingBackoff: BackoffStrategy,
        stopsAfterRepeatedFailure: Bool = false,
        unsentRetryLimit: Int = 0
    ) throws(ConfigurationError) -> RetryPolicy {
        try validated(
            retryLimit: retryLimit, exponentialBackoffBase: exponentialBackoffBase,
            exponentialBackoffScale: exponentialBackoffScale, retryableHTTPMethods: retryableHTTPMethods,
            retryableHTTPStatusCodes: retryableHTTPStatusCodes, retryableURLErrorCodes: retryableURLErrorCodes,
            backoff: Optional(backoff), retryAfter: retryAfter, throttlingBackoff: Optional(throttlingBackoff),
            stopsAfterRepeatedFailure: stopsAfterRepeatedFailure, unsentRetryLimit: unsentRetryLimit)
    }
}

extension RequestRetrier where Self == RetryPolicy {
    /// A ``RetryPolicy`` with the settings given and `backoff` as it is, so that `.none` is no delay, which traps on
    /// an invalid setting.
    public static func retryPolicy(
        retryLimit: Int = RetryPolicy.defaultRetryLimit,
        exponentialBackoffBase: Int = RetryPolicy.defaultExponentialBackoffBase,
        exponentialBackoffScale: Double = RetryPolicy.defaultExponentialBackoffScale,
        retryableHTTPMethods: Set<HTTPMethod> = RetryPolicy.defaultRetryableHTTPMethods,
        retryableHTTPStatusCodes: Set<Int> = RetryPolicy.defaultRetryableHTTPStatusCodes,
        retryableURLErrorCodes: Set<URLError.Code> = RetryPolicy.defaultRetryableURLErrorCodes,
        backoff: BackoffStrategy,
        retryAfter: RetryAfter = .default,
        throttlingBackoff: BackoffStrategy? = nil,
        stopsAfterRepeatedFailure: Bool = false,
        unsentRetryLimit: Int = 0
    ) -> RetryPolicy {
        RetryPolicy(
            retryLimit: retryLimit, exponentialBackoffBase: exponentialBackoffBase,
            exponentialBackoffScale: exponentialBackoffScale, retryableHTTPMethods: retryableHTTPMethods,
            retryableHTTPStatusCodes: retryableHTTPStatusCodes, retryableURLErrorCodes: retryableURLErrorCodes,
            backoff: Optional(backoff), retryAfter: retryAfter, throttlingBackoff: throttlingBackoff,
            stopsAfterRepeatedFailure: stopsAfterRepeatedFailure, unsentRetryLimit: unsentRetryLimit)
    }

    /// A ``RetryPolicy`` with the settings given and `throttlingBackoff` as it is, so that `.none` is no delay after a
    /// 429, which traps on an invalid setting.
    public static func retryPolicy(
        retryLimit: Int = RetryPolicy.defaultRetryLimit,
        exponentialBackoffBase: Int = RetryPolicy.defaultExponentialBackoffBase,
        exponentialBackoffScale: Double = RetryPolicy.defaultExponentialBackoffScale,
        retryableHTTPMethods: Set<HTTPMethod> = RetryPolicy.defaultRetryableHTTPMethods,
        retryableHTTPStatusCodes: Set<Int> = RetryPolicy.defaultRetryableHTTPStatusCodes,
        retryableURLErrorCodes: Set<URLError.Code> = RetryPolicy.defaultRetryableURLErrorCodes,
        backoff: BackoffStrategy? = nil,
        retryAfter: RetryAfter = .default,
        throttlingBackoff: BackoffStrategy,
        stopsAfterRepeatedFailure: Bool = false,
        unsentRetryLimit: Int = 0
    ) -> RetryPolicy {
        RetryPolicy(
            retryLimit: retryLimit, exponentialBackoffBase: exponentialBackoffBase,
            exponentialBackoffScale: exponentialBackoffScale, retryableHTTPMethods: retryableHTTPMethods,
            retryableHTTPStatusCodes: retryableHTTPStatusCodes, retryableURLErrorCodes: retryableURLErrorCodes,
            backoff: backoff, retryAfter: retryAfter, throttlingBackoff: Optional(throttlingBackoff),
            stopsAfterRepeatedFailure: stopsAfterRepeatedFailure, unsentRetryLimit: unsentRetryLimit)
    }

    /// A ``RetryPolicy`` with the settings given and both backoffs as they are, so that `.none` is no delay, which
    /// traps on an invalid setting.
    public static func retryPolicy(
        retryLimit: Int = RetryPolicy.defaultRetryLimit,
        exponentialBackoffBase: Int = RetryPolicy.defaultExponentialBackoffBase,
        exponentialBackoffScale: Double = RetryPolicy.defaultExponentialBackoffScale,
        retryableHTTPMethods: Set<HTTPMethod> = RetryPolicy.defaultRetryableHTTPMethods,
        retryableHTTPStatusCodes: Set<Int> = RetryPolicy.defaultRetryableHTTPStatusCodes,
        retryableURLErrorCodes: Set<URLError.Code> = RetryPolicy.defaultRetryableURLErrorCodes,
        backoff: BackoffStrategy,
        retryAfter: RetryAfter = .default,
        throttlingBackoff: BackoffStrategy,
        stopsAfterRepeatedFailure: Bool = false,
        unsentRetryLimit: Int = 0
    ) -> RetryPolicy {
        RetryPolicy(
            retryLimit: retryLimit, exponentialBackoffBase: exponentialBackoffBase,
            exponentialBackoffScale: exponentialBackoffScale, retryableHTTPMethods: retryableHTTPMethods,
            retryableHTTPStatusCodes: retryableHTTPStatusCodes, retryableURLErrorCodes: retryableURLErrorCodes,
            backoff: Optional(backoff), retryAfter: retryAfter, throttlingBackoff: Optional(throttlingBackoff),
            stopsAfterRepeatedFailure: stopsAfterRepeatedFailure, unsentRetryLimit: unsentRetryLimit)
    }
}
