// Small helpers: times, durations and stages.
import { isInFlight } from './pipeline.js';

/** Shorter names for the pipeline's stages (the list itself comes from GET /_sim/pipeline). */
const STAGE_LABELS = { output_verification: 'verification' };

/** `output_verification` → `verification`, `claim_linking` → `claim linking`. */
export function stageLabel(name) {
  return STAGE_LABELS[name] ?? name.replaceAll('_', ' ');
}

export const ms = (iso) => Date.parse(iso);

/** `2026-01-01 00:01:31.406` (virtual time, UTC). */
export function clockText(iso) {
  return iso ? iso.replace('T', ' ').replace(/Z$/, '') : '—';
}

/** `00:01:31.4` — the time of day, for dense tables. */
export function timeText(iso) {
  return iso ? iso.slice(11, 21) : '—';
}

/** `4.88 s`, `2 min 3 s`, `1 h 4 min`. */
export function durationText(milliseconds) {
  const s = Math.max(0, milliseconds) / 1000;
  if (s < 10) return `${s.toFixed(2)} s`;
  if (s < 60) return `${s.toFixed(1)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86400)} d ${Math.round((s % 86400) / 3600)} h`;
}

/** The stage a generation is in now (null once resolved). */
export function currentStage(g) {
  if (!isInFlight(g)) return null;
  const open = g.stages.findLast((s) => s.left_at === null);
  return open ? open.stage : null;
}

/** The end of a generation's timeline: its completion, else the later of `now` and its last entry. */
export function timelineEnd(g, nowMs) {
  if (g.completed_at) return ms(g.completed_at);
  const last = g.stages.at(-1);
  return Math.max(nowMs, last ? ms(last.entered_at) : ms(g.created_at));
}

/** Each visited stage with its duration (open stages run until `endMs`). */
export function stageSpans(g, endMs) {
  return g.stages.map((s) => {
    const start = ms(s.entered_at);
    const stop = s.left_at ? ms(s.left_at) : endMs;
    return { stage: s.stage, start, stop, open: s.left_at === null, duration: Math.max(0, stop - start) };
  });
}

/** A change signature: a row is rebuilt only when this differs. */
export function signature(g) {
  const last = g.stages.at(-1);
  return [g.status, g.stages.length, last?.left_at ?? '', g.completed_at ?? '', g.output ? 1 : 0].join('|');
}

export function shortId(id) {
  return id.length > 14 ? `${id.slice(0, 8)}…${id.slice(-4)}` : id;
}

export function cents(value) {
  return value === null || value === undefined ? '—' : `$${(value / 100).toFixed(2)}`;
}
