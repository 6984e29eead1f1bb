// Creates a video or a keyframe image with an API key the user types: a real request to /v1, so
// it is that key's (journaled, rate limited, faulted, reported) like any client's.
import { serviceRequest } from './api.js';

const $ = (id) => document.getElementById(id);

/** Offers the scenario's video models (from GET /_sim/scenario). */
export function renderModels(models) {
  const select = $('create-model');
  const current = select.value;
  select.replaceChildren(...models.map((name) => new Option(name, name)));
  select.value = models.includes(current) ? current : (models.at(-1) ?? '');
}

/** Shows the prompt triggers, or that the scenario has them off (`prompt_triggers` of GET /_sim/scenario). */
export function renderTriggers(on) {
  $('create-triggers').hidden = !on;
  $('create-triggers-off').hidden = on;
  $('create-prompt').setAttribute('aria-describedby', on ? 'create-triggers' : 'create-triggers-off');
}

/** The body the form describes: POST /v1/videos or POST /v1/images. */
function request() {
  const prompt = $('create-prompt').value;
  if ($('create-kind').value === 'image') return { path: 'images', body: { prompt } };
  const body = { model: $('create-model').value, prompt };
  const keyframe = $('create-keyframe').value.trim();
  if (keyframe) body.keyframe_id = keyframe;
  return { path: 'videos', body };
}

/** Wires the form; `run(action)` runs a user action, `onCreated(answer)` is told of a created video. */
export function wireCreateForm({ run, onCreated }) {
  const showKind = () => {
    for (const el of document.querySelectorAll('[data-create-video]')) el.hidden = $('create-kind').value !== 'video';
  };
  $('create-kind').addEventListener('change', showKind);
  showKind();
  $('create-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const key = $('create-key').value.trim();
    const { path, body } = request();
    run(async () => {
      const answer = await serviceRequest(path, { key, body });
      const result = $('create-result');
      if (answer.status === 200) {
        result.dataset.outcome = 'ok';
        result.textContent = `200 · ${answer.body.id}${answer.body.status ? ` (${answer.body.status})` : ''}`;
        if (answer.body.object === 'video') onCreated(answer.body);
      } else {
        const error = answer.body?.error;
        result.dataset.outcome = 'error';
        result.textContent = error ? `${answer.status} · ${error.type} · ${error.code}: ${error.message}` : `${answer.status} (no error body)`;
      }
    });
  });
}
