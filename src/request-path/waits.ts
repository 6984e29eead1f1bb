/**
 * The waits for requests an adapter holds (`POST /_sim/requests/wait`): the HTTP adapter's, for
 * its connections and the in-process handle, and a page's handlers'. Each wait is offered every
 * record the journal adds (the core's one "journal grew" signal, `Simulator.onJournalRecord`,
 * listened to only while a wait is held), and answered by the record that makes its count, by its
 * timer on the host's clock, or by a stop. No polling: nothing runs while nothing arrives.
 *
 * The time-outs run on the host clock its owner injects (the server's, the page's handlers', a
 * test's), `systemClock` by default.
 */
import type { Simulator } from '../core/simulator/simulator.js';
import { systemClock, type HostClock, type HostTimer } from '../hostClock.js';
import type { ApiAnswer, HeldWait } from './exchange.js';

interface Held {
  wait: HeldWait;
  timer: HostTimer | undefined;
  done: (answer: ApiAnswer | undefined) => void;
}

export class WaitRoom {
  private readonly held = new Set<Held>();
  /**
   * The held waits by the account their pattern names (`null`: none): a record is offered only to
   * the waits of its account and to those that name none, so other clients' requests cost a wait
   * nothing.
   */
  private readonly byAccount = new Map<string | null, Set<Held>>();
  private stopListening: (() => void) | undefined;
  private stopped = false;

  constructor(
    private readonly sim: Simulator,
    private readonly hostClock: HostClock = systemClock,
  ) {}

  /** How many waits are held now. */
  get size(): number {
    return this.held.size;
  }

  /**
   * Holds `wait` until it is answered: resolves with the answer to send, or with undefined when
   * `signal` aborts first (the client has gone: nothing is sent, its place is given back). Once
   * stopped, a wait is answered at once with the stop's 503.
   */
  hold(wait: HeldWait, signal?: AbortSignal): Promise<ApiAnswer | undefined> {
    if (this.stopped) return Promise.resolve(wait.stopped());
    if (signal?.aborted) {
      wait.cancel();
      return Promise.resolve(undefined);
    }
    return new Promise((resolve) => {
      const account = wait.apiKey ?? null;
      const entry: Held = {
        wait,
        timer: undefined,
        done: (answer) => {
          if (!this.held.delete(entry)) return;
          const bucket = this.byAccount.get(account) as Set<Held>;
          bucket.delete(entry);
          if (bucket.size === 0) this.byAccount.delete(account);
          entry.timer?.clear();
          signal?.removeEventListener('abort', aborted);
          if (this.held.size === 0) this.quiet();
          resolve(answer);
        },
      };
      const aborted = (): void => {
        wait.cancel();
        entry.done(undefined);
      };
      this.held.add(entry);
      const bucket = this.byAccount.get(account);
      if (bucket === undefined) this.byAccount.set(account, new Set([entry]));
      else bucket.add(entry);
      this.listen();
      entry.timer = this.hostClock.setTimeout(() => entry.done(wait.finish(true)), wait.timeoutMs);
      signal?.addEventListener('abort', aborted, { once: true });
    });
  }

  /** Ends every held wait at once with the stop's 503; later ones too, until `resume`. */
  stop(): void {
    this.stopped = true;
    for (const entry of [...this.held]) entry.done(entry.wait.stopped());
  }

  /** Holds waits again (a server that listens again after a stop). */
  resume(): void {
    this.stopped = false;
  }

  private listen(): void {
    this.stopListening ??= this.sim.onJournalRecord((record) => {
      if (record.account !== null) this.offer(this.byAccount.get(record.account), record);
      this.offer(this.byAccount.get(null), record);
    });
  }

  /** Offers `record` to each wait of `bucket`; one it answers is done (and leaves the bucket: a Set iterates on past it). */
  private offer(bucket: Set<Held> | undefined, record: Parameters<HeldWait['offer']>[0]): void {
    if (bucket === undefined) return;
    for (const entry of bucket) if (entry.wait.offer(record)) entry.done(entry.wait.finish(false));
  }

  private quiet(): void {
    this.stopListening?.();
    this.stopListening = undefined;
  }
}
