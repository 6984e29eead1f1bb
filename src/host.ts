/**
 * What the simulator writes to its host when its caller gives nothing else: the log. (The host's
 * clock and timers: `src/hostClock.ts`.)
 */

/** The default log: one line to standard error. */
export const logToStderr = (line: string): void => void process.stderr.write(`${line}\n`);
