// @ts-check
// The Extensions panel: the shipped catalogue with the gate's verdicts, proposals waiting for a
// human with their disclosure plan in plain words, admission by a one-time code printed on the
// relay's console, admitted extensions with revoke, and files present but not admitted. It talks
// to the relay's /api/extensions routes directly (same origin); it never sees the host token.
// It follows the relay's event stream: a proposal, admission or revocation made anywhere (the
// model, another tab, the host's console) shows within a second. A proposal can be dismissed
// (one the gate refused most of all). What the panel says of an action stays until the next.
import { byId, node } from './dom.js';
import { listen } from './events.js';
import { relay } from './http.js';

/** NOTE_MS is how long the panel's note about an action stays. */
const NOTE_MS = 8000;

/**
 * Entry is one extension of the listing, with the gate's verdict and its disclosure plan.
 * A remote MCP extension's entry says how its session is (mcp) and which of its tools have an
 * MCP Apps view.
 * @typedef {{id: string, name?: string, description?: string, ok: boolean, refused?: string, why?: string,
 *   plan: {summary: string[]}, tools?: {name: string, primitive: string, view?: string}[],
 *   mcp?: {url: string, connected: boolean, refused?: string, why?: string, requests: string,
 *   unavailable: {name: string, refused: string, why: string}[]}, admitted?: boolean}} Entry
 */

/**
 * startExtensions runs the Extensions panel; openView shows a remote MCP tool's view in the
 * mini-app sandbox (mini-apps.js).
 * @param {{openView: (extension: string, tool: string) => Promise<unknown>}} hooks
 */
