/**
 * Seeded random streams. Every draw the simulator makes comes from a stream keyed by the seed and by
 * what it is for (an account's n-th generation, an account's request faults), never from a shared
 * stream, so polling, other accounts and the timing of advances cannot change an outcome.
 */
import seedrandom from 'seedrandom';

export interface RandomStream {
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [0, n). */
  int(n: number): number;
  /** `true` with probability p. */
  chance(p: number): boolean;
  /** `prefix` followed by `length` characters from [0-9A-Za-z], as one flat string. */
  token(length: number, prefix?: string): string;
  /** An element chosen by weight; `weights` must not all be zero. */
  weighted<T>(items: readonly T[], weight: (item: T) => number): T;
  /** A standard normal deviate (Box-Muller). */
  normal(): number;
  /** How many numbers were drawn so far (a snapshot keeps it; `skip` brings a new stream there). */
  drawn(): number;
  /** Draws `n` numbers and drops them. */
  skip(n: number): void;
}

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Creates a stream from a seed and a purpose; the same arguments always give the same sequence. */
export function createStream(seed: number, ...purpose: (string | number)[]): RandomStream {
  const prng = seedrandom.alea(`${seed}\u0000${purpose.join('\u0000')}`);
  let drawn = 0;
  const next = (): number => {
    drawn++;
    return prng();
  };
  return {
    drawn: () => drawn,
    skip(n) {
      for (let i = 0; i < n; i++) next();
    },
    next,
    int: (n) => Math.floor(next() * n),
    chance: (p) => p > 0 && next() < p,
    token(length, prefix = '') {
      // One flat string from char codes: a string grown by `+=` (or a template around one) is a
      // rope, a node per piece, and an id is kept as long as its generation is stored.
      const codes = new Array<number>(prefix.length + length);
      for (let i = 0; i < prefix.length; i++) codes[i] = prefix.charCodeAt(i);
      for (let i = prefix.length; i < codes.length; i++) codes[i] = ALPHABET.charCodeAt(Math.floor(next() * ALPHABET.length));
      return String.fromCharCode(...codes);
    },
    weighted(items, weight) {
      const total = items.reduce((sum, item) => sum + weight(item), 0);
      let x = next() * total;
      for (const item of items) {
        x -= weight(item);
        if (x < 0) return item;
      }
      return items[items.length - 1] as (typeof items)[number];
    },
    normal() {
      const u = 1 - next();
      const v = next();
      return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
    },
  };
}
