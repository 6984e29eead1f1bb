/**
 * The host's clock: the one place the simulator reads the host's time and sets the host's timers.
 * `setTimeout`, `setInterval`, `setImmediate` and their `clear*` are called in this module only
 * (`npm run lint:code` and test/host-clock-only.test.ts hold it). Every part that waits on time
 * takes a `HostClock` from its owner (createSimulator's `hostClock`, the HTTP adapter's options,
 * the state store's, the file lock's, the page's handlers'), `systemClock` when none is given: so
 * a test that gives one clock, over its fake timers, sees every wait of the simulator follow it
 * (injected latency, network `hang_ms` and `slow` bodies, waits for requests, the drain, the state
 * file's timers). The core never waits: it runs on a virtual clock and is given `now`.
 *
 * Browser-safe (the page's bundle uses it): no Node built-in, and a handle's `unref` only where
 * the host's timer has one.
 */

/** A timer the host clock set. */
export interface HostTimer {
  /** Cancels it (a timer that has fired, or was cleared, is left alone). */
  clear(): void;
  /** Lets the process end while it is pending (Node's `unref`); nothing where the host has no such thing. */
  unref?(): void;
}

/**
 * The host's clock: its time, and timers on it. A clock given to the simulator needs `now` and
 * `setTimeout`; `setInterval` and `setImmediate` are used when it has them (else made of
 * `setTimeout`).
 */
export interface HostClock {
  /** The host's time, in milliseconds since the epoch. */
  now(): number;
  /** Calls `fn` once, `ms` from now. */
  setTimeout(fn: () => void, ms: number): HostTimer;
  /** Calls `fn` every `ms`, until cleared. */
  setInterval?(fn: () => void, ms: number): HostTimer;
  /** Calls `fn` on the next turn of the event loop. */
  setImmediate?(fn: () => void): HostTimer;
}

/**
 * Timer functions as a host or a fake-timer library has them (`globalThis`, the clock of
 * `@sinonjs/fake-timers`' `createClock()` or `install()`): what `hostClockOf` makes a clock of.
 */
export interface TimerFunctions {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  setInterval?(fn: () => void, ms: number): unknown;
  clearInterval?(handle: unknown): void;
  setImmediate?(fn: () => void): unknown;
  clearImmediate?(handle: unknown): void;
  /** Read for `now` when no `now` is given (a fake-timer clock's `Date`, or the host's). */
  Date?: { now(): number };
}

/** A timer of a host's timer functions: cleared by `clear`, unref'd when its handle can be. */
class TimerOf implements HostTimer {
  constructor(
    private readonly handle: unknown,
    private readonly cancel: (handle: unknown) => void,
  ) {}

  clear(): void {
    this.cancel(this.handle);
  }

  unref(): void {
    const handle = this.handle as { unref?: unknown } | null;
    if (typeof handle === 'object' && handle !== null && typeof handle.unref === 'function') (handle as { unref(): void }).unref();
  }
}

/**
 * A host clock over `timers`, each function read when called (so that fake timers installed on
 * `timers` later are the ones used); `now` defaults to `timers.Date.now()`, else `Date.now()`, read
 * when called. `hostClockOf(globalThis)` follows whatever the globals are; with
 * `@sinonjs/fake-timers`, `hostClockOf(FakeTimers.createClock())` is a clock that moves only when
 * the test moves it.
 */
export function hostClockOf(timers: TimerFunctions, now?: () => number): HostClock {
  // Each timer is cleared by the function of the timers it was set on (read with it).
  const clock: HostClock = {
    now: now ?? (() => (timers.Date ?? Date).now()),
    setTimeout: (fn, ms) => new TimerOf(timers.setTimeout(fn, ms), timers.clearTimeout.bind(timers)),
    setInterval: (fn, ms) => {
      if (typeof timers.setInterval !== 'function') return every({ now: () => clock.now(), setTimeout: (f, m) => clock.setTimeout(f, m) }, ms, fn);
      return new TimerOf(timers.setInterval(fn, ms), timers.clearInterval ? timers.clearInterval.bind(timers) : timers.clearTimeout.bind(timers));
    },
    setImmediate: (fn) => {
      if (typeof timers.setImmediate !== 'function') return clock.setTimeout(fn, 0);
      return new TimerOf(timers.setImmediate(fn), timers.clearImmediate ? timers.clearImmediate.bind(timers) : timers.clearTimeout.bind(timers));
    },
  };
  return clock;
}

const timeOrigin = performance.timeOrigin;
const monotonicNow = performance.now.bind(performance);

/**
 * The host's own clock, the default of every owner. `now`: the wall clock, monotonic while the
 * process (or page) runs (`performance.timeOrigin + performance.now()`, bound when this module
 * loads: fake timers do not move it). Its timers are the global functions, read when called: a
 * test runner's fake timers installed later are the ones its timers run on.
 */
export const systemClock: HostClock = {
  ...hostClockOf(globalThis),
  now: () => timeOrigin + monotonicNow(),
};

/**
 * `value` as a host clock, checked (an option a user gives: `createSimulator`'s and the page's
 * handlers' `hostClock`); `fallback` when not given.
 */
export function hostClockOption(value: HostClock | undefined, fallback: HostClock): HostClock {
  if (value === undefined) return fallback;
  // A JavaScript caller's value is whatever it is: checked as such.
  if (typeof value !== 'object' || value === null || typeof value.now !== 'function' || typeof value.setTimeout !== 'function') {
    throw new RangeError('hostClock must be a host clock: an object with now() (epoch milliseconds) and setTimeout(fn, ms) (see hostClockOf)');
  }
  return value;
}

/** `clock` with its time read from `now` (createSimulator's `now` over its `hostClock`). */
export function withNow(clock: HostClock, now: () => number): HostClock {
  return {
    now,
    setTimeout: (fn, ms) => clock.setTimeout(fn, ms),
    setInterval: (fn, ms) => every(clock, ms, fn),
    setImmediate: (fn) => nextTurn(clock, fn),
  };
}

/** Calls `fn` every `ms` on `clock`: its `setInterval`, else one `setTimeout` after the other. */
export function every(clock: HostClock, ms: number, fn: () => void): HostTimer {
  if (clock.setInterval) return clock.setInterval(fn, ms);
  let current: HostTimer;
  let cleared = false;
  let unref = false;
  const arm = (): void => {
    current = clock.setTimeout(() => {
      if (cleared) return;
      arm();
      fn();
    }, ms);
    if (unref) current.unref?.();
  };
  arm();
  return {
    clear: () => {
      cleared = true;
      current.clear();
    },
    unref: () => {
      unref = true;
      current.unref?.();
    },
  };
}

/** Calls `fn` on the next turn of the event loop on `clock`: its `setImmediate`, else `setTimeout(fn, 0)`. */
export function nextTurn(clock: HostClock, fn: () => void): HostTimer {
  return clock.setImmediate ? clock.setImmediate(fn) : clock.setTimeout(fn, 0);
}

/** Resolves `ms` from now on `clock`, or as soon as `signal` aborts (at once when it has). */
export function sleep(clock: HostClock, ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const done = (): void => {
      timer.clear();
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = clock.setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
