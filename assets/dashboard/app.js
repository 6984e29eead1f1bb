// The simulator's live dashboard: state, polling and the controls' wiring.
//
// Live updates: the first page of generations answers a `cursor`; every tick asks only for what
// changed since (`GET /_sim/generations?changed_since=<cursor>`) and merges it into the page and
// the selected generation. Polling runs every POLL_MS (never faster than once a second) and stops
// while the tab is hidden.
//
// What the page knows about the simulator it learns from it: the bundled scenarios
// (`GET /_sim/scenarios`) and the pipeline's stages (`GET /_sim/pipeline`) are read at every
// (re)load. Filtered to one account, times are that account's (`GET /_sim/clock?api_key=`), since
// an account's clock can run ahead of the global one, and its client report is shown.
import { wireAccountTools } from './account-tools.js';
import { renderStatePanel } from './state-panel.js';
import { renderGenerationActions } from './actions.js';
import { api, learnCdn, newMediaView } from './api.js';
import { renderModels, renderTriggers, wireCreateForm } from './create-form.js';
import { clockText, currentStage, durationText, ms, signature, stageLabel } from './format.js';
import { failableStages, inFlightStatuses, isInFlight, learnPipeline, pipelineStages, timedStages } from './pipeline.js';
import { generationRow, h, journalRow, renderDetail, renderMissing, renderPatternProblem, renderReport, renderVerdict, scaleTimelines } from './views.js';

const POLL_MS = 1500;
const MAX_CHANGE_PAGES_PER_TICK = 10; // 10 x 1000 changes; the rest waits for the next tick
const UNTIL_RESOLVED_MAX_STEPS = 60;
const $ = (id) => document.getElementById(id);

const state = {
  epoch: 0, // bumped by every reload: answers of an older epoch are dropped
  health: null,
  globalNowMs: 0, // the global clock
  nowMs: 0, // the clock times are read against: the filtered account's, else the global one
  accountClock: null, // the filtered account's clock: { account, clock: { mode, now, speed } }
  scenarios: [], // the bundled scenarios, [{ name, purpose }]
  scenarioChoice: null, // the scenario picked in the "Switch to" list, kept until switched or reset
  firstId: undefined, // the oldest stored generation: when it vanishes, the simulator was reset
  cursor: null,
  filter: { status: '', account: '' },
  pageSize: 50,
  afters: [null], // the `after` of every page up to the current one
  rows: [],
  hasMore: false,
  selected: null,
  missing: null, // a linked generation that could not be shown: { id, error }
  journalLimit: 50,
  journalKey: '',
  journalPattern: null, // a request pattern the journal is filtered by (and verified against), or null
  reportMissing: false, // this simulator has no GET /_sim/report: stop asking
  busy: false,
};

// ---- polling ----

let timer = null;
let ticking = false;
let again = false;

function schedule() {
  clearTimeout(timer);
  timer = document.hidden ? null : setTimeout(tick, POLL_MS);
}

/** Runs a tick now (after a user action), or right after the one in progress. */
function refreshNow() {
  if (ticking) again = true;
  else tick();
}

async function tick() {
  clearTimeout(timer);
  ticking = true;
  const epoch = state.epoch;
  try {
    const [[health, accountClock], first] = await Promise.all([readClocks(), api.generations({ limit: 1 })]);
    if (epoch !== state.epoch) return;
    const firstId = first.data[0]?.id ?? null;
    const wasReset =
      state.health &&
      (health.scenario !== state.health.scenario ||
        health.seed !== state.health.seed ||
        ms(health.clock.now) < state.globalNowMs ||
        (state.firstId && firstId !== state.firstId));
    if (wasReset) {
      await reload('The simulator was reset elsewhere; reloaded.');
      return;
    }
    state.firstId = firstId;
    applyHealth(health, accountClock);

    let refetchPage = false;
    for (let i = 0; i < MAX_CHANGE_PAGES_PER_TICK; i++) {
      const account = state.filter.account;
      const changes = await api.changes({ cursor: state.cursor, account });
      // A cursor names the list that answered it: one of the list before the filter changed is dropped.
      if (epoch !== state.epoch || account !== state.filter.account) return;
      refetchPage = mergeChanges(changes.data) || refetchPage;
      state.cursor = changes.cursor;
      if (!changes.has_more) break;
    }
    if (refetchPage) await loadPage();
    else renderTable();
    renderSelected();
    await refreshJournal(epoch);
    await accountTools.refresh();
    setLive('live', `live · ${new Date().toLocaleTimeString()}`);
  } catch (error) {
    setLive('offline', `offline: ${error.message}`);
  } finally {
    ticking = false;
    if (again) {
      again = false;
      queueMicrotask(tick);
    } else schedule();
  }
}

