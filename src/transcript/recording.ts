/**
 * Recording one simulator: a recorder whose header is the simulator as it was when recording began
 * (scenario, seed, clock) and the addresses it writes into responses, and whose lines go to a file.
 */
import { Readable } from 'node:stream';
import type { Exchange, StreamedBody } from '../request-path/exchange.js';
import { isoTime } from '../core/time/clock.js';
import type { Simulator } from '../core/simulator/simulator.js';
import { FileLockedError, LockFileWriteError, acquireFileLock, refuseIfHeld, type FileLock } from '../fileLock.js';
import type { HostClock } from '../hostClock.js';
import { SIMULATOR_VERSION } from '../version.js';
import { TranscriptFileError, checkTranscriptPath, openTranscriptFile, type TranscriptFile } from './file.js';
import { TRANSCRIPT_FORMAT } from './lineFormat.js';
import { TranscriptRecorder, type RecordingStatus } from './recorder.js';

/** The size bound of a transcript unless one is given: 1 GiB. */
export const DEFAULT_RECORD_MAX_BYTES = 2 ** 30;

export interface RecordingOptions {
  /** The file's size bound in bytes. */
  maxBytes: number;
  /** Where a recording that stops says so (and a lock that cannot be made). */
  warn: (line: string) => void;
  /** The host clock the file's lock is refreshed on. Default: `systemClock`. */
  hostClock?: HostClock;
}

export interface Recording {
  /**
   * Takes the file: its lock, then the file itself, emptied, and its header. Called once the server
   * listens (so that a start that fails touches nothing); throws `FileLockedError` or
   * `TranscriptFileError`. An app that never listens opens it at the first thing it records.
   */
  open(): void;
  /** Records one exchange; never throws (a write that fails stops the recording). */
  record(exchange: Exchange): void;
  status(): RecordingStatus;
  /** The whole transcript so far, streamed, for `GET /_sim/transcript`. */
  transcript(): StreamedBody;
  /** Closes the file and releases it (nothing is recorded after this). */
  close(): void;
}

/**
 * Checks, before anything is started and without touching it, that `file` can be recorded to:
 * throws `TranscriptFileError` (it cannot be written) or `FileLockedError` (another running
 * simulator records to it).
 */
export function checkRecordable(file: string): void {
  checkTranscriptPath(file);
  refuseIfHeld(file);
}

/**
 * Records `core` into `file`. The header is the simulator as it was when recording began (scenario,
 * seed, clock) and the addresses it writes into responses; `baseUrl` reads the address it listens on
 * (null while it does not).
 */
export function recordTo(file: string, core: Simulator, baseUrl: () => string | null, options: RecordingOptions): Recording {
  const begun = {
    scenario: structuredClone(core.scenario),
    seed: core.seed,
    clock: { mode: core.clock.mode, speed: core.clock.speed, start: isoTime(core.clock.startMs) },
  };
  let phase: 'new' | 'open' | 'failed' | 'closed' = 'new';
  let sink: TranscriptFile | undefined;
  let lock: FileLock | undefined;
  const recorder = new TranscriptRecorder({
    header: () => ({ transcript: TRANSCRIPT_FORMAT, version: SIMULATOR_VERSION, ...begun, base_url: baseUrl(), cdn_url: core.ownCdnUrl, shard: core.shard }),
    write: (line, bytes) => sink?.write(line, bytes),
    truncate: (length) => sink?.truncate(length) ?? false,
    maxBytes: options.maxBytes,
    onStop: (stopped) =>
      options.warn(
        stopped.reason === 'size_limit'
          ? `recording stopped: the transcript ${file} reached its size limit (${stopped.max_bytes} bytes, --record-max-bytes); requests are still answered but no longer recorded`
          : `recording stopped: cannot write the transcript ${file} (${stopped.error}); requests are still answered but no longer recorded`,
      ),
  });

  const open = (): void => {
    if (phase !== 'new') return;
    try {
      lock = acquireFileLock(file, options.warn, options.hostClock);
    } catch (e) {
      if (e instanceof LockFileWriteError) throw new TranscriptFileError(file, e.code, `cannot write the transcript ${file}: ${e.message}`);
      throw e;
    }
    try {
      sink = openTranscriptFile(file);
    } catch (e) {
      lock.release();
      throw e;
    }
    phase = 'open';
    recorder.start();
  };
  /** Opens the file for an app that never listened; a failure stops the recording instead of the request. */
  const opened = (): boolean => {
    if (phase === 'new') {
      try {
        open();
      } catch (e) {
        phase = 'failed';
        recorder.fail(e instanceof FileLockedError ? 'ELOCKED' : ((e as { code?: string }).code ?? 'unknown'));
      }
    }
    return phase === 'open';
  };

  return {
    open,
    record(exchange) {
      if (opened()) recorder.record(exchange);
    },
    status: () => recorder.status(),
    transcript() {
      opened();
      const { pendingHeader, bytes } = recorder.contents();
      const file = sink;
      async function* chunks(): AsyncGenerator<string | Buffer> {
        if (pendingHeader !== undefined) yield pendingHeader;
        if (file && bytes > 0) yield* file.read(0, bytes);
      }
      return {
        length: (pendingHeader === undefined ? 0 : Buffer.byteLength(pendingHeader)) + bytes,
        open: () => Readable.from(chunks(), { objectMode: false }),
        text: () => (pendingHeader ?? '') + (file && bytes > 0 ? file.readAll(0, bytes).toString('utf8') : ''),
      };
    },
    close() {
      if (phase === 'closed') return;
      phase = 'closed';
      sink?.close();
      lock?.release();
    },
  };
}
