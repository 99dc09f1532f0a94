// Must not compile: no delay is `BackoffStrategy.zero`. Where a backoff is optional, `.none` is `nil` (the receiver's
// own backoff, with the compiler's warning), so `none` is kept only to turn its other uses into this error.
// Expected error: "'none' has been renamed to 'zero'".
import Rebound

let noDelay: BackoffStrategy = .none