document.addEventListener('visibilitychange', () => {
  if (document.hidden) {
    clearTimeout(timer);
    setLive('paused', 'paused (tab hidden)');
  } else refreshNow();
});

// ---- state ----

/** Merges changed generations; answers whether the current page must be fetched again. */
function mergeChanges(changed) {
  let offPage = false;
  for (const g of changed) {
    learnCdn(g);
    const i = state.rows.findIndex((row) => row.id === g.id);
    if (i >= 0) state.rows[i] = g;
    else if (!state.filter.status || g.status === state.filter.status) offPage = true;
    if (state.selected?.id === g.id) state.selected = g;
  }
  if (!offPage) return false;
  // A change off the page: a new generation (it belongs on this page when the page has room) or
  // one on another page. A full page only learns that more exist.
  if (state.rows.length < state.pageSize) return true;
  state.hasMore = true;
  renderPager();
  return false;
}

async function loadPage() {
  const epoch = state.epoch;
  const page = await api.generations({
    limit: state.pageSize,
    after: state.afters.at(-1),
    status: state.filter.status,
    account: state.filter.account,
  });
  if (epoch !== state.epoch) return;
  page.data.forEach(learnCdn);
  state.rows = page.data;
  state.hasMore = page.has_more;
  if (state.cursor === null) state.cursor = page.cursor;
  for (const g of page.data) if (state.selected?.id === g.id) state.selected = g;
  renderTable();
  renderPager();
}

/** Drops everything and starts again from the first page (after a reset or a scenario switch). */
async function reload(message) {
  state.epoch += 1;
  Object.assign(state, { health: null, globalNowMs: 0, nowMs: 0, firstId: undefined, cursor: null, afters: [null], rows: [], hasMore: false, selected: null, missing: null, journalKey: '', reportMissing: false, scenarioChoice: null });
  rowCache.clear();
  newMediaView();
  history.replaceState(null, '', window.location.pathname + window.location.search);
  const [[health, accountClock], scenario, first, scenarios, pipeline] = await Promise.all([
    readClocks(),
    api.scenario(),
    api.generations({ limit: 1 }),
    api.scenarios(),
    api.pipeline(),
  ]);
  state.firstId = first.data[0]?.id ?? null;
  state.scenarios = scenarios.data;
  learnPipeline(pipeline.data);
  renderStatusFilter();
  renderOutcomeStages();
  applyHealth(health, accountClock);
  renderScenario(scenario);
  renderModels(scenario.models?.video ?? []);
  renderTriggers(scenario.prompt_triggers !== false);
  renderLegend();
  await loadPage();
  renderSelected(true);
  await refreshJournal(state.epoch);
  if (message) toast(message, 'info');
}

// ---- rendering ----

/** The global clock (in health) and, when filtered to an account, `{ account, clock }`. */
function readClocks() {
  const account = state.filter.account;
  return Promise.all([api.health(), account ? api.clock(account).then((clock) => ({ account, clock })) : null]);
}

