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
import { handleRequest, requestPathDeps } from '../request-path/handleRequest.js';
import { openSimulator } from '../core/simulator/openSimulator.js';
import type { Scenario } from '../core/scenario/scenario.js';
import { listBundledScenarios } from '../scenarios/load.js';
import { compareAnswer, emptyReport, type ReplayReport } from './compare.js';
import { recordedNetwork, recordedRequest, recordedStatus, replayedOnSocket, sentBody, type TranscriptLine, type TranscriptReading } from './lineFormat.js';

export interface ReplayOptions {
  /** Resolves a scenario a recorded reset names (a bundled name or a file path). */
  loadScenario: (name: string) => Scenario;
  /** Where the simulator reports its own bugs during the replay. */
  log?: (line: string) => void;
}

/**
 * Replays `transcript` (its header's scenario already checked) and reports every difference. The
 * recording simulator's overrides (a `--seed`, `--clock` or `--speed` that a reset keeps) are the
 * ones its header shows (`openSimulator`).
 */
export function replayTranscript(transcript: Pick<TranscriptReading, 'header' | 'lines'>, options: ReplayOptions): ReplayReport {
  const { header } = transcript;
  const standingWallMs = Date.parse(header.clock.start);
  const sim = openSimulator(header, { wallClock: () => standingWallMs, loadScenario: options.loadScenario });
  // The line being replayed (its recorded network fault decides what the bound made of a hang).
  let line: TranscriptLine | undefined;
  const deps = requestPathDeps(sim, { app: { scenarios: listBundledScenarios }, log: options.log ?? (() => {}), onSocket: replayedOnSocket(() => line) });
  const report = emptyReport();
  for (line of transcript.lines) {
    // `sim.clock` is read anew each time: a replayed reset makes a new clock.
    sim.clock.forwardTo(Date.parse(line.now));
    const answer = handleRequest(deps, recordedRequest(line));
    compareAnswer(report, line, recordedStatus(answer), sentBody(line.method, answer.body), recordedNetwork(answer));
  }
  return report;
}
