// DOM building: table rows, stage timelines, the detail panel, the journal.
import { keyframeUrl, mediaUrl } from './api.js';
import {
  cents,
  clockText,
  currentStage,
  durationText,
  ms,
  shortId,
  stageLabel,
  stageSpans,
  timeText,
  timelineEnd,
} from './format.js';
import { timedStages } from './pipeline.js';

/** `h('td', { class: 'x', dataset: { id } }, child, 'text')` */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'dataset') Object.assign(el.dataset, value);
    else if (name === 'style') Object.assign(el.style, value);
    else if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
    else if (name === 'text') el.textContent = value;
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

function statusBadge(status, testid) {
  return h('span', { class: `badge status-${status}`, 'data-testid': testid }, status);
}

/** Behind the proxy in front of shards: the shard that holds the generation (nothing for a simulator alone). */
function shardLabel(g, testid) {
  return g.shard === undefined ? null : h('span', { class: 'shard-label mono', 'data-testid': testid, title: 'The shard that holds this generation' }, `shard ${g.shard}`);
}

/** The image to show for a generation: its thumbnail once succeeded, else its keyframe. */
function preview(g) {
  if (g.output?.thumbnail_url) {
    return h('img', {
      class: 'thumb',
      src: mediaUrl(g.output.thumbnail_url),
      alt: `Thumbnail of ${g.id}`,
      width: 96,
      height: 54,
      loading: 'lazy',
      'data-testid': 'generation-thumbnail',
    });
  }
  if (g.keyframe) {
    return h('img', {
      class: 'thumb keyframe',
      src: keyframeUrl(g.keyframe.id, g.shard),
      alt: `Keyframe ${g.keyframe.id} of ${g.id}`,
      width: 96,
      height: 54,
      loading: 'lazy',
      'data-testid': 'generation-keyframe',
    });
  }
  return h('span', { class: 'thumb placeholder', 'aria-hidden': 'true' }, g.status === 'failed' ? '✕' : '…');
}

/** A horizontal bar of the visited stages on the virtual clock; its width is set by `scaleTimelines`. */
function timeline(g, nowMs) {
  const end = timelineEnd(g, nowMs);
  const span = Math.max(0, end - ms(g.created_at));
  const spans = stageSpans(g, end).filter((s) => s.duration > 0 || s.open);
  const label = spans.map((s) => `${stageLabel(s.stage)} ${durationText(s.duration)}${s.open ? ' (now)' : ''}`).join(', ');
  const track = h(
    'span',
    { class: 'track', dataset: { span: String(span) } },
    spans.map((s) =>
      h('span', {
        class: `seg seg-${s.stage}${s.open ? ' open' : ''}`,
        style: { flexGrow: String(Math.max(s.duration, span / 200)) },
        title: `${stageLabel(s.stage)}: ${durationText(s.duration)}`,
      }),
    ),
  );
  return h(
    'span',
    { class: 'timeline', role: 'img', 'aria-label': label || 'no stage yet', title: label },
    h('span', { class: 'rail' }, track),
    h('span', { class: 'total' }, durationText(span)),
  );
}

/** Gives every track on the page one scale: the longest timeline fills the rail. */
export function scaleTimelines(root) {
  const tracks = [...root.querySelectorAll('.track')];
  const max = Math.max(1, ...tracks.map((t) => Number(t.dataset.span)));
  for (const t of tracks) t.style.width = `${Math.max(1.5, (100 * Number(t.dataset.span)) / max)}%`;
}

function flagsCell(g) {
  const items = [];
  if (g.error) {
    items.push(
      h(
        'span',
        { class: `flag sev-block`, title: g.error.message, 'data-testid': 'generation-error' },
        g.error.stage ? `${g.error.code} @ ${stageLabel(g.error.stage)}` : g.error.code,
      ),
    );
  }
  for (const f of g.compliance?.flags ?? []) {
    items.push(h('span', { class: `flag sev-${f.severity}`, title: `${f.severity}: ${f.message}` }, f.code));
  }
  return items.length ? items : h('span', { class: 'muted' }, '—');
}

