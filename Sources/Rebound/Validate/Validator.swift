import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A validator made from status codes or a closure: the session's default, and the way to write one-off checks.
///
/// Validators combine with ``and(_:)-(ResponseValidator)``; the first failure wins. A closure sees the status, the
/// headers and the body, and, in its three-argument form, the attempt's ``RequestContext`` (its number, the request's
/// label).
///
/// ```swift
/// let session = Session(validator: .successfulStatusCodes.and { response, data in
///     if data.isEmpty { throw EmptyBody() }
/// })
/// ```
public struct Validator: ResponseValidator {
    /// The check: why the response is rejected, or `nil`. Status rules read the head alone; a closure given an
    /// `HTTPURLResponse` gets the head's, built on first use.
    let check: @Sendable (ResponseHead, Data, RequestContext) -> ReboundError.Reason?
    /// Whether the check is handed a context it may read (a closure given one, or a validator of another type): through
    /// it a validator may register a role or read the deadline, so a request keeps its registrations for it. The
    /// status rules, and a closure of the response and its body, read none.
    let readsContext: Bool

    private init(
        readsContext: Bool = true,
        check: @escaping @Sendable (ResponseHead, Data, RequestContext) -> ReboundError.Reason?
    ) {
        self.check = check
        self.readsContext = readsContext
    }

    /// Creates a validator from a closure that throws when the response is not acceptable.
    ///
    /// The error thrown is kept as ``ReboundError/Reason/validationFailed(error:)`` (or, if it is an
    /// ``UnacceptableStatusCode``, as ``ReboundError/Reason/unacceptableStatusCode(_:)``).
    public init(_ validate: @escaping @Sendable (HTTPURLResponse, Data, RequestContext) throws -> Void) {
        self.init { head, data, context in
            Self.reason(of: { try validate(head.httpURLResponse, data, context) })
        }
    }

    /// `validator` as a `Validator`: itself, or one that asks it. Made once per session or request, where
    /// ``ResponseValidator/reason(for:data:context:)`` looks at the validator's type on every call.
    static func resolving(_ validator: any ResponseValidator) -> Validator {
        if let validator = validator as? Validator { return validator }
        return Validator { head, data, context in
            reason(of: { try validator.validate(head, data: data, context: context) })
        }
    }

    /// Why `validation` rejects a response, as the session reports it: an ``UnacceptableStatusCode`` as
    /// ``ReboundError/Reason/unacceptableStatusCode(_:)``, any other error as
    /// ``ReboundError/Reason/validationFailed(error:)``; `nil` when it returns.
    static func reason(of validation: () throws -> Void) -> ReboundError.Reason? {
        do {
            try validation()
            return nil
        } catch let error as UnacceptableStatusCode {
            return .unacceptableStatusCode(error.statusCode)
        } catch {
            return .validationFailed(error: error)
        }
    }

    /// Creates a validator from a closure of the response and its body that throws when it is not acceptable.
    public init(_ validate: @escaping @Sendable (HTTPURLResponse, Data) throws -> Void) {
        self.init(readsContext: false) { head, data, _ in Self.reason(of: { try validate(head.httpURLResponse, data) })
        }
    }

    /// Accepts a status in 200..<300; the session's default.
    public static let successfulStatusCodes = acceptableStatusCodes(200..<300)

    /// Accepts every response, whatever its status.
    public static let acceptAll = Validator(readsContext: false) { _, _, _ in nil }

    /// Accepts the status codes in `range`; any other fails with ``ReboundError/Reason/unacceptableStatusCode(_:)``.
    public static func acceptableStatusCodes(_ range: Range<Int>) -> Validator {
        Validator(readsContext: false) { head, _, _ in
            range.contains(head.statusCode) ? nil : .unacceptableStatusCode(head.statusCode)
        }
    }

    /// Accepts the status codes in `range`; any other fails with ``ReboundError/Reason/unacceptableStatusCode(_:)``.
    public static func acceptableStatusCodes(_ range: ClosedRange<Int>) -> Validator {
        Validator(readsContext: false) { head, _, _ in
            range.contains(head.statusCode) ? nil : .unacceptableStatusCode(head.statusCode)
        }
    }

    /// Accepts the status codes listed; any other fails with ``ReboundError/Reason/unacceptableStatusCode(_:)``.
    public static func acceptableStatusCodes(_ codes: Set<Int>) -> Validator {
        Validator(readsContext: false) { head, _, _ in
            codes.contains(head.statusCode) ? nil : .unacceptableStatusCode(head.statusCode)
        }
    }

    /// Runs this validator, then `other` if this one passed.
    public func and(_ other: some ResponseValidator) -> Validator {
        Validator(readsContext: readsContext || (other as? Validator)?.readsContext ?? true) { head, data, context in
            check(head, data, context) ?? other.reason(for: head, data: data, context: context)
        }
    }

    /// Runs this validator, then the closure if this one passed.
    public func and(_ validate: @escaping @Sendable (HTTPURLResponse, Data, RequestContext) throws -> Void) -> Validator
    {
        and(Validator(validate))
    }

    /// Runs this validator, then the closure of the response and its body if this one passed.
    public func and(_ validate: @escaping @Sendable (HTTPURLResponse, Data) throws -> Void) -> Validator {
        and(Validator(validate))
    }

    /// Throws ``UnacceptableStatusCode`` or the closure's error when the response is not acceptable; status rules
    /// read the head alone.
    public func validate(_ head: ResponseHead, data: Data, context: RequestContext) throws {
        switch check(head, data, context) {
        case nil: return
        case .unacceptableStatusCode(let code): throw UnacceptableStatusCode(code)
        case .validationFailed(let error): throw error
        case let reason?: throw reason.underlyingError ?? UnacceptableStatusCode(head.statusCode)
        }
    }
}

extension ResponseValidator where Self == Validator {
    /// Accepts a status in 200..<300; the session's default.
    public static var successfulStatusCodes: Validator { Validator.successfulStatusCodes }

    /// Accepts every response, whatever its status.
    public static var acceptAll: Validator { Validator.acceptAll }

    /// Accepts the status codes in `range`.
    public static func acceptableStatusCodes(_ range: Range<Int>) -> Validator {
        Validator.acceptableStatusCodes(range)
    }

    /// Accepts the status codes in `range`.
    public static func acceptableStatusCodes(_ range: ClosedRange<Int>) -> Validator {
        Validator.acceptableStatusCodes(range)
    }

    /// Accepts the status codes listed.
    public static func acceptableStatusCodes(_ codes: Set<Int>) -> Validator { Validator.acceptableStatusCodes(codes) }

    /// A ``Validator`` that calls `validate` with each response, its body and the attempt's context.
    public static func validator(
        _ validate: @escaping @Sendable (HTTPURLResponse, Data, RequestContext) throws -> Void
    ) -> Validator {
        Validator(validate)
    }
}
