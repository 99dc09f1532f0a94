import Foundation
import Testing

@testable import Rebound

/// The permits a request holds for the breakers that let its attempts through, until each attempt is settled.
@Suite("Permits held by a request")
struct HeldPermitsTests {
    typealias Permit = CircuitBreakerMachine.Permit

    @Test func eachBreakerAndAttemptHoldsOnePermitTakenBackInAnyOrder() {
        let roles = RegisteredRoles(besides: .none)
        let first = CircuitBreaker()
        let second = CircuitBreaker()
        #expect(!roles.hasGates)

        #expect(roles.ledger.hold(Permit(generation: 1, trial: nil), from: first, for: 1))
        #expect(roles.ledger.hold(Permit(generation: 2, trial: 7), from: second, for: 1))
        #expect(roles.ledger.hold(Permit(generation: 3, trial: nil), from: first, for: 2))
        // The breaker held twice by the chain: the first permit of an attempt stays.
        #expect(!roles.ledger.hold(Permit(generation: 9, trial: nil), from: first, for: 2))
        #expect(!roles.ledger.hold(Permit(generation: 9, trial: nil), from: second, for: 1))

        #expect(roles.ledger.holdsPermit(of: second, for: 1))
        #expect(!roles.ledger.holdsPermit(of: second, for: 2))
        #expect(roles.ledger.takePermit(of: first, for: 2) == Permit(generation: 3, trial: nil))
        #expect(roles.ledger.takePermit(of: second, for: 1) == Permit(generation: 2, trial: 7))
        #expect(roles.ledger.takePermit(of: second, for: 1) == nil)
        #expect(roles.ledger.takePermit(of: first, for: 1) == Permit(generation: 1, trial: nil))
        #expect(roles.ledger.takePermit(of: first, for: 1) == nil)
        #expect(!roles.ledger.holdsPermit(of: first, for: 2))

        // Each breaker registered once, as an accountant and the request's gate, in order.
        #expect(Array(roles.registrations).count == 2)
        #expect(roles.gates.count == 2)
        let order = [ObjectIdentifier(first), ObjectIdentifier(second)]
        let settlement = roles.ledger.settling(attempt: 1)
        #expect(settlement.accountants.map { ObjectIdentifier($0) } == order)
        #expect(roles.hedgeGates.map { ObjectIdentifier($0) } == order)
        #expect(!settlement.hasObservers)
        #expect(roles.hasGates)
    }

    @Test func registrationsReadInTheOrderTheyWereMadeTheFirstHeldInline() {
        let roles = RegisteredRoles(besides: .none)
        #expect(roles.registrations.isEmpty)
        let budgets = (0..<3).map { _ in RetryBudget() }
        let breaker = CircuitBreaker()

        roles.add(gate: budgets[0])
        let snapshot = roles.registrations
        roles.add(gate: budgets[1])
        _ = roles.ledger.hold(Permit(generation: 0, trial: nil), from: breaker, for: 1)
        roles.add(gate: budgets[2])
        roles.add(gate: budgets[1])

        let gates = roles.gates.map { ObjectIdentifier($0 as AnyObject) }
        #expect(gates == [budgets[0], budgets[1], breaker, budgets[2]].map { ObjectIdentifier($0 as AnyObject) })
        // A snapshot taken earlier does not change.
        #expect(Array(snapshot).count == 1)
        #expect(!snapshot.isEmpty)
    }
}

/// The list that holds a request's registrations and accountants, its first element inline.
@Suite("InlineList")
struct InlineListTests {
    @Test func readsItsElementsInOrderAndCopiesAreSnapshots() {
        var list = InlineList<Int>.none
        #expect(list.isEmpty)
        #expect(Array(list).isEmpty)
        #expect(!list.contains { _ in true })

        list.append(1)
        let one = list
        list.append(2)
        list.append(3)

        #expect(Array(list) == [1, 2, 3])
        #expect(list.contains { $0 == 3 })
        #expect(list.contains { $0 == 1 })
        #expect(!list.contains { $0 == 4 })
        #expect(Array(one) == [1])
        #expect(!list.isEmpty)
    }

    @Test func removesTheFirstMatchKeepingTheOthersInOrder() {
        var list = InlineList<Int>.none
        for value in [1, 2, 3, 2] { list.append(value) }

        #expect(list.remove { $0 == 2 } == 2)
        #expect(Array(list) == [1, 3, 2])
        #expect(list.remove { $0 == 1 } == 1)
        #expect(Array(list) == [3, 2])
        #expect(list.remove { $0 == 9 } == nil)
        #expect(list.remove { $0 == 3 } == 3)
        #expect(list.remove { $0 == 2 } == 2)
        #expect(list.isEmpty)
        #expect(list.remove { _ in true } == nil)
        list.append(4)
        #expect(Array(list) == [4])
    }

    @Test func theAttemptsSettledAreKnownInAnyOrderPastSixtyFourAndAllOnceTheRequestEnds() {
        let roles = RegisteredRoles(besides: .none)
        for attempt in [3, 1, 64, 65, 200] { _ = roles.ledger.settling(attempt: attempt) }

        let settled = (0...210).filter { roles.ledger.isSettled(attempt: $0) }
        #expect(settled == [1, 3, 64, 65, 200])
        #expect(!roles.ledger.requestEnded)

        _ = roles.ledger.settling(attempt: nil, endsRequest: true)
        #expect(roles.ledger.requestEnded)
        #expect((1...210).allSatisfy { roles.ledger.isSettled(attempt: $0) })
    }

    @Test func theAttemptThatEndsTheRequestIsSettledWithEveryOther() {
        let roles = RegisteredRoles(besides: .none)
        _ = roles.ledger.settling(attempt: 1)
        #expect(!roles.ledger.isSettled(attempt: 2))
        _ = roles.ledger.settling(attempt: 2, endsRequest: true)
        #expect(roles.ledger.requestEnded)
        #expect([1, 2, 3, 70].allSatisfy { roles.ledger.isSettled(attempt: $0) })
    }
}
