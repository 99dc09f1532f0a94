/// The health of each endpoint of a group, as passive outlier detection judges it from the ends of the attempts sent
/// there: a pure value, with the time given to each transition.
///
/// ```
///   healthy ──(failures in a row, or the failure rate, while fewer than the most are out)──▶ ejected
///      ▲                                                                                     │ its time passed
///      └─────────────── its first attempt back succeeded ─────────────── trial ◀─────────────┘
///                                                                          │ its first attempt back failed
///                                                                          └──▶ ejected again, for longer
/// ```
///
/// An ejection lasts the base time times the endpoint's number of ejections, held at the maximum; one ejection is
/// forgotten for each base time the endpoint stays in rotation.
struct OutlierDetector: Sendable {
    /// Where one endpoint stands.
    enum Health: Sendable, Equatable {
        /// In rotation, with its failures in a row.
        case healthy(consecutiveFailures: Int)
        /// Out of rotation until `until`, on the group's clock.
        case ejected(until: Duration)
        /// Back in rotation after an ejection: the end of its next attempt decides.
        case trial
    }

    /// One endpoint's record.
    struct Record: Sendable {
        var health = Health.healthy(consecutiveFailures: 0)
        /// The ejections on record, before the ones forgotten since `back`.
        var ejections = 0
        /// When it last came back into rotation.
        var back = Duration.zero
        /// Its attempts (first) and failures (second) over the failure-rate window.
        var tally = SlidingTally()
    }

    /// How an attempt sent to an endpoint ended, for the detector.
    enum Verdict: Sendable, Equatable {
        case success
        case failure
    }

    let configuration: EndpointGroup.OutlierDetection
    private(set) var records: [Record]

    /// A detector for `count` endpoints, all healthy.
    init(count: Int, configuration: EndpointGroup.OutlierDetection) {
        self.configuration = configuration
        self.records = Array(repeating: Record(), count: count)
    }

    /// Whether endpoint `index` is in rotation `now`.
    func isInRotation(_ index: Int, at now: Duration) -> Bool {
        if case .ejected(let until) = records[index].health { return now >= until }
        return true
    }

    /// How many endpoints are out of rotation `now`.
    func ejectedCount(at now: Duration) -> Int {
        records.indices.count { !isInRotation($0, at: now) }
    }

    /// Records the end of an attempt sent to endpoint `index`, `now`; returns the ejection it caused, if any, with
    /// the rule that caused it, its duration and the endpoint's count of ejections.
    mutating func record(
        _ verdict: Verdict, of index: Int, at now: Duration
    ) -> (rule: EndpointGroup.Ejection.Rule, duration: Duration, ejections: Int)? {
        // An ejection that has run out is a trial.
        if case .ejected(let until) = records[index].health {
            // An attempt sent before the ejection and ending during it says nothing more.
            guard now >= until else { return nil }
            records[index].health = .trial
            records[index].back = until
        }
        if let rule = configuration.failureRate {
            records[index].tally.add(first: 1, second: verdict == .failure ? 1 : 0, at: now, window: rule.window)
        }
        switch (records[index].health, verdict) {
        case (.trial, .success):
            records[index].health = .healthy(consecutiveFailures: 0)
            return nil
        case (.trial, .failure):
            return eject(index, at: now, rule: .trialFailed)
        case (.healthy, .success):
            records[index].health = .healthy(consecutiveFailures: 0)
            return nil
        case (.healthy(let failures), .failure):
            records[index].health = .healthy(consecutiveFailures: failures + 1)
            if let limit = configuration.consecutiveFailures, failures + 1 >= limit {
                return eject(index, at: now, rule: .consecutiveFailures)
            }
            if let rule = configuration.failureRate {
                let (calls, failed) = records[index].tally.totals(at: now, window: rule.window)
                if calls >= rule.minimumCalls, Double(failed) >= rule.rate * Double(calls) {
                    return eject(index, at: now, rule: .failureRate)
                }
            }
            return nil
        case (.ejected, _):
            preconditionFailure("an ejection that ran out is a trial")
        }
    }

    /// Ejects endpoint `index` `now`, unless the most endpoints the group may have out of rotation are out already.
    private mutating func eject(
        _ index: Int, at now: Duration, rule: EndpointGroup.Ejection.Rule
    ) -> (rule: EndpointGroup.Ejection.Rule, duration: Duration, ejections: Int)? {
        guard ejectedCount(at: now) < configuration.maximumEjected(of: records.count) else { return nil }
        let base = configuration.baseEjectionTime
        // One ejection forgotten for each base time spent in rotation since it last came back.
        let forgotten = Int(((now - records[index].back) / base).rounded(.down))
        let ejections = Swift.max(records[index].ejections - forgotten, 0) + 1
        let duration = Swift.min(base * ejections, configuration.maximumEjectionTime)
        records[index] = Record(health: .ejected(until: now + duration), ejections: ejections, back: now)
        return (rule, duration, ejections)
    }
}
