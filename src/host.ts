/**
 * What the simulator reads of its host when its caller gives nothing else: the wall clock and the
 * log. Every adapter that needs one takes it from here (the core is given them).
 */

const timeOrigin = performance.timeOrigin;
const monotonicNow = performance.now.bind(performance);

/** The host's wall clock, in milliseconds since the epoch, monotonic while the process runs. */
export const hostWallClock = (): number => timeOrigin + monotonicNow();

/** The default log: one line to standard error. */
export const logToStderr = (line: string): void => void process.stderr.write(`${line}\n`);