export function generationRow(g, nowMs, { selected, onOpen, onAccount }) {
  const stage = currentStage(g);
  return h(
    'tr',
    {
      'data-testid': 'generation-row',
      dataset: { id: g.id, status: g.status },
      class: selected ? 'selected' : undefined,
      'aria-selected': selected ? 'true' : 'false',
    },
    h('td', { class: 'preview' }, preview(g)),
    h(
      'td',
      { class: 'gen' },
      h(
        'button',
        {
          type: 'button',
          class: 'link mono',
          'data-testid': 'generation-open',
          'aria-label': `Show details of ${g.id}`,
          title: g.id,
          onclick: () => onOpen(g.id),
        },
        shortId(g.id),
      ),
      h('div', { class: 'prompt', title: g.prompt }, g.prompt),
      h(
        'button',
        { type: 'button', class: 'link mono account', title: `Show only the generations of ${g.account}`, onclick: () => onAccount(g.account) },
        g.account,
      ),
      shardLabel(g, 'generation-shard'),
    ),
    h(
      'td',
      { class: 'status' },
      statusBadge(g.status, 'generation-status'),
      h('div', { class: 'stage', 'data-testid': 'generation-stage' }, stage ? stageLabel(stage) : ''),
    ),
    h('td', { class: 'timeline-cell' }, timeline(g, nowMs)),
    h('td', { class: 'flags' }, flagsCell(g)),
    h('td', { class: 'created mono', title: g.created_at }, timeText(g.created_at)),
  );
}

/** The detail panel's content. Keeps a playing <video> when its source did not change. */
export function renderDetail(container, g, nowMs) {
  const oldVideo = container.querySelector('video');
  container.replaceChildren();
  if (!g) {
    container.append(h('p', { class: 'muted empty' }, 'Select a generation to see its stages, media and flags.'));
    return;
  }
  const parts = [
    ...detailHead(g),
    detailMedia(g, oldVideo),
    g.error ? detailError(g.error) : null,
    g.compliance ? detailCompliance(g.compliance) : null,
    detailFields(g),
    ...detailStages(g, nowMs),
  ];
  container.append(...parts.filter((part) => part !== null));
}

/** Its id, status and current stage, and its prompt. */
function detailHead(g) {
  const stage = currentStage(g);
  return [
    h(
      'div',
      { class: 'detail-head' },
      h('code', { class: 'mono id', 'data-testid': 'detail-id' }, g.id),
      statusBadge(g.status, 'detail-status'),
      shardLabel(g, 'detail-shard'),
      stage ? h('span', { class: 'stage' }, stageLabel(stage)) : null,
    ),
    h('p', { class: 'prompt-full' }, g.prompt),
  ];
}

/** Its video (the playing `oldVideo` when its source is the same) and its keyframe; null when it has neither. */
function detailMedia(g, oldVideo) {
  const media = h('div', { class: 'media' });
  if (g.output?.url) {
    const src = mediaUrl(g.output.url);
    const video =
      oldVideo && oldVideo.dataset.src === src
        ? oldVideo
        : h('video', {
            'data-testid': 'detail-video',
            dataset: { src },
            src,
            poster: mediaUrl(g.output.thumbnail_url),
            controls: true,
            muted: true,
            loop: true,
            playsinline: true,
            preload: 'metadata',
            'aria-label': `Output video of ${g.id}`,
          });
    video.muted = true;
    media.append(h('figure', {}, video, h('figcaption', {}, h('a', { href: g.output.url, target: '_blank', rel: 'noopener' }, 'MP4'), ' · ', h('a', { href: g.output.thumbnail_url, target: '_blank', rel: 'noopener' }, 'thumbnail'))));
  }
  if (g.keyframe) {
    media.append(
      h(
        'figure',
        { class: 'keyframe' },
        h('img', { src: keyframeUrl(g.keyframe.id, g.shard), alt: `Keyframe ${g.keyframe.id}`, 'data-testid': 'detail-keyframe' }),
        h('figcaption', {}, 'keyframe ', h('code', { class: 'mono' }, g.keyframe.id)),
      ),
    );
  }
  return media.childElementCount ? media : null;
}