function applyHealth(health, accountClock) {
  state.health = health;
  state.globalNowMs = ms(health.clock.now);
  // A clock read under another filter (changed since) is not shown.
  state.accountClock = accountClock?.account === state.filter.account ? accountClock : null;
  state.nowMs = state.accountClock ? ms(state.accountClock.clock.now) : state.globalNowMs;
  $('clock-now').value = clockText(health.clock.now);
  $('clock-now').textContent = clockText(health.clock.now);
  $('clock-mode').textContent = health.clock.mode === 'manual' ? 'manual' : `realtime ×${health.clock.speed}`;
  renderAccountClock();
  renderStatePanel(health.state);
  $('scenario-name').textContent = health.scenario;
  $('scenario-seed').textContent = `seed ${health.seed}`;
  if (health.media) {
    $('media-addresses').textContent = health.media.follows_host
      ? `Media URLs follow the address you reach the simulator at (${health.media.url}); --base-url fixes them.`
      : `Media URLs: ${health.media.url} (given at start).`;
  }
  const select = $('scenario-select');
  const wanted = [...state.scenarios.map((s) => s.name), ...(state.scenarios.some((s) => s.name === health.scenario) ? [] : [health.scenario])];
  if (select.options.length !== wanted.length || wanted.some((name, i) => select.options[i].value !== name)) {
    select.replaceChildren(
      ...wanted.map((name) => {
        const purpose = state.scenarios.find((s) => s.name === name)?.purpose;
        return h('option', { value: name, title: purpose ?? 'the scenario in use (not a bundled one)' }, name);
      }),
    );
  }
  // The list shows the user's pick until it is switched to (or the page starts over), focused or
  // not: a pick made by keyboard or by script is kept while the page polls.
  const shownName = state.scenarioChoice !== null && wanted.includes(state.scenarioChoice) ? state.scenarioChoice : health.scenario;
  if (select.value !== shownName) select.value = shownName;
  renderScenarioPurpose();
}

/** The filtered account's time: its clock runs ahead of the global one once advanced on its own. */
function renderAccountClock() {
  const el = $('account-clock');
  el.hidden = !state.accountClock;
  if (!state.accountClock) return;
  const { account, clock } = state.accountClock;
  const offset = ms(clock.now) - state.globalNowMs;
  // Read in two requests, the offset is exact only on the manual clock.
  const ahead = clock.mode !== 'manual' ? '' : offset > 0 ? ` (${durationText(offset)} ahead of the global clock)` : ' (the global clock)';
  el.replaceChildren(
    'Clock of ',
    h('code', { class: 'mono' }, account),
    ': ',
    h('output', { 'data-testid': 'account-clock-now', 'aria-label': 'Virtual time of the filtered account' }, clockText(clock.now)),
    h('span', { class: 'muted' }, ahead),
  );
}

/** What the scenario chosen in the list is for (when it is not the one in use). */
function renderScenarioPurpose() {
  const name = $('scenario-select').value;
  const chosen = state.scenarios.find((s) => s.name === name);
  $('scenario-purpose').textContent = chosen && name !== state.health?.scenario ? `${name}: ${chosen.purpose}` : '';
}

function renderScenario(scenario) {
  $('scenario-description').textContent = scenario.description ?? '';
  const stages = scenario.stages ?? {};
  $('scenario-stages').replaceChildren(
    ...pipelineStages()
      .filter((stage) => stages[stage.name])
      .map((stage) => {
        const s = stages[stage.name];
        const failure = s.failure?.probability ? `${+(s.failure.probability * 100).toFixed(2)}% ${s.failure.code ?? ''}` : '—';
        return h(
          'tr',
          {},
          h('td', {}, stageLabel(stage.name)),
          h('td', {}, stage.status ?? '—'),
          h('td', {}, distributionText(s.duration) + (s.per_output_second ? ' per output s' : '')),
          h('td', {}, failure),
        );
      }),
  );
}

/** The status filter: the in-flight statuses, from the pipeline, before the resolved ones the page lists. */
function renderStatusFilter() {
  const select = $('filter-status');
  for (const option of select.querySelectorAll('option[data-in-flight]')) option.remove();
  select.querySelector('option[value=""]').after(...inFlightStatuses().map((status) => h('option', { 'data-in-flight': true }, status)));
  select.value = state.filter.status;
}

/** The "Next video fails at" choices: one per failable stage, before the other outcomes. */
function renderOutcomeStages() {
  const select = $('outcome-kind');
  const old = [...select.querySelectorAll('option[data-failable]')];
  // A choice made since the last (re)load stays; the first time, the first stage is chosen.
  const chosen = old.length > 0 ? select.value : null;
  for (const option of old) option.remove();
  select.prepend(...failableStages().map((stage) => h('option', { value: `fail_stage:${stage.name}`, 'data-failable': true }, `fails at ${stageLabel(stage.name)}`)));
  select.value = [...select.options].some((o) => o.value === chosen) ? chosen : select.options[0].value;
}

