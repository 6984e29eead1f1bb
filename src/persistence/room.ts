/**
 * Waiting for room on the state file's volume (see stateStore.ts).
 *
 * An append that finds no room (a full disk, a quota) is not given up: its lines, and those of the
 * requests that follow, wait in memory in their order and are tried again at every state-changing
 * request and every `WRITE_RETRY_MS`, until the volume has room again. Meanwhile an answer is sent
 * only once its line is written (`whenWritten`, which the HTTP adapter waits for before it sends
 * the answer of a state-changing request): nothing acknowledged is lost to a `kill -9`. When the
 * simulator stops first, those answers are never sent.
 */
import { every, type HostClock, type HostTimer } from '../hostClock.js';

/** How often lines waiting for room are tried again (besides at every state-changing request). */
const WRITE_RETRY_MS = 1000;

/**
 * The most bytes of lines that wait in memory for room: past it, the state stops being kept (as
 * after a write that failed otherwise) rather than the process's memory filling up.
 */
export const WAITING_MAX_BYTES = 64 * 1024 * 1024;

/**
 * The lines of a state file that found no room, and the answers waiting for them: `retry` (the
 * store's flush) is called every `WRITE_RETRY_MS` while they wait.
 */
export class WaitingForRoom {
  /** Set while lines wait in memory for room: the error, and since when (host time, ms). */
  private blocked: { code: string; since: number } | undefined;
  /** Tries the waiting lines again while `blocked`. */
  private retryTimer: HostTimer | undefined;
  /** The answers waiting for the lines now pending to be written (see `whenWritten`). */
  private waiting: ((written: boolean) => void)[] = [];

  constructor(
    private readonly hostClock: HostClock,
    private readonly retry: () => void,
  ) {}

  /** While lines wait: the error's code, and since when (host time, ms). */
  get state(): { readonly code: string; readonly since: number } | undefined {
    return this.blocked;
  }

  /** Whether lines wait for room. */
  get waitingForRoom(): boolean {
    return this.blocked !== undefined;
  }

  /**
   * The pending lines found no room (`code`) at host time `now`: they wait, tried again every
   * `WRITE_RETRY_MS`. Answers whether they began to wait (false: they already did).
   */
  block(code: string, now: number): boolean {
    if (this.blocked !== undefined) return false;
    this.blocked = { code, since: now };
    this.retryTimer = every(this.hostClock, WRITE_RETRY_MS, this.retry);
    this.retryTimer.unref?.();
    return true;
  }

  /**
   * While the lines pending cannot be written for want of room, a promise that settles once they
   * are: true, or false when they never will be. Undefined when nothing waits.
   */
  whenWritten(): Promise<boolean> | undefined {
    if (this.blocked === undefined) return undefined;
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /**
   * Lines wait no more: the retries stop, and the answers waiting go (`written`: the lines were
   * written, or their run was replaced) or are never sent.
   */
  end(written: boolean): void {
    this.blocked = undefined;
    this.retryTimer?.clear();
    this.retryTimer = undefined;
    this.settle(written);
  }

  /** The answers waiting go (`written`) or are never sent. */
  settle(written: boolean): void {
    const waiting = this.waiting;
    this.waiting = [];
    for (const settle of waiting) settle(written);
  }
}