function detailError(error) {
  return h(
    'div',
    { class: 'callout danger', role: 'note', 'data-testid': 'detail-error' },
    h('strong', {}, `${error.type} · ${error.code}`),
    error.stage ? ` at ${stageLabel(error.stage)}` : '',
    h('div', {}, error.message),
  );
}

function detailCompliance({ verified, flags }) {
  return h(
    'div',
    { class: `callout ${verified ? (flags.length ? 'warning' : 'ok') : 'danger'}`, 'data-testid': 'detail-compliance' },
    h('strong', {}, verified ? 'Output verified' : 'Output not verified'),
    flags.length
      ? h('ul', { class: 'flag-list' }, flags.map((f) => h('li', {}, h('span', { class: `flag sev-${f.severity}` }, f.severity), ' ', h('code', {}, f.code), ' — ', f.message)))
      : h('span', { class: 'muted' }, ' · no flags'),
  );
}

function detailFields(g) {
  const fields = [
    ['account', h('code', { class: 'mono' }, g.account)],
    ['model', g.routed_model ? `${g.model} → ${g.routed_model}` : g.model],
    ['output', `${g.resolution} · ${g.duration_seconds} s`],
    ['cost', cents(g.cost_cents)],
    ['created', clockText(g.created_at)],
    ['completed', clockText(g.completed_at)],
  ];
  if (g.negative_prompt) fields.push(['negative', g.negative_prompt]);
  return h('dl', { class: 'fields' }, fields.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

/** The stage timeline on a shared axis, from creation to completion (or now): a heading and a table. */
function detailStages(g, nowMs) {
  const end = timelineEnd(g, nowMs);
  const start = ms(g.created_at);
  const total = Math.max(1, end - start);
  const row = (s) =>
    h(
      'tr',
      { class: s.open ? 'open' : undefined },
      h('td', {}, stageLabel(s.stage)),
      h('td', { class: 'mono' }, `+${durationText(s.start - start)}`),
      h('td', { class: 'mono' }, s.open ? `${durationText(s.duration)} …` : durationText(s.duration)),
      h(
        'td',
        { class: 'gantt' },
        h('span', {
          class: `seg seg-${s.stage}${s.open ? ' open' : ''}`,
          style: { left: `${(100 * (s.start - start)) / total}%`, width: `max(2px, ${(100 * s.duration) / total}%)` },
        }),
      ),
    );
  return [
    h('h3', {}, 'Stages ', h('span', { class: 'muted' }, `(${durationText(end - start)} on the virtual clock)`)),
    endedAtOnceNote(g),
    h(
      'table',
      { class: 'stages', 'data-testid': 'detail-stages' },
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'stage'), h('th', { scope: 'col' }, 'entered'), h('th', { scope: 'col' }, 'time'), h('th', { scope: 'col', class: 'gantt-col' }, h('span', { class: 'sr-only' }, 'bar')))),
      h('tbody', {}, stageSpans(g, end).map(row)),
    ),
  ];
}

/**
 * Stages that ended the instant they began: on a clock that did not move, only a control action
 * (advance, finish, fail, cancel) ends a stage, so their bars have no length and their times read
 * +0.00 s. Says so, with the instant of each group, rather than leave empty bars unexplained; null
 * when every ended stage took time.
 */
function endedAtOnceNote(g) {
  const timed = new Set(timedStages().map((stage) => stage.name));
  const instants = new Map(); // left_at → the stages ended then
  for (const s of g.stages) {
    if (!timed.has(s.stage) || s.left_at === null || s.left_at !== s.entered_at) continue;
    instants.set(s.left_at, [...(instants.get(s.left_at) ?? []), stageLabel(s.stage)]);
  }
  if (instants.size === 0) return null;
  const groups = [...instants].map(([at, names]) => ({ at: clockText(at), names: names.join(', ') }));
  const ended =
    groups.length === 1
      ? `Ended by control actions at ${groups[0].at}: ${groups[0].names}.`
      : `Ended by control actions: ${groups.map((group) => `${group.names} at ${group.at}`).join('; ')}.`;
  return h('p', { class: 'callout note', 'data-testid': 'stages-note' }, `${ended} No virtual time passed in them, so their bars have no length.`);
}