/** The colour key of the timelines: the stages a generation spends time in (all but claim linking). */
function renderLegend() {
  $('legend').replaceChildren(
    ...timedStages().flatMap((stage) => [h('i', { class: `seg seg-${stage.name}` }), `${stageLabel(stage.name)} `]),
  );
}

function distributionText(d) {
  if (!d) return '—';
  if (d.type === 'fixed') return `${d.value} s`;
  if (d.type === 'uniform') return `${d.min}–${d.max} s`;
  if (d.type === 'lognormal') return `median ${d.median} s, p95 ${d.p95} s`;
  return JSON.stringify(d);
}

/** Rows are keyed by id and rebuilt only when their generation changed (or, in flight, the clock). */
const rowCache = new Map();

function renderTable() {
  const body = $('generations-body');
  const seen = new Set();
  const rows = state.rows.map((g) => {
    const sig = `${signature(g)}|${isInFlight(g) ? state.nowMs : ''}|${state.selected?.id === g.id}`;
    seen.add(g.id);
    const cached = rowCache.get(g.id);
    if (cached && cached.sig === sig) return cached.tr;
    const tr = generationRow(g, state.nowMs, { selected: state.selected?.id === g.id, onOpen: select, onAccount: filterAccount });
    if (state.filter.status && g.status !== state.filter.status) tr.classList.add('stale');
    rowCache.set(g.id, { sig, tr });
    return tr;
  });
  for (const id of rowCache.keys()) if (!seen.has(id)) rowCache.delete(id);
  const current = [...body.children];
  if (current.length !== rows.length || current.some((tr, i) => tr !== rows[i])) body.replaceChildren(...rows);
  scaleTimelines(body);
  $('generations-empty').hidden = state.rows.length > 0;
  $('generations-empty').textContent =
    state.filter.status || state.filter.account
      ? 'No generations match these filters.'
      : 'No generations yet. Create one with POST /v1/videos.';
}

function renderPager() {
  const page = state.afters.length;
  const from = (page - 1) * state.pageSize + 1;
  $('page-info').textContent = state.rows.length
    ? `page ${page} · ${from}–${from + state.rows.length - 1}${state.hasMore ? ' · more after' : ''}`
    : `page ${page}`;
  $('page-first').disabled = page === 1;
  $('page-prev').disabled = page === 1;
  $('page-next').disabled = !state.hasMore || state.rows.length === 0;
  $('page-last').disabled = !state.hasMore;
}

let selectedSig = '';

function renderSelected(force = false) {
  const g = state.selected;
  const sig = g ? `${g.id}|${signature(g)}|${isInFlight(g) ? state.nowMs : ''}` : state.missing ? `missing|${state.missing.id}` : '';
  if (!force && sig === selectedSig) return;
  selectedSig = sig;
  if (!g && state.missing) renderMissing($('detail'), state.missing.id, state.missing.error);
  else renderDetail($('detail'), g, state.nowMs);
  renderGenerationActions($('generation-actions'), g, moveSelected);
  $('detail-close').hidden = !g && !state.missing;
}

/**
 * The journal has no cursor: a one-entry probe tells whether anything arrived before fetching more.
 * With a request pattern, only the entries it matches, and POST /_sim/verify's answer beside them.
 */
