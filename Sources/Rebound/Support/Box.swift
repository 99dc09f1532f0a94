/// An immutable value in one heap object: what a type holds so that it is one reference wide.
///
/// `ReboundError`, `RetryRequest` and `AttemptOutcome` keep their fields in a box: they are passed from await to await,
/// and what a request waiting in backoff holds is measured and held to a ceiling (Docs/Performance.md, section 4).
package final class Box<Value: Sendable>: Sendable {
    package let value: Value

    package init(_ value: Value) {
        self.value = value
    }
}
