import Foundation

// The overloads of JSONBodyRetrier's initializers and `validated` for a backoff given as it is rather than as an
// optional. With the optional parameter alone, `backoff: .none` would be `Optional.none`, the constant `delay`; with
// these, the compiler prefers the parameter that is not optional, so `.none` is `BackoffStrategy.none`, no delay, as
// swift-concurrency-retry spells it. `nil`, an optional value, or no argument at all still reaches the optional
// parameter. For `validated`, the optional overload is disfavoured: for a function, unlike an initializer, the
// compiler would otherwise find `.none` ambiguous between `Optional.none` and `BackoffStrategy.none`. Each forwards with
// `Optional(_:)`, so that it does not call itself.

extension JSONBodyRetrier {
    /// Creates a retrier that matches `values` at `path`, from settings written in code with `backoff` as it is, so
    /// that `.none` is no delay; an invalid setting traps.
    ///
    /// The parameters, their defaults and what is valid are those of
    /// ``init(path:values:retryLimit:delay:backoff:maximumBodySize:maximumDepth:inspectsSuccessfulResponses:)-(_,_,_,_,BackoffStrategy?,_,_,_)``.
    public convenience init(
        path: String = "error_code", values: Set<JSONValue>, retryLimit: Int = defaultRetryLimit,
        delay: Duration = defaultDelay, backoff: BackoffStrategy,
        maximumBodySize: Int = defaultMaximumBodySize,
        maximumDepth: Int = defaultMaximumDepth, inspectsSuccessfulResponses: Bool = true
    ) {
        self.init(
            path: path, values: values, retryLimit: retryLimit, delay: delay, backoff: Optional(backoff),
            maximumBodySize: maximumBodySize, maximumDepth: maximumDepth,
            inspectsSuccessfulResponses: inspectsSuccessfulResponses)
    }

    /// Creates a retrier that matches when `predicate` returns `true` for the decoded body, from settings written in
    /// code with `backoff` as it is, so that `.none` is no delay; an invalid setting traps.
    ///
    /// The parameters, their defaults and what is valid are those of
    /// ``init(retryLimit:delay:backoff:maximumBodySize:maximumDepth:inspectsSuccessfulResponses:where:)-(_,_,BackoffStrategy?,_,_,_,_)``.
    public convenience init(
        retryLimit: Int = defaultRetryLimit, delay: Duration = defaultDelay, backoff: BackoffStrategy,
        maximumBodySize: Int = defaultMaximumBodySize, maximumDepth: Int = defaultMaximumDepth,
        inspectsSuccessfulResponses: Bool = true, where predicate: @escaping @Sendable (JSONValue) -> Bool
    ) {
        self.init(
            retryLimit: retryLimit, delay: delay, backoff: Optional(backoff), maximumBodySize: maximumBodySize,
            maximumDepth: maximumDepth, inspectsSuccessfulResponses: inspectsSuccessfulResponses, where: predicate)
    }

    /// Creates a retrier that matches `values` at `path`, from settings that arrive at run time with `backoff` as it
    /// is, so that `.none` is no delay, throwing when one is invalid.
    ///
    /// The parameters, their defaults and what is valid are those of
    /// ``init(path:values:retryLimit:delay:backoff:maximumBodySize:maximumDepth:inspectsSuccessfulResponses:)-(_,_,_,_,BackoffStrategy?,_,_,_)``.
    ///
    /// - Throws: ``ConfigurationError`` naming the first invalid setting.
    public static func validated(
        path: String = "error_code", values: Set<JSONValue>, retryLimit: Int = defaultRetryLimit,
        delay: Duration = defaultDelay, backoff: BackoffStrategy,
        maximumBodySize: Int = defaultMaximumBodySize,
        maximumDepth: Int = defaultMaximumDepth, inspectsSuccessfulResponses: Bool = true
    ) throws(ConfigurationError) -> JSONBodyRetrier {
        try validated(
            path: path, values: values, retryLimit: retryLimit, delay: delay, backoff: Optional(backoff),
            maximumBodySize: maximumBodySize, maximumDepth: maximumDepth,
            inspectsSuccessfulResponses: inspectsSuccessfulResponses)
    }

    /// Creates a retrier that matches when `predicate` returns `true` for the decoded body, from settings that arrive
    /// at run time with `backoff` as it is, so that `.none` is no delay, throwing when one is invalid.
    ///
    /// The parameters, their defaults and what is valid are those of
    /// ``init(retryLimit:delay:backoff:maximumBodySize:maximumDepth:inspectsSuccessfulResponses:where:)-(_,_,BackoffStrategy?,_,_,_,_)``.
    ///
    /// - Throws: ``ConfigurationError`` naming the first invalid setting.
    public static func validated(
        retryLimit: Int = defaultRetryLimit, delay: Duration = defaultDelay, backoff: BackoffStrategy,
        maximumBodySize: Int = defaultMaximumBodySize, maximumDepth: Int = defaultMaximumDepth,
        inspectsSuccessfulResponses: Bool = true, where predicate: @escaping @Sendable (JSONValue) -> Bool
    ) throws(ConfigurationError) -> JSONBodyRetrier {
        try validated(
            retryLimit: retryLimit, delay: delay, backoff: Optional(backoff), maximumBodySize: maximumBodySize,
            maximumDepth: maximumDepth, inspectsSuccessfulResponses: inspectsSuccessfulResponses, where: predicate)
    }
}
