/**
 * Replaying a transcript in-process: a fresh simulator as the header describes it, whose clock
 * moves only as the transcript says, answers every recorded request in order; each answer is
 * compared with the recorded one.
 *
 * Time: the wall clock the simulator is given stands still, so even a realtime transcript replays
 * on a clock that moves only when the replay moves it: to each line's `now` before its request
 * (never backwards), and by the recorded clock advances and resets themselves. Every draw depends
 * only on an account's own sequence of requests and its virtual time, so the answers are the same.
 */
import { handleRequest, type ApiRequest, type RequestPathDeps } from '../api/handleRequest.js';
import type { Scenario } from '../core/scenario.js';
import { Simulator } from '../core/simulator.js';
import { listBundledScenarios } from '../scenarios/load.js';
import { compareAnswer, emptyReport, type ReplayReport } from './compare.js';
import { recordedNetwork, recordedStatus, sentBody, type TranscriptLine, type TranscriptReading } from './format.js';

export interface ReplayOptions {
  /** Resolves a scenario a recorded reset names (a bundled name or a file path). */
  loadScenario: (name: string) => Scenario;
  /** Where the simulator reports its own bugs during the replay. */
  log?: (line: string) => void;
}

/**
 * Replays `transcript` (its header's scenario already checked) and reports every difference.
 *
 * The recording simulator's overrides (a `--seed`, `--clock` or `--speed` that a reset keeps) are
 * not written in the header as such: a header value that differs from its scenario's was one.
 */
export function replayTranscript(transcript: Pick<TranscriptReading, 'header' | 'lines'>, options: ReplayOptions): ReplayReport {
  const { header } = transcript;
  const { scenario } = header;
  const standingWallMs = Date.parse(header.clock.start);
  const sim = new Simulator({
    scenario,
    loadScenario: options.loadScenario,
    seed: header.seed === scenario.seed ? undefined : header.seed,
    clockMode: header.clock.mode === scenario.clock.mode ? undefined : header.clock.mode,
    speed: header.clock.speed === scenario.clock.speed ? undefined : header.clock.speed,
    wallClock: () => standingWallMs,
    cdnUrl: header.cdn_url,
    shard: header.shard ?? null,
  });
  const deps: RequestPathDeps = {
    sim,
    app: { scenarios: listBundledScenarios },
    log: options.log ?? (() => {}),
    responseFailures: [],
  };
  const report = emptyReport();
  for (const line of transcript.lines) {
    // `sim.clock` is read anew each time: a replayed reset makes a new clock.
    const behindMs = Date.parse(line.now) - sim.clock.now();
    if (behindMs > 0) sim.clock.advance(behindMs);
    const answer = handleRequest(deps, recordedRequest(line));
    compareAnswer(report, line, recordedStatus(answer), sentBody(line.method, answer.body), recordedNetwork(answer));
  }
  return report;
}

/** The request a transcript line (or a state file's line) records, as the HTTP adapter would have handed it over. */
export function recordedRequest(line: Pick<TranscriptLine, 'method' | 'path' | 'headers' | 'body' | 'body_too_large'>): ApiRequest {
  const queryAt = line.path.indexOf('?');
  return {
    method: line.method,
    path: queryAt < 0 ? line.path : line.path.slice(0, queryAt),
    query: queryAt < 0 ? '' : line.path.slice(queryAt + 1),
    headers: { ...line.headers },
    body: line.body_too_large ? 'too_large' : line.body === null ? null : Buffer.from(line.body, 'utf8'),
  };
}
