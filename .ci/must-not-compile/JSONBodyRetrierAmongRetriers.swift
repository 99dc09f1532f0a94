// Must not compile: a JSONBodyRetrier goes among the adapters, where it registers its validation and its retries;
// among the retriers a 200 would never be read. Expected error: "to expected element type 'any RequestRetrier'".
import Rebound

let session = Session(retriers: [JSONBodyRetrier(values: ["RATE_LIMITED"])])
