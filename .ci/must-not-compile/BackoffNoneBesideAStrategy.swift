// Must not compile: where a function also takes optional backoffs (`validated`, `.retryPolicy`), `.none` beside another
// backoff written as a strategy is ambiguous between `Optional.none` (the default backoff) and `BackoffStrategy.none`
// (no delay), and it must never quietly be the default. `.zero` is no delay everywhere.
// Expected error: "ambiguous use of 'none'".
import Rebound

let policy = try RetryPolicy.validated(backoff: .none, throttlingBackoff: .zero)
