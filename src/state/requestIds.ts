/**
 * The simulator's global request ids (`req_0000000012`: control requests, media, requests without a
 * key) count every such request, and most of them (reads of the control API, media) leave no line in
 * the state file. To give out no id twice after a restart, the state keeps the count: this watches
 * every id the core gives out (wrapping the core's `nextRequestId` on this one instance, which every
 * part of the app calls: the request path, the access guard, the HTTP server) and can move the count
 * forward to a number read back from the file.
 */
import type { Simulator } from '../core/simulator.js';
import { globalIdNumber } from './format.js';

export interface GlobalRequestIds {
  /** The number of the last global id given out (0: none since the start or the last global reset). */
  last(): number;
  /** Gives out ids until the last one given out is `n` (nothing when it is there already). */
  forwardTo(n: number): void;
  /** After a global reset: the count starts again. */
  restart(): void;
  /** After a snapshot was loaded into the core: the count is the core's, `n`. */
  resume(n: number): void;
}

/** Watches `core`'s global ids; `onGiven` is told of each (after it is given out). */
export function watchGlobalRequestIds(core: Simulator, onGiven: () => void): GlobalRequestIds {
  const give = core.nextRequestId.bind(core);
  let last = 0;
  core.nextRequestId = (account) => {
    const id = give(account);
    if (account === undefined) {
      last = globalIdNumber(id) ?? last;
      onGiven();
    }
    return id;
  };
  return {
    last: () => last,
    forwardTo(n) {
      while (last < n) core.nextRequestId();
    },
    restart() {
      last = 0;
    },
    resume(n) {
      last = n;
    },
  };
}
