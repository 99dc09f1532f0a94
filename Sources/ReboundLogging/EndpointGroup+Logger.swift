#if Logging
    import Logging
    import Rebound

    extension Logger {
        /// Logs an endpoint taken out of rotation by its group, at `warning`.
        ///
        /// The message is the ejection's description (`endpoint https://eu.api.example.com/v2 of payments ejected for
        /// 60 s (consecutiveFailures, ejection 2)`); the metadata carries `rebound.ejection.group`,
        /// `rebound.ejection.endpoint` (the base URL, which has no query or user-info), `rebound.ejection.rule`,
        /// `rebound.ejection.seconds` (a fraction where the time has one) and `rebound.ejection.count`. Give it to the
        /// group's `onEjection:`:
        ///
        /// ```swift
        /// import Foundation
        /// import Logging
        /// import Rebound
        /// import ReboundLogging
        ///
        /// let logger = Logger(label: "app.endpoints")
        /// let group = EndpointGroup(
        ///     name: "payments",
        ///     endpoints: [
        ///         .init(URL(string: "https://eu.payments.example.com/v2")!),
        ///         .init(URL(string: "https://us.payments.example.com/v2")!),
        ///     ],
        ///     onEjection: { logger.log($0) })
        /// ```
        public func log(_ ejection: EndpointGroup.Ejection) {
            let (seconds, attoseconds) = ejection.duration.components
            let metadata: Metadata = [
                "rebound.ejection.group": .string(ejection.group),
                "rebound.ejection.endpoint": .string(ejection.endpoint.description),
                "rebound.ejection.rule": .string(ejection.rule.rawValue),
                "rebound.ejection.seconds": .stringConvertible(Double(seconds) + Double(attoseconds) / 1e18),
                "rebound.ejection.count": .stringConvertible(ejection.ejections),
            ]
            log(level: .warning, "\(ejection.description)", metadata: metadata, source: "Rebound")
        }
    }
#endif
