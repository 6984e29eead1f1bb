// Live control of the selected generation: Advance stage, Finish now, Fail now (with a code of its
// stage, from GET /_sim/pipeline) and Cancel, each one control request
// (POST /_sim/generations/{id}/advance, /finish, /fail, /cancel) that answers the generation.
import { currentStage, stageLabel } from './format.js';
import { failureCodesOf, isCancelable } from './pipeline.js';
import { h } from './views.js';

/** The code picked for a generation's stage, kept while the panel is redrawn: `${id}|${stage}` → code. */
let picked = { key: '', code: '' };

/**
 * Draws the action bar of generation `g` (hidden without one); `onAction(action, body)` sends the
 * control request.
 */
export function renderGenerationActions(container, g, onAction) {
  container.hidden = !g;
  if (!g) {
    container.replaceChildren();
    return;
  }
  const stage = currentStage(g);
  if (!stage) {
    container.replaceChildren(h('p', { class: 'muted hint', 'data-testid': 'action-hint' }, `Resolved as ${g.status}: nothing left to move.`));
    return;
  }
  const codes = failureCodesOf(stage);
  const key = `${g.id}|${stage}`;
  if (picked.key !== key || !codes.includes(picked.code)) picked = { key, code: codes[0] ?? '' };
  const codeSelect = h(
    'select',
    {
      'data-testid': 'action-fail-code',
      'aria-label': `Error code to fail ${stageLabel(stage)} with`,
      disabled: codes.length === 0,
      onchange: (event) => (picked = { key, code: event.target.value }),
    },
    codes.map((code) => h('option', { value: code, selected: code === picked.code }, code)),
  );
  const cancelable = isCancelable(g);
  container.replaceChildren(
    h('span', { class: 'muted' }, `In ${stageLabel(stage)}:`),
    h('button', { type: 'button', 'data-testid': 'action-advance', title: 'End the current stage now; the next one starts', onclick: () => onAction('advance') }, 'Advance stage'),
    h('button', { type: 'button', 'data-testid': 'action-finish', title: 'Walk all remaining stages now, to its drawn outcome', onclick: () => onAction('finish') }, 'Finish now'),
    h(
      'span',
      { class: 'fail-group' },
      h(
        'button',
        {
          type: 'button',
          class: 'danger',
          'data-testid': 'action-fail',
          disabled: codes.length === 0,
          title: codes.length ? `Fail now at ${stageLabel(stage)}` : `A generation in ${stageLabel(stage)} cannot fail; advance it first`,
          onclick: () => onAction('fail', { code: picked.code }),
        },
        'Fail now',
      ),
      codeSelect,
    ),
    h(
      'button',
      {
        type: 'button',
        'data-testid': 'action-cancel',
        disabled: !cancelable,
        title: cancelable ? 'Cancel it, as DELETE /v1/videos/{id} would' : `A ${g.status} generation cannot be canceled`,
        onclick: () => onAction('cancel'),
      },
      'Cancel',
    ),
  );
}
