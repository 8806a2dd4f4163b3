// A local stand-in for Cloudflare's Rate Limiting binding, for the
// edge-worker tests in workerd (worker_limits_test.go). workerd has no such
// binding of its own; like wrangler's local mode, the tests give the worker
// one as a wrapped binding: this module is an internal module of a workerd
// extension, and the test's configuration binds WASMLM_RATE_LIMITER to
//
//   (name = "WASMLM_RATE_LIMITER", wrapped = (moduleName = "wasmlm-test:ratelimit",
//     innerBindings = [(name = "limit", json = "3"), (name = "period", json = "2")]))
//
// workerd calls the default export once with those inner bindings and hands
// the worker what it returns. Like Cloudflare's, limit({ key }) resolves to
// { success }: true for the first `limit` calls with a key in each fixed
// window of `period` seconds (windows start at multiples of the period since
// the Unix epoch), false after. Unlike Cloudflare's it counts exactly, in
// this isolate only, and takes any period (Cloudflare's: 10 or 60 seconds).
// It is not part of the worker and is never deployed.

class FixedWindowLimiter {
  #limit;
  #periodMs;
  #window = -1; // the current window's number
  #counts = new Map(); // key → calls in the current window

  constructor(limit, period) {
    if (!Number.isInteger(limit) || limit < 1 || !(period > 0)) {
      throw new TypeError(`rate limiter stand-in: limit ${limit}, period ${period}`);
    }
    this.#limit = limit;
    this.#periodMs = period * 1000;
  }

  async limit(options) {
    const key = options?.key;
    if (typeof key !== "string") {
      throw new TypeError("limit({ key }): key must be a string");
    }
    const window = Math.floor(Date.now() / this.#periodMs);
    if (window !== this.#window) {
      this.#window = window;
      this.#counts.clear();
    }
    const calls = (this.#counts.get(key) ?? 0) + 1;
    this.#counts.set(key, calls);
    return { success: calls <= this.#limit };
  }
}

export default function makeBinding(env) {
  return new FixedWindowLimiter(env.limit, env.period);
}
