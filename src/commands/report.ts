/**
 * `sim report --url URL --api-key KEY`: asks a running simulator for the client report of one API
 * key (`GET /_sim/report`, through `SimulatorControl`) and prints it as tables. Exit status: 0 when no finding is an error,
 * 1 when one is (a CI step after the tests fails on it; a key that made no request is one,
 * `no_requests`), 2 when the simulator cannot be reached or does not answer with a report.
 */
import { Command, Option } from 'commander';
import { url as httpUrl } from './parsers.js';
import { SimulatorControl, SimulatorControlError } from '../control-client/client.js';
import type { ClientReport } from '../core/journal/clientReport.js';

const EXIT_ERROR_FINDING = 1;
const EXIT_UNREACHABLE = 2;
/** How long to wait for the simulator's answer. */
const TIMEOUT_MS = 10_000;

interface ReportOptions {
  url: string;
  apiKey: string;
  controlToken?: string;
}

/** Adds `sim report` to the program. */
export function registerReportCommand(program: Command): void {
  program
    .command('report')
    .description("print how well the client using an API key follows the interface document; exit 1 on an 'error' finding")
    .addOption(new Option('--url <url>', "the simulator's base URL").env('SIM_URL').argParser(httpUrl).makeOptionMandatory())
    .addOption(new Option('--api-key <key>', "the client's API key").env('SIM_API_KEY').makeOptionMandatory())
    .addOption(new Option('--control-token <token>', "the simulator's control token, when it has one").env('SIM_CONTROL_TOKEN'))
    .action(async (opts: ReportOptions, command: Command) => {
      // `--control-token` is also the server's flag: given after `report`, the program may take it.
      process.exitCode = await runReport({ ...opts, controlToken: command.optsWithGlobals<ReportOptions>().controlToken });
    });
}

async function runReport({ url, apiKey, controlToken }: ReportOptions): Promise<number> {
  /** The address the report was asked at, as sent (for messages). */
  let address = url;
  const control = new SimulatorControl({
    baseUrl: url,
    token: controlToken || undefined,
    fetch: (input, init) => {
      address = input instanceof Request ? input.url : input.toString();
      return fetch(input, { ...init, signal: AbortSignal.timeout(TIMEOUT_MS) });
    },
  });
  let status = 200;
  let body: unknown;
  try {
    body = await control.report(apiKey);
  } catch (e) {
    if (e instanceof SimulatorControlError) {
      status = e.status;
      body = jsonOf(e.text);
    } else if (!(e instanceof SyntaxError)) {
      // Not an answer that is no JSON (a SyntaxError): no answer at all.
      const inner = (e as { cause?: { code?: unknown; message?: unknown } }).cause;
      const cause = [inner?.code, inner?.message, e instanceof Error ? e.message : String(e)].find((c) => typeof c === 'string' && c !== '');
      process.stderr.write(`sim report: cannot reach the simulator at ${url} (${String(cause)}).\n`);
      return EXIT_UNREACHABLE;
    }
  }
  if (status !== 200 || !isReport(body)) {
    const message = (body as { error?: { message?: unknown } } | undefined)?.error?.message;
    process.stderr.write(
      `sim report: ${address} answered ${status}${typeof message === 'string' ? `: ${message}` : ', not a client report'} (${
        status === 401 ? 'give its control token with --control-token or SIM_CONTROL_TOKEN' : `is ${url} a simulator?`
      }).\n`,
    );
    return EXIT_UNREACHABLE;
  }
  process.stdout.write(formatReport(body));
  return body.findings.some((f) => f.severity === 'error') ? EXIT_ERROR_FINDING : 0;
}

/** The JSON value of `text`, or undefined when it is none. */
function jsonOf(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isReport(value: unknown): value is ClientReport {
  const v = value as Partial<ClientReport> | null | undefined;
  return typeof v === 'object' && v !== null && typeof v.account === 'string' && Array.isArray(v.findings) && typeof v.coverage === 'object';
}

/** The report as plain-text tables. */
export function formatReport(report: ClientReport): string {
  const lines: string[] = [];
  lines.push(`Client report for ${report.account}: ${report.requests} request${report.requests === 1 ? '' : 's'} in the journal`, '');
  lines.push(...table(['ENDPOINT', 'REQUESTS'], Object.entries(report.coverage.endpoints).map(([k, n]) => [k, String(n)]), [false, true]), '');
  const statuses = Object.entries(report.coverage.statuses);
  if (statuses.length > 0) {
    lines.push(...table(['STATUS', 'REQUESTS'], statuses.map(([k, n]) => [k, String(n)]), [false, true]), '');
  }
  // Requests whose outcome a prompt trigger chose (their statuses are counted above too).
  const triggers = Object.entries(report.coverage.triggers ?? {});
  if (triggers.length > 0) {
    lines.push(...table(['PROMPT TRIGGER', 'REQUESTS'], triggers.map(([k, n]) => [k, String(n)]), [false, true]), '');
  }
  if (report.findings.length === 0) {
    lines.push('No findings: the client broke none of the rules the report checks.');
    return `${lines.join('\n')}\n`;
  }
  const rows = report.findings.map((f) => [f.severity, f.code, String(f.count), f.examples.join(' ')]);
  const header = ['SEVERITY', 'FINDING', 'COUNT', 'EXAMPLES'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] as string).length)));
  const indent = ' '.repeat((widths[0] as number) + 2);
  lines.push(formatRow(header, widths, [false, false, true, false]));
  report.findings.forEach((f, i) => {
    lines.push(formatRow(rows[i] as string[], widths, [false, false, true, false]));
    for (const line of wrap(f.message, 100 - indent.length)) lines.push(`${indent}${line}`);
  });
  const errors = report.findings.filter((f) => f.severity === 'error').length;
  const warnings = report.findings.length - errors;
  lines.push('', `${errors} error${errors === 1 ? '' : 's'}, ${warnings} warning${warnings === 1 ? '' : 's'}.`);
  return `${lines.join('\n')}\n`;
}

function table(header: string[], rows: string[][], rightAligned: boolean[]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] as string).length)));
  return [formatRow(header, widths, rightAligned), ...rows.map((r) => formatRow(r, widths, rightAligned))];
}

function formatRow(cells: string[], widths: number[], rightAligned: boolean[]): string {
  return cells
    .map((c, i) => (rightAligned[i] ? c.padStart(widths[i] as number) : c.padEnd(widths[i] as number)))
    .join('  ')
    .trimEnd();
}

/** Splits text into lines of at most `width` characters, at spaces. */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line === '' ? word : `${line} ${word}`;
    }
  }
  if (line !== '') lines.push(line);
  return lines;
}
