#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Mutable state behind a lock, shared by the package's modules (`package` access): the one place Rebound locks.
///
/// A value with reference semantics: copies share one lock and one state, held in one heap object together (a
/// `ManagedBuffer` whose header is the state and whose one element is a `pthread_mutex_t`), so that making one
/// allocates that object and nothing else; the session makes one per request.
///
/// Why not `Synchronization.Mutex`: on Linux (Swift 6.3) its futex-based lock is invisible to the thread sanitizer,
/// which then reports every access made under it as a race, so `swift test --sanitize=thread` could not vouch for
/// our concurrency. A `pthread_mutex_t` is what the sanitizer understands, and it needs no newer Apple platform than
/// `Clock` does. (`NSLock` wraps the same mutex, but in an object of its own, apart from the state.)
package struct Locked<State: Sendable>: @unchecked Sendable {
    // Invariant that makes `@unchecked Sendable` sound: the buffer's state is read and written only inside
    // `withLock`, while its mutex is held, and the state is `Sendable`, so nothing escapes the lock that could not
    // cross threads. (The standard library makes no `ManagedBuffer` subclass `Sendable`, so the buffer cannot say it.)
    private let buffer: LockedBuffer<State>

    /// Creates a lock guarding `state`, which must not be of zero size (`Void`): such a state would share its address
    /// with the mutex, and the thread sanitizer reports every access to it as a race. A lock that guards something
    /// else holds a placeholder, an `Int`.
    package init(_ state: consuming State) {
        precondition(MemoryLayout<State>.size > 0, "Locked needs a state of non-zero size; use a placeholder Int")
        buffer = LockedBuffer.make(consume state)
    }

    /// Runs `body` with exclusive access to the state; `body` must not call back into this lock.
    package func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        try buffer.withLock(body)
    }
}

/// The state (the header) and its mutex (the one element, whose address is stable for the object's life) in one
/// object.
private final class LockedBuffer<State: Sendable>: ManagedBuffer<State, pthread_mutex_t> {
    static func make(_ state: consuming State) -> LockedBuffer<State> {
        // Moved into the buffer, not copied: a copy and a destruction of the state per lock made.
        var state = Optional(state)
        let buffer = create(minimumCapacity: 1) { _ in state.take()! }
        buffer.withUnsafeMutablePointerToElements { mutex in
            let result = pthread_mutex_init(mutex, nil)
            precondition(result == 0, "pthread_mutex_init failed with \(result)")
        }
        return unsafeDowncast(buffer, to: LockedBuffer<State>.self)
    }

    func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        try withUnsafeMutablePointers { state, mutex in
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return try body(&state.pointee)
        }
    }

    deinit {
        _ = withUnsafeMutablePointerToElements { pthread_mutex_destroy($0) }
    }
}
