/**
 * The simulator's global virtual clock, in epoch milliseconds. Manual mode moves only through
 * `advance`; realtime mode follows an injected wall clock times `speed` (and `advance` jumps ahead).
 * The core never reads the wall clock itself: the adapter passes `wallClock`.
 */

export type ClockMode = 'manual' | 'realtime';

export interface ClockState {
  mode: ClockMode;
  /** ISO 8601 with milliseconds. */
  now: string;
  speed: number;
}

export class VirtualClock {
  private jumpedMs = 0;
  private wallStart: number;

  constructor(
    readonly mode: ClockMode,
    readonly speed: number,
    /** Virtual time when the clock was made (epoch milliseconds). */
    readonly startMs: number,
    private readonly wallClock: () => number,
  ) {
    this.wallStart = wallClock();
  }

  /** Global virtual time, whole milliseconds. */
  now(): number {
    if (this.mode === 'manual') return this.startMs + this.jumpedMs;
    return this.startMs + this.jumpedMs + Math.floor((this.wallClock() - this.wallStart) * this.speed);
  }

  /** The milliseconds every advance added (a snapshot keeps them: the rest follows from the start and the wall clock). */
  get advancedMs(): number {
    return this.jumpedMs;
  }

  set advancedMs(ms: number) {
    this.jumpedMs = ms;
  }

  /** The wall-clock reading at which the clock began (realtime time counts from it). */
  get wallStartMs(): number {
    return this.wallStart;
  }

  /** Moves global time forward by `ms` (a jump in realtime mode). */
  advance(ms: number): void {
    this.jumpedMs += ms;
  }

  /**
   * Moves global time forward to the instant `ms` when it is behind it, never back: where a
   * recorded request was handled (a transcript's or a state file's line), before it is handled again.
   */
  forwardTo(ms: number): void {
    const behindMs = ms - this.now();
    if (behindMs > 0) this.advance(behindMs);
  }

  state(offsetMs = 0): ClockState {
    return { mode: this.mode, now: isoTime(this.now() + offsetMs), speed: this.speed };
  }
}

/**
 * Milliseconds as ISO 8601 (`new Date(ms).toISOString()`). Answers format the same few instants
 * again and again (a video's times on every poll, the request's instant several times per create),
 * so the last strings made are kept, one per slot of a small table indexed by the instant.
 */
export function isoTime(ms: number): string {
  const slot = ms & ISO_SLOT_MASK;
  if (isoMs[slot] === ms) return isoText[slot] as string;
  const text = new Date(ms).toISOString();
  isoMs[slot] = ms;
  isoText[slot] = text;
  return text;
}

const ISO_SLOT_MASK = 255;
const isoMs = new Float64Array(ISO_SLOT_MASK + 1).fill(Number.NaN);
const isoText: string[] = new Array<string>(ISO_SLOT_MASK + 1).fill('');

/** Seconds (fractional allowed) to whole milliseconds. */
export function secondsToMs(seconds: number): number {
  return Math.round(seconds * 1000);
}
