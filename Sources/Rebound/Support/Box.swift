/// An immutable value in one heap object: what a type holds so that it is one reference wide.
///
/// Values passed from await to await are kept in every async frame they cross, and a task keeps its deepest frames'
/// memory until it ends; `ReboundError`, `RetryRequest` and `AttemptOutcome` keep their fields in a box so that a
/// request waiting in backoff stays small (see Docs/Performance.md, section 4).
package final class Box<Value: Sendable>: Sendable {
    package let value: Value

    package init(_ value: Value) {
        self.value = value
    }
}
