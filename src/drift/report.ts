/**
 * A drift run as text (one row per assumption, the evidence of each departure under its row, the
 * cancels, the spend counted last) and as JSON.
 */
import type { DriftReport } from './run.js';

/** Departures shown per row in the text report (the JSON has them all). */
const EVIDENCE_SHOWN = 5;

export function formatReport(report: DriftReport): string {
  const lines: string[] = [];
  lines.push(`sim drift: ${report.target} (${report.requests} request${report.requests === 1 ? '' : 's'})`);
  if (report.aborted !== undefined) {
    lines.push(`stopped: ${report.aborted}`);
  } else {
    lines.push('');
    const width = Math.max(...report.rows.map((r) => r.id.length));
    for (const row of report.rows) {
      const head = `${row.result.padEnd(12)}  ${row.id.padEnd(width)}`;
      if (row.result === 'confirmed') lines.push(`${head}  ${row.checks} check${row.checks === 1 ? '' : 's'} held`);
      else if (row.result === 'not_observed') lines.push(`${head}  ${row.reason ?? ''}`);
      else {
        lines.push(`${head}  ${row.evidence.length} departure${row.evidence.length === 1 ? '' : 's'}${row.checks > 0 ? `, ${row.checks} check${row.checks === 1 ? '' : 's'} held` : ''}`);
        for (const e of row.evidence.slice(0, EVIDENCE_SHOWN)) {
          lines.push(`      request:  ${e.request}`);
          lines.push(`      expected: ${e.expected}`);
          lines.push(`      observed: ${e.observed}`);
        }
        if (row.evidence.length > EVIDENCE_SHOWN) lines.push(`      ... and ${row.evidence.length - EVIDENCE_SHOWN} more (see --json)`);
      }
    }
    const count = (result: string) => report.rows.filter((r) => r.result === result).length;
    lines.push('');
    lines.push(`${count('confirmed')} confirmed, ${count('contradicted')} contradicted, ${count('not_observed')} not observed`);
  }
  for (const c of report.cancels) {
    lines.push(c.ok ? `canceled ${c.id}` : `CANCEL FAILED for ${c.id}: ${c.detail} (cancel it yourself: it may be charged)`);
  }
  for (const item of report.spend.items.filter((i) => i.unexpected)) {
    lines.push(`unexpected: ${item.what}${item.cents > 0 ? ` (counted at ${item.cents} cents)` : ''}`);
  }
  if (report.spend.skipped.length > 0) {
    lines.push(`skipped for the spend limit: ${report.spend.skipped.map((s) => `${s.probe} (${s.cents} cents)`).join(', ')}`);
  }
  lines.push(`spend counted: ${report.spend.countedCents} cents (limit ${report.spend.limitCents} cents; each request that may create counted at its full list price)`);
  return `${lines.join('\n')}\n`;
}

/** The report as the `--json` file holds it. */
export function reportJson(report: DriftReport): string {
  return `${JSON.stringify(
    {
      target: report.target,
      requests: report.requests,
      exit_code: report.exitCode,
      ...(report.aborted !== undefined ? { aborted: report.aborted } : {}),
      rows: report.rows.map((r) => ({
        id: r.id,
        result: r.result,
        checks: r.checks,
        ...(r.result === 'contradicted' ? { evidence: r.evidence } : {}),
        ...(r.reason !== undefined ? { reason: r.reason } : {}),
      })),
      cancels: report.cancels,
      spend: {
        limit_cents: report.spend.limitCents,
        counted_cents: report.spend.countedCents,
        items: report.spend.items,
        skipped: report.spend.skipped,
      },
    },
    null,
    2,
  )}\n`;
}
