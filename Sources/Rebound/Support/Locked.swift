import Foundation

/// Mutable state behind a lock, shared by the package's modules (`package` access): the one place Rebound locks.
///
/// Why not `Synchronization.Mutex`: on Linux (Swift 6.3) its futex-based lock is invisible to the thread sanitizer,
/// which then reports every access made under it as a race, so `swift test --sanitize=thread` could not vouch for
/// our concurrency. `NSLock` is a `pthread_mutex_t` on Linux, which the sanitizer understands, and it needs no
/// newer Apple platform than `Clock` does.
package final class Locked<State: Sendable>: @unchecked Sendable {
    // Invariant that makes `@unchecked Sendable` sound: `state` is read and written only inside `withLock`,
    // while `lock` is held, and `State` is `Sendable`, so nothing escapes the lock that could not cross threads.
    private let lock = NSLock()
    private var state: State

    /// Creates a lock guarding `state`.
    package init(_ state: State) {
        self.state = state
    }

    /// Runs `body` with exclusive access to the state; `body` must not call back into this lock.
    package func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }
}
