// Durable state (`--state FILE`): a line under the top bar saying whether a restart keeps what the
// simulator holds, and, when it does, the file, its size and its last compaction; in either case a
// link that downloads the state as a compacted state file (GET /_sim/state, sent with the control
// token like every control request), which `sim --state FILE` opens anywhere. The page renders it
// from each GET /_sim/health it reads.
import { api } from './api.js';
import { h } from './views.js';

const panel = h('p', { class: 'state-panel muted', 'data-testid': 'state-panel', role: 'status' });
document.querySelector('.topbar')?.after(panel);

function sizeText(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

async function download(event) {
  event.preventDefault();
  const link = event.currentTarget;
  try {
    const blob = await api.stateFile();
    const url = URL.createObjectURL(blob);
    const save = h('a', { href: url, download: 'state.jsonl' });
    document.body.append(save);
    save.click();
    save.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (e) {
    link.title = e.message;
  }
}

/** Shows `state`, the `state` field of a health answer (absent without --state). */
export function renderStatePanel(state) {
  panel.dataset.durable = state ? 'true' : 'false';
  const link = h('a', { href: 'state', 'data-testid': 'state-download', onclick: download, text: 'download state' });
  if (!state) {
    panel.replaceChildren('State: in memory only; a restart loses it (start with --state FILE to keep it) · ', link);
    return;
  }
  panel.replaceChildren(
    'State: durable, in ',
    h('code', { 'data-testid': 'state-file', text: state.file }),
    ' · ',
    h('span', { 'data-testid': 'state-size', text: `${sizeText(state.bytes)}, ${state.lines} request${state.lines === 1 ? '' : 's'}` }),
    ' · ',
    h('span', { 'data-testid': 'state-compacted', text: state.compacted_at ? `compacted ${state.compacted_at}` : 'never compacted' }),
    state.write_failed ? h('strong', { 'data-testid': 'state-failed', text: ` · no longer kept: a write failed (${state.write_failed})` }) : null,
    ' · ',
    link,
  );
}