/** Whether a request a network fault lost took effect, in words: the journal and the fault list say it alike. */
export function phaseText(phase) {
  return phase === 'after' ? 'applied' : 'not applied';
}

export function journalRow(entry) {
  const level = entry.status === null || entry.status >= 500 ? 'bad' : entry.status >= 400 ? 'warn' : 'good';
  // A network fault: the answer was lost (or slowed), and the request took effect (after) or not (before).
  const network = entry.network
    ? h(
        'span',
        { class: 'flag sev-block network', 'data-testid': 'journal-network', title: entry.network.phase === 'after' ? 'The request took effect; its answer was lost on the way.' : 'The request never reached the service.' },
        `${entry.network.kind}, ${phaseText(entry.network.phase)}`,
      )
    : null;
  return h(
    'tr',
    { 'data-testid': 'journal-row' },
    h('td', { class: 'mono', title: entry.at }, timeText(entry.at)),
    h('td', { class: 'mono' }, entry.method),
    h('td', { class: 'mono path', title: entry.path }, entry.path),
    h(
      'td',
      {},
      h('span', { class: `code code-${level}` }, entry.status ?? 'no answer'),
      network,
      entry.fault ? h('span', { class: 'flag sev-warning fault', title: `Answered by an injected fault: ${entry.fault}` }, `fault: ${entry.fault}`) : null,
      entry.trigger
        ? h('span', { class: 'flag sev-warning trigger', 'data-testid': 'journal-trigger', title: 'The outcome was chosen by the prompt\'s triggers.' }, `trigger: ${entry.trigger.join(' ')}`)
        : null,
    ),
    h('td', { class: 'mono' }, entry.error_code ? h('span', { 'data-testid': 'journal-error-code' }, entry.error_code) : h('span', { class: 'muted' }, '—')),
    h('td', { class: 'mono' }, entry.account ?? h('span', { class: 'muted' }, 'none')),
    h('td', { class: 'mono muted request-id', 'data-testid': 'journal-request-id' }, entry.request_id),
  );
}

/**
 * POST /_sim/verify's answer for the journal's pattern: verified with its count, or its sentence
 * and the entries nearest the pattern, each with the pattern's fields it does not match.
 */
export function renderVerdict(container, verification) {
  const dropped = verification.dropped > 0 ? ` The journal dropped ${verification.dropped} older request${verification.dropped === 1 ? '' : 's'} of this scope.` : '';
  if (verification.verified) {
    container.replaceChildren(
      h('p', { class: 'callout ok', 'data-testid': 'journal-verified' }, `Verified: ${verification.count} request${verification.count === 1 ? '' : 's'} match.${dropped}`),
    );
    return;
  }
  container.replaceChildren(
    h(
      'div',
      { class: 'callout warning', 'data-testid': 'journal-not-verified' },
      h('p', { 'data-testid': 'journal-verify-message' }, verification.message),
      verification.closest.length > 0
        ? h(
            'ul',
            { class: 'closest', 'data-testid': 'journal-closest' },
            ...verification.closest.map((e) =>
              h(
                'li',
                { class: 'mono', 'data-testid': 'journal-closest-entry' },
                `#${e.seq} ${e.method} ${e.path}${e.account ? ` (${e.account})` : ''} -> ${e.status ?? 'no answer'}${e.seen ? `, seen ${e.seen.join(' and ')}` : ''}: `,
                e.differs.length === 0 ? h('span', {}, 'matches') : h('span', { class: 'differs' }, `differs in ${e.differs.join(', ')}`),
              ),
            ),
          )
        : null,
    ),
  );
}

