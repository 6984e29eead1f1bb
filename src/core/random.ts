/**
 * Seeded random streams. Every draw the simulator makes comes from a stream keyed by the seed and by
 * what it is for (an account's n-th generation, an account's request faults), never from a shared
 * stream, so polling, other accounts and the timing of advances cannot change an outcome.
 */
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
  return new AleaStream(`${seed}\u0000${purpose.join('\u0000')}`);
}

/** 2^-32. */
const TWO_POW_MINUS_32 = 2.3283064365386963e-10;

/**
 * Johannes Baagøe's Alea, a 53-bit multiply-with-carry generator, seeded by his Mash hash of the
 * seed string: number for number the sequence of `seedrandom.alea(seed)` (a test compares them).
 * Written out here, without closures, with Mash's two truncations as `Math.floor` (each value they
 * truncate is at least 0 and below 2^32, where `x >>> 0` and `Math.floor(x)` agree): V8 compiles
 * `>>> 0` of a fractional value into far slower code, and seeding a stream would cost microseconds.
 */
class AleaStream implements RandomStream {
  private s0: number;
  private s1: number;
  private s2: number;
  private c = 1;
  private count = 0;

  constructor(seed: string) {
    const mash = { n: 0xefc8249d };
    this.s0 = mashNext(mash, ' ');
    this.s1 = mashNext(mash, ' ');
    this.s2 = mashNext(mash, ' ');
    this.s0 -= mashNext(mash, seed);
    if (this.s0 < 0) this.s0 += 1;
    this.s1 -= mashNext(mash, seed);
    if (this.s1 < 0) this.s1 += 1;
    this.s2 -= mashNext(mash, seed);
    if (this.s2 < 0) this.s2 += 1;
  }

  next(): number {
    this.count++;
    const t = 2091639 * this.s0 + this.c * TWO_POW_MINUS_32;
    this.s0 = this.s1;
    this.s1 = this.s2;
    this.c = t | 0;
    return (this.s2 = t - this.c);
  }

  drawn(): number {
    return this.count;
  }

  skip(n: number): void {
    for (let i = 0; i < n; i++) this.next();
  }

  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  chance(p: number): boolean {
    return p > 0 && this.next() < p;
  }

  token(length: number, prefix = ''): string {
    // One flat string from char codes: a string grown by `+=` (or a template around one) is a
    // rope, a node per piece, and an id is kept as long as its generation is stored.
    const codes = new Array<number>(prefix.length + length);
    for (let i = 0; i < prefix.length; i++) codes[i] = prefix.charCodeAt(i);
    for (let i = prefix.length; i < codes.length; i++) codes[i] = ALPHABET.charCodeAt(Math.floor(this.next() * ALPHABET.length));
    return String.fromCharCode(...codes);
  }

  weighted<T>(items: readonly T[], weight: (item: T) => number): T {
    const total = items.reduce((sum, item) => sum + weight(item), 0);
    let x = this.next() * total;
    for (const item of items) {
      x -= weight(item);
      if (x < 0) return item;
    }
    return items[items.length - 1] as T;
  }

  normal(): number {
    const u = 1 - this.next();
    const v = this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }
}

/** Mash: feeds `data` into the hash state `mash` and returns the hash so far, in [0, 1). */
function mashNext(mash: { n: number }, data: string): number {
  let n = mash.n;
  for (let i = 0; i < data.length; i++) {
    n += data.charCodeAt(i);
    let h = 0.02519603282416938 * n;
    n = Math.floor(h);
    h -= n;
    h *= n;
    n = Math.floor(h);
    h -= n;
    n += h * 0x100000000; // 2^32
  }
  mash.n = n;
  return (n >>> 0) * TWO_POW_MINUS_32;
}
