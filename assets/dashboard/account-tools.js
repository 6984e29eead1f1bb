// An account's next requests: queue a fault (a 500, a 429, latency, a network failure before or
// after the request takes effect) or force the next create's outcome, both through POST
// /_sim/faults with the account's api_key, and list or drop what waits.
import { NETWORK_FAULTS } from './addresses.js';
import { api } from './api.js';
import { h, phaseText } from './views.js';

const $ = (id) => document.getElementById(id);

/** Where a fault applies: `METHOD path` (method `*`: any). */
function target(value) {
  const [method, path] = value.split(' ');
  return { method: method === '*' ? null : method, path };
}

/** The fault the fault form describes, for `account`. */
function faultFromForm(account) {
  const kind = $('fault-kind').value;
  const fault = { ...target($('fault-target').value), times: Number($('fault-times').value) || 1, api_key: account };
  if (kind === 'latency') fault.latency_ms = Number($('fault-latency').value) || 0;
  else if (kind.startsWith('network:')) Object.assign(fault, { network: kind.slice('network:'.length), phase: $('fault-phase').value });
  else fault.status = Number(kind);
  return fault;
}

/** The network kinds that cannot happen before the request takes effect (those that deliver part of the answer). */
const ALWAYS_AFTER = NETWORK_FAULTS.filter((f) => !f.before).map((f) => `network:${f.kind}`);

/** One option a kind of network fault, as the server lists them; a kind that delivers (part of) the answer says so. */
function networkOptions() {
  const title = (f) => (f.delivers ? `${f.delivers === 'whole' ? 'The whole' : 'Part of the'} answer arrives: the fault happens after the request took effect.` : undefined);
  $('fault-network').replaceChildren(...NETWORK_FAULTS.map((f) => h('option', { value: `network:${f.kind}`, title: title(f) }, f.label)));
}

/** Shows the fields the chosen kind takes: the latency's milliseconds, a network failure's phase. */
function showKindFields() {
  const kind = $('fault-kind').value;
  $('fault-latency-label').hidden = kind !== 'latency';
  $('fault-phase-label').hidden = !kind.startsWith('network:');
  const always = ALWAYS_AFTER.includes(kind);
  $('fault-phase').querySelector('option[value="before"]').disabled = always;
  if (always) $('fault-phase').value = 'after';
}


/** The forced outcome the outcome form describes (any `outcome` POST /_sim/faults takes). */
function outcomeFromForm() {
  const kind = $('outcome-kind').value;
  if (kind.startsWith('fail_stage:')) return { fail_stage: kind.slice('fail_stage:'.length) };
  if (kind === 'flags') {
    const code = $('outcome-flag-code').value.trim() || 'low_confidence';
    const severity = $('outcome-flag-severity').value;
    return { flags: [{ code, severity, message: `Flag ${code} (forced from the dashboard).` }] };
  }
  return { [kind]: true };
}

/** A queued fault in words: `500 on POST /v1/videos ×2`. */
function faultText(f) {
  const what = f.network
    ? `${f.network}, ${phaseText(f.phase)}`
    : f.status
      ? String(f.status)
      : f.latency_ms
        ? `${f.latency_ms} ms latency`
        : `outcome ${JSON.stringify(f.outcome)}`;
  return `${what} on ${f.method ?? 'any'} ${f.path} ×${f.times_left}`;
}

/** Lists the faults waiting for `account` (all accounts' shared faults are not shown). */
function renderFaults(list, account) {
  const mine = account ? list.faults.filter((f) => f.api_key === account) : [];
  $('faults-list').replaceChildren(...mine.map((f) => h('li', { 'data-testid': 'fault-row', class: 'mono' }, faultText(f))));
  $('faults-empty').hidden = mine.length > 0;
  $('faults-empty').textContent = account ? `Nothing queued for ${account}.` : 'Type an account to see what waits for it.';
}

/**
 * Wires the forms. `run(action)` runs a user action (controls disabled, errors shown, the page
 * refreshed after it, this list included); `done(text)` reports a success, `failed(error)` a
 * failure outside an action.
 */
export function wireAccountTools({ run, done, failed }) {
  const account = () => $('tools-account').value.trim();
  const needAccount = () => {
    const key = account();
    if (!key) throw new Error('Type the account (API key) the fault is for.');
    return key;
  };
  /** Lists what waits for the account typed (nothing is asked for while none is). */
  const refresh = async () => {
    const key = account();
    renderFaults(key ? await api.faults() : { faults: [] }, key);
  };

  networkOptions();
  $('fault-kind').addEventListener('change', showKindFields);
  $('outcome-kind').addEventListener('change', () => ($('outcome-flag').hidden = $('outcome-kind').value !== 'flags'));
  // Not an action: typing an account only shows what waits for it.
  $('tools-account').addEventListener('change', () => void refresh().catch(failed));
  $('fault-form').addEventListener('submit', (event) => {
    event.preventDefault();
    run(async () => {
      const fault = faultFromForm(needAccount());
      await api.queueFault(fault);
      const when = fault.network ? `, ${$('fault-phase').selectedOptions[0].textContent}` : '';
      done(`Queued for ${fault.api_key}: ${$('fault-kind').selectedOptions[0].textContent}${when} on ${$('fault-target').selectedOptions[0].textContent}.`);
    });
  });
  $('outcome-form').addEventListener('submit', (event) => {
    event.preventDefault();
    run(async () => {
      const key = needAccount();
      await api.queueFault({ path: '/v1/videos', method: 'POST', outcome: outcomeFromForm(), api_key: key });
      done(`The next video ${key} creates: ${$('outcome-kind').selectedOptions[0].textContent}.`);
    });
  });
  $('faults-clear').addEventListener('click', () =>
    run(async () => {
      const key = needAccount();
      await api.clearFaults(key);
      done(`Dropped the faults queued for ${key}.`);
    }),
  );
  return { refresh };
}