/** A pattern's text that is no JSON object, or a pattern the simulator refused: said where the verdict goes. */
export function renderPatternProblem(container, message) {
  container.replaceChildren(h('p', { class: 'callout warning', role: 'alert', 'data-testid': 'journal-pattern-problem' }, message));
}

/** The detail panel when a linked generation cannot be shown. */
export function renderMissing(container, id, error) {
  container.replaceChildren(
    h(
      'div',
      { class: 'callout warning', role: 'alert', 'data-testid': 'detail-missing' },
      error?.status === 404
        ? [
            h('strong', {}, 'No such generation: '),
            h('code', { class: 'mono' }, id),
            h(
              'div',
              {},
              'The simulator stores no generation with this id: the link may be from before a reset or a restart, or the generation was dropped to keep the store within its limit.',
            ),
          ]
        : [h('strong', {}, 'Could not load '), h('code', { class: 'mono' }, id), h('div', {}, error?.message ?? 'Unknown error.')],
    ),
  );
}

/** The client report of one account: its findings, then what its requests covered. */
export function renderReport(container, report) {
  const findings = report.findings ?? [];
  const errors = findings.filter((f) => f.severity === 'error').length;
  const summary = findings.length
    ? `${report.requests} requests · ${findings.length} finding${findings.length === 1 ? '' : 's'} (${errors} error${errors === 1 ? '' : 's'}, ${findings.length - errors} warning${findings.length - errors === 1 ? '' : 's'})`
    : `${report.requests} requests · no findings`;
  const endpoints = Object.entries(report.coverage?.endpoints ?? {});
  const statuses = Object.entries(report.coverage?.statuses ?? {});
  container.replaceChildren(
    h('p', { class: 'report-summary', 'data-testid': 'report-summary' }, h('code', { class: 'mono' }, report.account), ' · ', summary),
    findings.length
      ? h(
          'table',
          { class: 'grid compact findings', 'data-testid': 'report-findings' },
          h('caption', { class: 'sr-only' }, 'Findings, each from a rule of the interface document'),
          h('thead', {}, h('tr', {}, ['severity', 'finding', 'count', 'what it means', 'example requests'].map((t) => h('th', { scope: 'col' }, t)))),
          h(
            'tbody',
            {},
            findings.map((f) =>
              h(
                'tr',
                { 'data-testid': 'report-finding', dataset: { code: f.code, severity: f.severity } },
                h('td', {}, h('span', { class: `flag sev-${f.severity === 'error' ? 'block' : 'warning'}` }, f.severity)),
                h('td', { class: 'mono' }, f.code),
                h('td', { class: 'mono' }, f.count),
                h('td', { class: 'message' }, f.message),
                h('td', { class: 'mono examples' }, (f.examples ?? []).map((id) => h('div', {}, id))),
              ),
            ),
          ),
        )
      : h('p', { class: 'callout ok', 'data-testid': 'report-clean' }, `No findings: the ${report.requests} requests of this client break none of the rules the report checks.`),
    h(
      'div',
      { class: 'coverage' },
      h(
        'div',
        {},
        h('h3', {}, 'Endpoints called'),
        endpoints.length
          ? h('ul', { class: 'counts', 'data-testid': 'report-endpoints' }, endpoints.map(([name, n]) => h('li', {}, h('code', { class: 'mono' }, name), h('span', { class: 'n' }, n))))
          : h('p', { class: 'muted' }, 'none'),
      ),
      h(
        'div',
        {},
        h('h3', {}, 'Statuses received'),
        statuses.length
          ? h('ul', { class: 'counts', 'data-testid': 'report-statuses' }, statuses.map(([code, n]) => h('li', {}, h('span', { class: `code code-${Number(code) >= 500 ? 'bad' : Number(code) >= 400 ? 'warn' : 'good'}` }, code), h('span', { class: 'n' }, n))))
          : h('p', { class: 'muted' }, 'none'),
      ),
    ),
  );
}