async function refreshJournal(epoch) {
  const account = state.filter.account;
  const pattern = state.journalPattern;
  const probe = await api.journal({ limit: 1, account });
  if (epoch !== state.epoch) return;
  const key = `${state.journalLimit}|${account}|${probe.data[0]?.request_id ?? ''}|${pattern === null ? '' : JSON.stringify(pattern)}`;
  if (key === state.journalKey) return;
  let journal;
  try {
    journal = pattern !== null ? await api.matching({ pattern, limit: state.journalLimit, account }) : probe.data.length ? await api.journal({ limit: state.journalLimit, account }) : probe;
    if (pattern !== null) {
      const verification = await api.verify(account ? { ...pattern, api_key: account } : pattern);
      if (epoch !== state.epoch) return;
      renderVerdict($('journal-verdict'), verification);
    }
  } catch (error) {
    if (pattern === null || error.status !== 400) throw error;
    // The simulator refused the pattern (an unknown or malformed field): said where the verdict goes.
    state.journalKey = key;
    $('journal-verdict').hidden = false;
    renderPatternProblem($('journal-verdict'), error.message);
    return;
  }
  if (epoch !== state.epoch) return;
  state.journalKey = key;
  $('journal-verdict').hidden = pattern === null;
  $('journal-scope').textContent = journal.data.length
    ? `(latest ${journal.data.length}${pattern !== null ? ' matching' : ''}${account ? ` of ${account}` : ''}, newest first)`
    : '';
  $('journal-body').replaceChildren(...journal.data.toReversed().map(journalRow));
  $('journal-empty').hidden = journal.data.length > 0;
  $('journal-empty').textContent = pattern !== null ? 'No request in the journal matches the pattern.' : 'No /v1 requests yet.';
  await refreshReport(epoch);
}

/**
 * The filtered account's client report, read again whenever its journal changed. Hidden without
 * an account filter, and when the simulator answers 404 (no such endpoint, or nothing to report).
 */
async function refreshReport(epoch) {
  const account = state.filter.account;
  const panel = $('report');
  if (!account || state.reportMissing) {
    panel.hidden = true;
    return;
  }
  try {
    const report = await api.report(account);
    if (epoch !== state.epoch || account !== state.filter.account) return;
    renderReport($('report-body'), report);
    panel.hidden = false;
  } catch (error) {
    if (epoch !== state.epoch || account !== state.filter.account) return;
    if (error.status === 404) {
      if (error.code === 'unknown_route') state.reportMissing = true;
      panel.hidden = true;
      return;
    }
    $('report-body').replaceChildren(h('p', { class: 'callout danger', 'data-testid': 'report-error' }, `The client report could not be read: ${error.message}`));
    panel.hidden = false;
  }
}

function setLive(kind, text) {
  const el = $('live-indicator');
  el.dataset.state = kind;
  el.textContent = text;
}

let toastTimer = null;
function toast(message, kind = 'error') {
  const el = $('toast');
  el.textContent = message;
  el.dataset.kind = kind;
  el.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => (el.hidden = true), 6000);
}

// ---- actions ----

function select(id) {
  state.selected = state.rows.find((g) => g.id === id) ?? state.selected;
  state.missing = null;
  history.replaceState(null, '', `#${id}`);
  prefillAccount(state.selected);
  renderTable();
  renderSelected(true);
}

/** The account the control room's Account field was last filled in with (not one typed there). */
let prefilled = '';

/**
 * Fills in the control room's Account field (and the create form's key, when empty) with the
 * account of the generation just selected, unless another account was typed there; then lists what
 * waits for it.
 */
function prefillAccount(g) {
  if (!g?.account) return;
  const field = $('tools-account');
  const typed = field.value.trim();
  if (typed && typed !== prefilled && typed !== state.filter.account) return;
  if (!$('create-key').value.trim()) $('create-key').value = g.account;
  if (typed === g.account) return;
  field.value = g.account;
  prefilled = g.account;
  void accountTools.refresh().catch((error) => toast(error.message));
}

/** Opens the generation a `#vid_…` link names; says so when the simulator has none by that id. */
async function selectFromHash(hash) {
  const id = decodeURIComponent(hash.slice(1));
  if (!id) return;
  const epoch = state.epoch;
  try {
    const g = await api.generation(id);
    if (epoch !== state.epoch) return;
    learnCdn(g);
    state.selected = g;
    state.missing = null;
    prefillAccount(g);
  } catch (error) {
    if (epoch !== state.epoch) return;
    state.selected = null;
    state.missing = { id, error };
  }
  renderTable();
  renderSelected(true);
}

/**
 * Sends a live-control request for the selected generation, shows the generation it answers, and
 * says in words what it did.
 */
function moveSelected(action, body) {
  const id = state.selected?.id;
  if (!id) return;
  run(async () => {
    const g = await api.moveGeneration(id, action, body);
    learnCdn(g);
    if (state.selected?.id === id) state.selected = g;
    const i = state.rows.findIndex((row) => row.id === id);
    if (i >= 0) state.rows[i] = g;
    renderTable();
    renderSelected(true);
    toast(movedText(action, g), 'info');
  });
}

