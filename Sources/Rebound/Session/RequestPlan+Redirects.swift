import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// An attempt's redirects, followed hop by hop by the session itself.
extension RequestPlan {
    /// Follows the redirects of an attempt hop by hop, as the redirect handler decides, and validates the response
    /// the last hop got (a redirect not followed included). Out of line: requests without redirects never make its
    /// frame.
    @inline(never)
    func followRedirects(
        from sent: URLRequest, response: ResponseHead, data: Data, context: RequestContext
    ) async -> AttemptResult {
        // The attempt's adapted request: every per-host part admitted and counts the attempt under its host.
        let firstHop = sent
        var sent = sent
        var response = response
        var data = data
        var hops = 0
        let handler = redirectHandler
        while let proposed = Redirection.nextRequest(after: sent, response: response) {
            guard hops < handler.maximumRedirects else {
                return Self.failed(
                    .transportFailed(error: URLError(.httpTooManyRedirects)), sent: sent, firstHop: firstHop)
            }
            let next = await nextHop(proposed, after: sent, response: response, context: context, handler: handler)
            guard let next else { break }
            hops += 1
            await report(
                RedirectHop(
                    requestID: requestID, label: label, attempt: context.attempt, number: hops, request: sent,
                    responseHead: response, next: next))
            if Task.isCancelled { return AttemptResult(.cancelled, sent: sent, firstHop: hops > 1 ? firstHop : nil) }
            do {
                (data, response) = try await session.exchange(next)
                sent = next
            } catch {
                return Self.failed(.transportFailed(error: error), sent: next, firstHop: firstHop)
            }
        }
        return check(response, data: data, sent: sent, firstHop: hops > 0 ? firstHop : nil, context: context)
    }

    /// The request the handler chooses to send after `sent` was redirected, secured against leaking credentials both
    /// before the handler sees it and after it answered; `nil` to stop.
    func nextHop(
        _ proposed: URLRequest, after sent: URLRequest, response: ResponseHead, context: RequestContext,
        handler: any RedirectHandler
    ) async -> URLRequest? {
        let stripped = handler.strippedHeaders
        let scopes = registered?.scopes ?? []
        var proposed = proposed
        Redirection.secure(&proposed, after: sent, stripping: stripped, scopes: scopes)
        // A handler that rewrites the hop to something other than http(s) (a file URL, say) stops it.
        guard var next = await handler.redirect(sent, to: proposed, for: response, context: context),
            let scheme = next.url?.scheme?.lowercased(), scheme == "http" || scheme == "https"
        else { return nil }
        Redirection.secure(&next, after: sent, stripping: stripped, scopes: scopes)
        return next
    }

    /// Tells the observers about a redirect an attempt follows.
    func report(_ hop: RedirectHop) async {
        for observer in roles.observers {
            await observer.attemptWasRedirected(hop)
        }
        for registration in registeredObservers {
            guard case .observer(let observer) = registration.entry else { continue }
            await observer.attemptWasRedirected(hop)
        }
    }
}
