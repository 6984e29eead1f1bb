// The control token, for a simulator that has one (`--control-token`, or generated at start on a
// non-loopback address and printed as `dashboard: <base>/_sim/#token=<token>`).
//
// The page takes it from its `#token=` fragment when opened with one, keeps it for this tab
// (sessionStorage: gone when the tab closes, never sent anywhere but this simulator) and removes it
// from the address bar, so that it is not bookmarked, shared or left in the history. Without one,
// the first control request the simulator refuses with 401 opens a small form that asks for it;
// every request waiting on the token resumes once it is given.

const STORAGE_KEY = 'video-service-sim:control-token';
let memory = null; // when sessionStorage is unavailable (a sandboxed page, storage disabled)

function store(token) {
  memory = token;
  try {
    sessionStorage.setItem(STORAGE_KEY, token);
  } catch {
    // kept in memory only: the page asks again after a reload
  }
}

/** The token this tab uses, or null. */
export function controlToken() {
  try {
    return sessionStorage.getItem(STORAGE_KEY) ?? memory;
  } catch {
    return memory;
  }
}

/** Takes `token=...` out of the fragment (other parts, such as a `#vid_...` link, stay). */
function takeTokenFromAddress() {
  const hash = window.location.hash.slice(1);
  if (!hash) return;
  const parts = hash.split('&');
  const tokenPart = parts.find((p) => p.startsWith('token='));
  if (tokenPart === undefined) return;
  const token = decodeURIComponent(tokenPart.slice('token='.length));
  if (token) store(token);
  const rest = parts.filter((p) => p !== tokenPart).join('&');
  history.replaceState(history.state, '', `${window.location.pathname}${window.location.search}${rest ? `#${rest}` : ''}`);
}

takeTokenFromAddress();

// ---- asking for it ----

let asking = null; // the pending question, shared by every request waiting for a token

/**
 * Asks for the token (once, whatever the number of requests waiting); resolves when one is given.
 * `refused`: the simulator refused the token this tab had.
 */
export function askForToken(refused) {
  asking ??= new Promise((resolve) => {
    const dialog = tokenDialog();
    dialog.querySelector('[data-testid="token-reason"]').textContent = refused
      ? 'The simulator refused this token. Give the control token it printed at start (control token: …), or the one it was started with.'
      : 'This simulator needs its control token for the dashboard: the one it printed at start (control token: …, also in the dashboard address it printed), or the one given with --control-token.';
    const input = dialog.querySelector('input');
    input.value = '';
    dialog.querySelector('form').onsubmit = (event) => {
      event.preventDefault();
      const token = input.value.trim();
      if (!token) return;
      store(token);
      dialog.close();
      asking = null;
      resolve(token);
    };
    if (!dialog.open) dialog.showModal();
    input.focus();
  });
  return asking;
}

/** The form, made on first use (the page has no place for it until a simulator asks). */
function tokenDialog() {
  let dialog = document.getElementById('token-dialog');
  if (dialog) return dialog;
  dialog = document.createElement('dialog');
  dialog.id = 'token-dialog';
  dialog.className = 'token-dialog';
  dialog.dataset.testid = 'token-dialog';
  dialog.setAttribute('aria-labelledby', 'token-title');
  dialog.innerHTML = `
    <form method="dialog" data-testid="token-form">
      <h2 id="token-title">Control token</h2>
      <p class="muted" data-testid="token-reason"></p>
      <label for="token-input">Token</label>
      <input id="token-input" data-testid="token-input" type="password" autocomplete="off" spellcheck="false" required>
      <button type="submit" class="primary" data-testid="token-submit">Use this token</button>
    </form>`;
  // Without the token the page can show nothing: Escape does not close the question.
  dialog.addEventListener('cancel', (event) => event.preventDefault());
  document.body.append(dialog);
  return dialog;
}