/** What a live-control action did: `Advanced vid_… to render`, `Failed vid_… at render with render_failed`. */
function movedText(action, g) {
  // A failure ends the stage it happened in: the last one the generation entered.
  const failedAt = g.error ? ` at ${stageLabel(g.error.stage ?? g.stages.at(-1).stage)} with ${g.error.code}` : '';
  const stage = currentStage(g);
  if (action === 'advance') return stage ? `Advanced ${g.id} to ${stageLabel(stage)}.` : `Advanced ${g.id}: ${g.status}${failedAt}.`;
  if (action === 'finish') return `Finished ${g.id}: ${g.status}${failedAt}.`;
  if (action === 'fail') return `Failed ${g.id}${failedAt}.`;
  if (action === 'cancel') return `Canceled ${g.id}.`;
  return `${g.id}: ${g.status}${failedAt}.`;
}

function filterAccount(account) {
  $('filter-account').value = account;
  applyFilters();
}

function applyFilters() {
  const account = $('filter-account').value.trim();
  // Another account is another list, with cursors of its own: the page it loads gives the next.
  if (account !== state.filter.account) state.cursor = null;
  state.filter = { status: $('filter-status').value, account };
  // The control room's account follows the filter.
  if (state.filter.account) {
    $('tools-account').value = state.filter.account;
    if (!$('create-key').value.trim()) $('create-key').value = state.filter.account;
  }
  state.afters = [null];
  state.journalKey = '';
  run(async () => {
    const epoch = state.epoch;
    const [health, accountClock] = await readClocks();
    if (epoch !== state.epoch) return;
    applyHealth(health, accountClock);
    await loadPage();
    await refreshJournal(epoch);
  });
}

/** The buttons disabled while a user action runs (the selected generation's are redrawn after it). */
const ACTION_BUTTONS = '[data-advance], #advance-until, #scenario-form button, .tools button';

/** Runs a user action with the controls disabled; reports failures. */
async function run(action) {
  if (state.busy) return;
  state.busy = true;
  document.body.classList.add('busy');
  for (const b of document.querySelectorAll(ACTION_BUTTONS)) b.disabled = true;
  try {
    await action();
  } catch (error) {
    toast(error.message);
  } finally {
    state.busy = false;
    document.body.classList.remove('busy');
    for (const b of document.querySelectorAll(ACTION_BUTTONS)) b.disabled = false;
    refreshNow();
  }
}

async function anyInFlight() {
  const answers = await Promise.all(inFlightStatuses().map((status) => api.generations({ status, limit: 1 })));
  return answers.some((a) => a.data.length > 0);
}

/** Advances in growing steps (10 s, 20 s, 40 s … up to 1 h) until nothing is queued or running. */
async function advanceUntilResolved() {
  const hint = $('in-flight');
  let step = 10;
  let moved = 0;
  for (let i = 0; i < UNTIL_RESOLVED_MAX_STEPS; i++) {
    if (!(await anyInFlight())) {
      hint.textContent = moved ? `All resolved after +${durationText(moved * 1000)}.` : 'Nothing in flight.';
      return;
    }
    const clock = await api.advance(step);
    moved += step;
    hint.textContent = `Advancing… +${durationText(moved * 1000)}`;
    $('clock-now').textContent = clockText(clock.now);
    step = Math.min(step * 2, 3600);
  }
  hint.textContent = `Still in flight after +${durationText(moved * 1000)}; press again to continue.`;
}

