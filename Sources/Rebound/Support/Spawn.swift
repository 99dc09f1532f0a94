/// Starts the unstructured tasks the library needs (a race's work and timer, a request's deadline timer, a backoff's
/// sleeper, a refresh, a queue timeout) where a simulation wants them: on the task executor it set for the tasks it
/// runs, or, without one, as `Task { }` does.
///
/// An unstructured task does not inherit its creator's task executor preference, only its task-local values; so a
/// simulation that runs everything on one serial executor (`ReboundTesting`'s `Simulation`, for runs that must be
/// the same every time) sets ``executor`` around its work, and every task started here joins that executor.
package enum Spawn {
    /// The task executor (`any TaskExecutor`) that tasks started here prefer; `nil`, the default, for none (Swift's
    /// global executor). Typed as `any Sendable` because a stored property cannot be of a type that some of the
    /// package's platforms lack (task executors need macOS 15, iOS 18).
    @TaskLocal package static var executor: (any Sendable)?

    /// Starts `operation` in an unstructured task, on ``executor`` when one is set.
    @discardableResult
    static func task<Success: Sendable>(
        _ operation: sending @escaping @isolated(any) () async -> Success
    ) -> Task<Success, Never> {
        if let preferred = executor,
            #available(macOS 15.0, iOS 18.0, macCatalyst 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *),
            let taskExecutor = preferred as? any TaskExecutor
        {
            return Task(executorPreference: taskExecutor, operation: operation)
        }
        return Task(operation: operation)
    }
}
