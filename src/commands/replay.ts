/**
 * `sim replay FILE [--target URL]`: replays a transcript and compares every answer with the
 * recorded one. Exit 0 when all are identical, 1 when some differ, 2 when the file cannot be read
 * (or the target cannot be used).
 */
import { Option, type Command } from 'commander';
import type { Scenario } from '../core/scenario/scenario.js';
import { ScenarioError, bundledScenarioNames, loadScenario, scenarioFromValue } from '../scenarios/load.js';
import { url } from './parsers.js';
import { formatReport, type ReplayReport } from '../transcript/compare.js';
import { fileRows, RowTooLongError } from '../fileRows.js';
import { TranscriptError, readTranscript, type TranscriptReading } from '../transcript/lineFormat.js';

const EXIT_DIFFERENT = 1;
const EXIT_UNREADABLE = 2;

export interface ReplayCommandOptions {
  target?: string;
  /** The target's control token. */
  controlToken?: string;
}

/** Adds `replay` to the `sim` program. */
export function registerReplayCommand(program: Command): void {
  program
    .command('replay')
    .description(
      'replay a transcript (recorded with --record) on a fresh simulator and compare every answer byte for byte; exit 0 when all are identical, 1 when some differ, 2 when the file cannot be read',
    )
    .argument('<file>', 'the transcript (JSON Lines)')
    .option('--target <url>', 'replay against a running simulator (started with --clock manual) instead of in-process', url)
    .addOption(new Option('--control-token <token>', "the target's control token, when it has one").env('SIM_CONTROL_TOKEN'))
    .action(async (file: string, opts: ReplayCommandOptions, command: Command) => {
      // `--control-token` is also the server's flag: given after `replay`, the program may take it.
      const controlToken = command.optsWithGlobals<ReplayCommandOptions>().controlToken;
      process.exitCode = await runReplay(file, { ...opts, controlToken }, {
        out: (text) => process.stdout.write(text),
        err: (text) => process.stderr.write(text),
      });
    });
}

/** Runs the command; resolves to its exit status. */
export async function runReplay(file: string, opts: ReplayCommandOptions, io: { out: (text: string) => void; err: (text: string) => void }): Promise<number> {
  const unreadable = (e: unknown): number => {
    if (!(e instanceof TranscriptError || e instanceof RowTooLongError || e instanceof ScenarioError || e instanceof UnreadableFile)) throw e;
    io.err(`sim replay: ${e instanceof ScenarioError ? e.message : `${file}: ${e.message}`}\n`);
    return EXIT_UNREADABLE;
  };
  let transcript: TranscriptReading;
  try {
    transcript = openTranscript(file);
  } catch (e) {
    return unreadable(e);
  }
  // Replaying is loaded only when asked for: the server's start does not pay for it.
  const [{ replayTranscript }, { TargetError, replayAgainstTarget }] = await Promise.all([
    import('../transcript/replay.js'),
    import('../transcript/replayTarget.js'),
  ]);
  let report: ReplayReport;
  try {
    // The lines are read as they are replayed: a line found damaged stops the replay there.
    report = opts.target
      ? await replayAgainstTarget(transcript, opts.target, { bundledScenario, controlToken: opts.controlToken || undefined })
      : replayTranscript(transcript, { loadScenario: (name) => loadScenario(name), log: (line) => io.err(`sim replay: ${line}\n`) });
  } catch (e) {
    if (e instanceof TargetError) {
      io.err(`sim replay: ${e.message}\n`);
      return EXIT_UNREADABLE;
    }
    return unreadable(e);
  }
  warnIfCut(file, transcript.ending, io.err);
  for (const note of report.notes) io.err(`sim replay: note: ${note}\n`);
  io.out(formatReport(report));
  return report.differences.length === 0 ? 0 : EXIT_DIFFERENT;
}

class UnreadableFile extends Error {}

/**
 * The longest line a transcript may hold: a request body is at most 1 MiB, and its JSON string,
 * with every byte escaped, at most six times that, beside an answer of about the same bound.
 */
const MAX_LINE_CHARS = 16 * 1024 * 1024;

/** Opens a transcript file: its header read and its scenario checked as a scenario file's would be; its lines read as they are replayed. */
function openTranscript(file: string): TranscriptReading {
  let reading: TranscriptReading;
  try {
    reading = readTranscript(fileRows(file, MAX_LINE_CHARS));
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== undefined) throw new UnreadableFile(`cannot read it (${code})`);
    throw e;
  }
  const scenario = scenarioFromValue(reading.header.scenario, `${file} line 1 (the header's scenario)`);
  return { ...reading, header: { ...reading.header, scenario } };
}

/** Says when the recording the transcript holds was cut (known once its lines have been read). */
function warnIfCut(file: string, ending: TranscriptReading['ending'], warn: (text: string) => void): void {
  if (ending.truncated > 0) {
    warn(`sim replay: ${file}: the transcript was cut: its last line was cut short (the recording stopped while writing it); it is left out\n`);
  }
  const { end } = ending;
  if (end) {
    const why =
      end.stopped === 'size_limit'
        ? `the file reached its size limit (${end.max_bytes} bytes, --record-max-bytes)`
        : `a write to the file failed (${end.error ?? 'no error code'})`;
    warn(`sim replay: ${file}: the transcript was cut: recording stopped because ${why}; requests from seq ${end.next_seq} on were not recorded, the ones before are replayed\n`);
  }
}

function bundledScenario(name: string): Scenario | undefined {
  if (!bundledScenarioNames().includes(name)) return undefined;
  return loadScenario(name);
}