export function startExtensions(hooks) {
  const el = {
    note: byId('ext-note'), pending: byId('ext-pending'), admitted: byId('ext-admitted'),
    present: byId('ext-present'), catalogue: byId('ext-catalogue'), refresh: byId('ext-refresh'),
  };

  /**
   * @param {string} path
   * @param {unknown} [body]
   */
  const api = (path, body) => relay('/api/extensions' + path, { body });
  let noteTimer = 0;
  /** @param {string} text */
  const say = (text) => {
    el.note.textContent = text;
    clearTimeout(noteTimer);
    noteTimer = setTimeout(() => { el.note.textContent = ''; }, NOTE_MS);
  };
  /**
   * @param {string} text
   * @param {() => void} onClick
   * @param {string} label the accessible name: what the button acts on
   */
  const button = (text, onClick, label) => {
    const b = node('button', '', text);
    b.type = 'button';
    b.setAttribute('aria-label', label);
    b.addEventListener('click', () => { Promise.resolve(onClick()).catch((err) => say(`The relay did not answer: ${err instanceof Error ? err.message : err}`)); });
    return b;
  };
  /** @param {{id: string, name?: string}} entry */
  const title = (entry) => entry.name || entry.id;

  // planWords lists the plan's grants as sentences a person can judge.
  /** @param {Entry} entry */
  const planWords = (entry) => {
    const ul = node('ul', 'ext-plan');
    if (!entry.ok) {
      ul.append(node('li', 'ext-refused', 'Refused (' + entry.refused + '): ' + entry.why));
      return ul;
    }
    for (const line of entry.plan.summary) ul.append(node('li', '', line));
    return ul;
  };

  /** @param {Entry} entry */
  const item = (entry) => {
    const li = node('li', 'ext-item');
    li.dataset.id = entry.id;
    li.append(node('strong', '', entry.name || entry.id));
    if (entry.description) li.append(node('span', 'hint', ' ' + entry.description));
    return li;
  };

  /** @param {Entry} entry */
  const pendingItem = (entry) => {
    const li = item(entry);
    li.append(planWords(entry));
    const dismiss = button('Dismiss', async () => {
      const r = await api('/dismiss', { id: entry.id });
      say(r.ok ? `The proposal ${entry.id} is dismissed.` : `Not dismissed (${r.refused}): ${r.why}`);
      load();
    }, `Dismiss the proposal ${title(entry)}`);
    dismiss.className = 'ext-dismiss';
    if (!entry.ok) {
      li.append(dismiss);
      return li;
    }
    const form = approveForm(entry);
    form.append(dismiss);
    li.append(form);
    return li;
  };

  // approveForm asks for a one-time code for entry (a proposal, or a file present in the state
  // directory, admitted where it lies) and takes the code the person reads on the console.
  /** @param {{id: string, name?: string}} entry */
  const approveForm = (entry) => {
    const form = node('div', 'ext-approve');
    const input = node('input');
    input.inputMode = 'numeric';
    input.autocomplete = 'off';
    input.maxLength = 8;
    input.placeholder = '8-digit code';
    input.className = 'ext-code';
    input.setAttribute('aria-label', `Approval code for ${title(entry)}`);
    input.hidden = true;
    // Enter in the code box approves, as the button beside it does.
    input.addEventListener('keydown', (e) => {
      if (e.key !== 'Enter' || e.isComposing) return;
      e.preventDefault();
      approve.click();
    });
    const approve = button('Approve', async () => {
      const r = await api('/approve', { id: entry.id, code: input.value });
      say(r.ok ? entry.id + ' is admitted.' : 'Not admitted (' + r.refused + '): ' + r.why);
      // A mistyped code may be tried again (the relay counts the attempts); any other answer
      // ends this code, so the listing is read again.
      if (r.refused === 'approval-code-wrong') { input.select(); return; }
      load();
    }, `Approve ${title(entry)} with the code`);
    approve.className = 'ext-approve-button';
    approve.hidden = true;
    const request = button('Request approval code', async () => {
      const r = await api('/approval-request', { id: entry.id });
      if (!r.ok) { say('No code (' + r.refused + '): ' + r.why); return; }
      say('A one-time code for ' + entry.id + ' is on the relay\'s console (or run `relay approval-code`). Enter it within 2 minutes.');
      input.hidden = false;
      approve.hidden = false;
      input.focus();
    }, `Request approval code for ${title(entry)}`);
    request.className = 'ext-request';
    form.append(request, input, approve);
    return form;
  };

  /** @param {Entry} entry */
  const admittedItem = (entry) => {
    const li = item(entry);
    const tools = (entry.tools || []).map((t) => t.name + ' (' + t.primitive + ')').join(', ');
    li.append(node('div', 'hint', 'Tools: ' + (tools || 'none offered')));
    if (entry.mcp) {
      const m = entry.mcp;
      li.append(node('div', 'hint ext-mcp', `Server ${m.url}: ${m.connected ? 'connected' : `not connected (${m.refused || 'connecting'}${m.why ? ': ' + m.why : ''})`}; requests used ${m.requests}.`));
      for (const u of m.unavailable) li.append(node('div', 'hint ext-unavailable', `${u.name} is not offered (${u.refused}): ${u.why}`));
      for (const t of entry.tools || []) {
        if (!t.view) continue;
        const open = button(`Open view: ${t.name}`, () => hooks.openView(entry.id, t.name), `Open the view of ${t.name}`);
        open.className = 'ext-open-view';
        li.append(open);
      }
    }
    // The WASM shelf's tools are admitted by their manifest's digests: they leave with it.
    if (entry.id.startsWith('wasm-shelf-')) {
      li.append(node('div', 'hint', 'From the WASM shelf: remove it from the shelf\'s manifest.json to withdraw it.'));
      return li;
    }
    const revoke = button('Revoke', async () => {
      const r = await api('/revoke', { id: entry.id });
      say(r.ok ? entry.id + ' is revoked.' : 'Not revoked (' + r.refused + '): ' + r.why);
      load();
    }, `Revoke ${title(entry)}`);
    revoke.className = 'danger ext-revoke';
    li.append(revoke);
    return li;
  };

  /** @param {Entry} entry */
  const catalogueItem = (entry) => {
    const li = item(entry);
    li.append(planWords(entry));
    if (entry.admitted) {
      // Admitted exactly as shipped: nothing to propose (the relay would refuse already-admitted).
      li.append(node('p', 'hint ext-admitted-already', 'Admitted: it is listed under Admitted above.'));
    } else if (entry.ok) {
      const stage = button('Propose', async () => {
        const r = await api('/stage-catalogue', { id: entry.id });
        say(r.ok ? entry.id + ' is waiting for your decision above.' : 'Not staged (' + r.refused + '): ' + r.why);
        load();
      }, `Propose ${title(entry)}`);
      stage.className = 'ext-stage';
      li.append(stage);
    }
    return li;
  };

  /**
   * @template E
   * @param {HTMLElement} ul
   * @param {E[]} entries
   * @param {(entry: E) => HTMLElement} make
   * @param {string} empty
   */
  const fill = (ul, entries, make, empty) => {
    // The panel is read again on every change anywhere: an item whose entry did not change is
    // kept as it is (a code asked for, a code half typed, focus), and a list that did not change
    // is not touched at all.
    const sigs = entries.map((e) => JSON.stringify(e));
    const shown = [...ul.children].map((li) => /** @type {HTMLElement} */ (li).dataset.sig || '');
    if (entries.length > 0 && sigs.join('\n') === shown.join('\n')) return;
    /** @type {Map<string, Element>} */
    const kept = new Map();
    for (const li of ul.children) kept.set(/** @type {HTMLElement} */ (li).dataset.sig || '', li);
    ul.replaceChildren(...entries.map((e, i) => {
      const li = /** @type {HTMLElement} */ (kept.get(sigs[i]) || make(e));
      li.dataset.sig = sigs[i];
      return li;
    }));
    if (entries.length === 0) ul.append(node('li', 'hint', empty));
  };

  const load = async () => {
    let r;
    try { r = await api(''); } catch { return; } // the page says once that the relay is down
    if (!r.ok) { say('The relay refused the listing: ' + r.why); return; }
    const x = r.extensions;
    fill(el.pending, x.pending, pendingItem, 'Nothing is waiting.');
    fill(el.admitted, x.admitted, admittedItem, 'No extension is admitted.');
    fill(el.present, x.presentNotAdmitted, (/** @type {{id: string, refused: string, why: string}} */ p) => {
      const li = node('li', 'ext-item ext-flagged', p.id + ': ' + p.refused + ' - ' + p.why);
      li.dataset.id = p.id;
      // A descriptor put into the directory by hand is admitted where it lies, by a person.
      if (p.refused === 'present-not-admitted') li.append(approveForm({ id: p.id }));
      return li;
    }, 'None.');
    fill(el.catalogue, x.catalogue, catalogueItem, 'The catalogue is empty.');
    byId('extensions').dataset.state = 'ready';
  };

  el.refresh.addEventListener('click', load);
  // Whatever changed the extensions, wherever: read the listing again. A hello follows a
  // reconnection, after which events may have been missed.
  listen('relay:extensions', () => { load(); });
  listen('relay:hello', () => { load(); });
  load();
}