function wire() {
  for (const button of document.querySelectorAll('[data-advance]')) {
    button.addEventListener('click', () =>
      run(async () => {
        await api.advance(Number(button.dataset.advance));
        $('in-flight').textContent = '';
      }),
    );
  }
  $('advance-until').addEventListener('click', () => run(advanceUntilResolved));
  $('scenario-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const name = $('scenario-select').value;
    if (state.busy || !confirmDrop(`Switch the simulator to scenario "${name}"?`)) return;
    run(async () => {
      await api.reset(name);
      await reload(`Switched to scenario ${name}; all state dropped.`);
    });
  });
  $('scenario-reset').addEventListener('click', () => {
    if (state.busy || !confirmDrop(`Reset the simulator and reload scenario "${state.health?.scenario ?? ''}"?`)) return;
    run(async () => {
      await api.reset();
      await reload('Reset: all state dropped, scenario reloaded.');
    });
  });
  $('scenario-select').addEventListener('change', () => {
    state.scenarioChoice = $('scenario-select').value;
    renderScenarioPurpose();
  });
  $('filters').addEventListener('submit', (event) => {
    event.preventDefault();
    applyFilters();
  });
  $('filter-status').addEventListener('change', applyFilters);
  $('filter-clear').addEventListener('click', () => {
    $('filter-status').value = '';
    $('filter-account').value = '';
    applyFilters();
  });
  $('page-first').addEventListener('click', () => {
    state.afters = [null];
    run(loadPage);
  });
  $('page-prev').addEventListener('click', () => {
    if (state.afters.length > 1) state.afters.pop();
    run(loadPage);
  });
  $('page-next').addEventListener('click', () => {
    const last = state.rows.at(-1);
    if (!last) return;
    state.afters.push(last.id);
    run(loadPage);
  });
  $('page-last').addEventListener('click', () => run(goLast));
  $('page-size').addEventListener('change', () => {
    state.pageSize = Number($('page-size').value);
    state.afters = [null];
    run(loadPage);
  });
  $('journal-limit').addEventListener('change', () => {
    state.journalLimit = Number($('journal-limit').value);
    state.journalKey = '';
    refreshNow();
  });
  $('journal-pattern-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const text = $('journal-pattern').value.trim();
    let pattern = null;
    if (text !== '') {
      try {
        pattern = JSON.parse(text);
      } catch {
        pattern = undefined;
      }
      if (pattern === undefined || pattern === null || typeof pattern !== 'object' || Array.isArray(pattern)) {
        $('journal-verdict').hidden = false;
        renderPatternProblem($('journal-verdict'), 'A request pattern is a JSON object, such as {"method":"POST","path":"/v1/videos"}.');
        return;
      }
    }
    state.journalPattern = pattern;
    state.journalKey = '';
    refreshNow();
  });
  $('journal-pattern-clear').addEventListener('click', () => {
    $('journal-pattern').value = '';
    state.journalPattern = null;
    state.journalKey = '';
    $('journal-verdict').hidden = true;
    refreshNow();
  });
  $('detail-close').addEventListener('click', () => {
    state.selected = null;
    state.missing = null;
    history.replaceState(null, '', window.location.pathname);
    renderTable();
    renderSelected(true);
  });
}

/** A switch or a reset drops every client's state, not only this page's: ask first. */
function confirmDrop(question) {
  return window.confirm(
    `${question}\n\nThis drops all state of this simulator for every client using it: generations, images, balances, rate limits, idempotency keys, queued faults and the request journal.`,
  );
}

/** The last page: walks the ids 1,000 at a time (only on request) to know where pages start. */
async function goLast() {
  const ids = [];
  let after = null;
  for (let i = 0; i < 200; i++) {
    const page = await api.generations({ limit: 1000, after, status: state.filter.status, account: state.filter.account });
    for (const g of page.data) ids.push(g.id);
    if (!page.has_more || page.data.length === 0) break;
    after = ids.at(-1);
  }
  const pages = Math.max(1, Math.ceil(ids.length / state.pageSize));
  state.afters = [null];
  for (let p = 1; p < pages; p++) state.afters.push(ids[p * state.pageSize - 1]);
  await loadPage();
}

// ---- start ----

wire();
const accountTools = wireAccountTools({ run, done: (text) => toast(text, 'info'), failed: (error) => toast(error.message) });
wireCreateForm({
  run,
  onCreated: (video) => {
    history.replaceState(null, '', `#${video.id}`);
    void selectFromHash(`#${video.id}`);
  },
});
window.addEventListener('hashchange', () => void selectFromHash(window.location.hash));
const initialHash = window.location.hash; // reload() clears it
reload()
  .then(() => selectFromHash(initialHash))
  .then(() => setLive('live', 'live'))
  .catch((error) => {
    setLive('offline', `offline: ${error.message}`);
  })
  .finally(schedule);
