/**
 * Comparing a replayed answer with the recorded one: status, body byte for byte, and the network
 * fault it met (kind, phase, bytes of the body that reached the client).
 */
import { describeRecordedNetwork, type RecordedNetwork, type TranscriptLine } from './lineFormat.js';

/** A request whose replayed answer differs from the recorded one. */
interface ReplayDifference {
  seq: number;
  method: string;
  path: string;
  recordedStatus: number | null;
  replayedStatus: number | null;
  /** The network faults, in words, when they differ (`reset (after, 0 body bytes)`, `none`). */
  network?: { recorded: string; replayed: string };
  /** The first byte (0-based, of the UTF-8 bodies) where they differ; null when the bodies are identical. */
  position: number | null;
  /** The bodies around that byte (a few dozen bytes each), for the report. */
  recordedExcerpt: string;
  replayedExcerpt: string;
}

/** What a replay found. */
export interface ReplayReport {
  /** Requests replayed and compared. */
  replayed: number;
  identical: number;
  differences: ReplayDifference[];
  /** Requests of the transcript that were not sent, and why. */
  skipped: { seq: number; method: string; path: string; why: string }[];
  /** Things the user should know about the replay (printed before the result). */
  notes: string[];
}

export function emptyReport(): ReplayReport {
  return { replayed: 0, identical: 0, differences: [], skipped: [], notes: [] };
}

/** Adds one replayed answer to the report. */
export function compareAnswer(report: ReplayReport, line: TranscriptLine, status: number | null, body: string, network?: RecordedNetwork): void {
  report.replayed++;
  const position = firstDifference(line.response, body);
  const [recordedNetwork, replayedNetwork] = [describeRecordedNetwork(line.network), describeRecordedNetwork(network)];
  if (status === line.status && position === null && recordedNetwork === replayedNetwork) {
    report.identical++;
    return;
  }
  report.differences.push({
    seq: line.seq,
    method: line.method,
    path: line.path,
    recordedStatus: line.status,
    replayedStatus: status,
    position,
    recordedExcerpt: excerpt(line.response, position ?? 0),
    replayedExcerpt: excerpt(body, position ?? 0),
    ...(recordedNetwork !== replayedNetwork && { network: { recorded: recordedNetwork, replayed: replayedNetwork } }),
  });
}

/** The first byte where the UTF-8 encodings of `a` and `b` differ, or null when they are equal. */
function firstDifference(a: string, b: string): number | null {
  if (a === b) return null;
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) if (x[i] !== y[i]) return i;
  return n;
}

const BEFORE = 30;
const AFTER = 50;

function excerpt(text: string, position: number): string {
  const bytes = Buffer.from(text, 'utf8');
  const start = Math.max(0, position - BEFORE);
  const end = Math.min(bytes.length, position + AFTER);
  return `${start > 0 ? '...' : ''}${bytes.subarray(start, end).toString('utf8')}${end < bytes.length ? '...' : ''}`;
}

/** The report as the `sim replay` command prints it. */
export function formatReport(report: ReplayReport): string {
  let out = '';
  for (const d of report.differences) {
    const status =
      d.recordedStatus === d.replayedStatus ? `status ${d.recordedStatus}` : `status ${d.recordedStatus} recorded, ${d.replayedStatus} replayed`;
    const bodies = d.position === null ? 'bodies identical' : `bodies differ from byte ${d.position}`;
    const network = d.network ? `; network fault ${d.network.recorded} recorded, ${d.network.replayed} replayed` : '';
    out += `seq ${d.seq} ${d.method} ${d.path}: ${status}; ${bodies}${network}\n`;
    if (d.position !== null) {
      out += `  recorded: ${JSON.stringify(d.recordedExcerpt)}\n`;
      out += `  replayed: ${JSON.stringify(d.replayedExcerpt)}\n`;
    }
  }
  for (const s of report.skipped) out += `skipped seq ${s.seq} ${s.method} ${s.path}: ${s.why}\n`;
  const n = report.replayed;
  const requests = `${n} request${n === 1 ? '' : 's'}`;
  out +=
    report.differences.length === 0
      ? `replayed ${requests}: ${report.identical} identical\n`
      : `replayed ${requests}: ${report.identical} identical, ${report.differences.length} different\n`;
  return out;
}
