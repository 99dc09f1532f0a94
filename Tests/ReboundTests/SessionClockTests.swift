import Testing

@testable import Rebound

@Suite("The session's clock")
struct SessionClockTests {
    @Test func onTheDefaultClockItMeasuresWhatContinuousClockMeasures() {
        let clock = SessionClock(ContinuousClock())
        for _ in 0..<1_000 {
            // Each reading of the session's clock lies between two readings of ContinuousClock, so an interval it
            // measures lies between the inner and the outer interval ContinuousClock measures around it.
            let outerStart = ContinuousClock.now
            let start = clock.now()
            let innerStart = ContinuousClock.now
            var spin = 0
            for index in 0..<100 { spin &+= index }
            #expect(spin == 4_950)
            let innerEnd = ContinuousClock.now
            let end = clock.now()
            let outerEnd = ContinuousClock.now
            #expect(start >= .zero)
            #expect(end - start >= innerStart.duration(to: innerEnd))
            #expect(end - start <= outerStart.duration(to: outerEnd))
        }
    }
}
