/**
 * Recording one simulator: a recorder whose header is the simulator as it was when recording began
 * (scenario, seed, clock) and the addresses it writes into responses, and whose lines go to a file.
 */
import { isoTime } from '../core/clock.js';
import type { Simulator } from '../core/simulator.js';
import { SIMULATOR_VERSION } from '../version.js';
import { openTranscriptFile } from './file.js';
import { TRANSCRIPT_FORMAT } from './format.js';
import { TranscriptRecorder } from './recorder.js';

export interface Recording {
  readonly recorder: TranscriptRecorder;
  /** Closes the file (nothing is recorded after this). */
  close(): void;
}

/**
 * Starts recording `core` into `file` (created or emptied now). `baseUrl` reads the address the
 * simulator listens on (null while it does not); the header is written on the first line, or
 * earlier through `recorder.start()` once the addresses are known.
 */
export function recordTo(file: string, core: Simulator, baseUrl: () => string | null): Recording {
  const sink = openTranscriptFile(file);
  const begun = {
    scenario: structuredClone(core.scenario),
    seed: core.seed,
    clock: { mode: core.clock.mode, speed: core.clock.speed, start: isoTime(core.clock.startMs) },
  };
  const recorder = new TranscriptRecorder({
    header: () => ({ transcript: TRANSCRIPT_FORMAT, version: SIMULATOR_VERSION, ...begun, base_url: baseUrl(), cdn_url: core.cdnUrl }),
    write: (line) => sink.write(line),
    readFrom: (from) => sink.readFrom(from),
    keep: () => core.scenario.limits.journal_size,
  });
  return { recorder, close: () => sink.close() };
}
