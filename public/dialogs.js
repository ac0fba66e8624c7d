// @ts-check
// The page's notice line, its banner for a relay that does not answer, and its dialogs, for
// every panel. Every dialog is a modal <dialog> whose form has one submit button: Enter confirms
// (the submit button is the form's default button) and Escape cancels (the dialog's own cancel),
// and focus goes back to what had it when the dialog closes.
import { byId, node } from './dom.js';

/** NOTICE_MS is how long a notice stays shown. */
const NOTICE_MS = 6000;

let noticeTimer = 0;

/**
 * notify shows an error (or any message) in the page's notice line for a while. A refusal shows
 * its sentence with its rule id small beside it.
 * @param {unknown} err
 */
export function notify(err) {
  const notice = byId('notice');
  const text = err instanceof Error && err.message ? err.message : String(err);
  const rule = err && typeof err === 'object' && 'rule' in err ? String(err.rule) : '';
  notice.replaceChildren(node('span', '', text));
  if (rule) notice.append(' ', node('code', 'rule', rule));
  notice.hidden = false;
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => { notice.hidden = true; }, NOTICE_MS);
}

/**
 * say shows a message that is not an error (a takeover, a saved file) in the page's notice line.
 * @param {string} text
 */
export function say(text) {
  const notice = byId('notice');
  notice.replaceChildren(text);
  notice.dataset.kind = 'info';
  notice.hidden = false;
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => { notice.hidden = true; delete notice.dataset.kind; }, NOTICE_MS);
}

/**
 * settling holds, for each dialog whose showing has closed but whose close event has not yet been
 * dispatched, what answers that showing.
 * @type {WeakMap<HTMLDialogElement, () => void>}
 */
const settling = new WeakMap();

/**
 * showModal opens dialog and resolves with its returnValue when it closes ('' when Escape or a
 * cancel closed it), putting focus back where it was.
 * @param {HTMLDialogElement} dialog
 * @param {HTMLElement} [focus] what takes focus in the dialog (its first field otherwise)
 * @returns {Promise<string>}
 */
function showModal(dialog, focus) {
  // A dialog's close event is queued, not dispatched at once. When the next showing opens before
  // the last one's event arrived (a fast second click), the last one is answered now, with the
  // value it closed with; its late event then finds this showing open and answers nothing.
  if (!dialog.open) settling.get(dialog)?.();
  const back = document.activeElement;
  dialog.returnValue = '';
  dialog.showModal();
  if (focus) focus.focus();
  return new Promise((resolve) => {
    const settle = () => {
      dialog.removeEventListener('close', closed);
      settling.delete(dialog);
      // Focus goes back only if nothing else took it since the dialog closed: its close event is
      // queued, and what the person (or the page) focused in between keeps the focus.
      const now = document.activeElement;
      const unclaimed = !now || now === document.body || dialog.contains(now);
      if (unclaimed && back instanceof HTMLElement && back.isConnected) back.focus({ preventScroll: true });
      resolve(dialog.returnValue);
    };
    const closed = () => {
      if (!dialog.open) settle();
    };
    settling.set(dialog, settle);
    dialog.addEventListener('close', closed);
  });
}

// The cancel buttons close their dialog without submitting it.
for (const b of document.querySelectorAll('dialog button[data-cancel]')) {
  b.addEventListener('click', () => b.closest('dialog')?.close(''));
}

/**
 * confirmAction asks the person to confirm; it resolves true when they pressed the verb's button
 * (or Enter).
 * @param {string} text
 * @param {string} verb
 * @returns {Promise<boolean>}
 */
export async function confirmAction(text, verb) {
  byId('confirm-text').textContent = text;
  const ok = byId('confirm-ok', HTMLButtonElement);
  ok.textContent = verb;
  return (await showModal(byId('confirm-dialog', HTMLDialogElement), ok)) === 'ok';
}

/**
 * askName asks for a name; it resolves '' when the person cancelled.
 * @param {string} label
 * @param {string} verb
 * @param {string} [initial]
 * @returns {Promise<string>}
 */
export async function askName(label, verb, initial = '') {
  byId('name-label').textContent = label;
  byId('name-ok').textContent = verb;
  const input = byId('name-input', HTMLInputElement);
  input.value = initial;
  const shown = showModal(byId('name-dialog', HTMLDialogElement), input);
  // Select the name without its extension, as file managers do on rename.
  const dot = initial.lastIndexOf('.');
  input.setSelectionRange(initial.lastIndexOf('/') + 1, dot > initial.lastIndexOf('/') + 1 ? dot : initial.length);
  return (await shown) === 'ok' ? input.value.trim() : '';
}

/**
 * Choice is one button of a choice dialog; the one marked default is what Enter chooses.
 * @typedef {{value: string, label: string, danger?: boolean, default?: boolean}} Choice
 */

/**
 * choose asks the person to pick one of choices; it resolves with the value chosen, '' when they
 * cancelled (Escape), and forAll when the dialog offered "for all" (forAll names what) and they
 * ticked it.
 * @param {{title: string, text: string, choices: Choice[], forAll?: string}} ask
 * @returns {Promise<{value: string, forAll: boolean}>}
 */
export async function choose({ title, text, choices, forAll }) {
  const dialog = byId('choice-dialog', HTMLDialogElement);
  byId('choice-title').textContent = title;
  byId('choice-text').textContent = text;
  const all = byId('choice-all', HTMLInputElement);
  all.checked = false;
  byId('choice-all-row').hidden = !forAll;
  byId('choice-all-label').textContent = forAll || '';
  // The default choice is the form's one submit button, so Enter presses it wherever it stands;
  // the others close the dialog with their value.
  const buttons = byId('choice-buttons');
  const def = choices.find((c) => c.default) || choices[0];
  /** @type {HTMLButtonElement | null} */
  let first = null;
  buttons.replaceChildren(...choices.map((c) => {
    const b = node('button', c.danger ? 'danger' : '', c.label);
    b.value = c.value;
    if (c === def) {
      b.type = 'submit';
      first = b;
    } else {
      b.type = 'button';
      b.addEventListener('click', () => dialog.close(c.value));
    }
    return b;
  }));
  const value = await showModal(dialog, first || undefined);
  return { value, forAll: !!forAll && all.checked };
}

/**
 * PageServices is what the entry module (main.js) hands each panel: the worker client's calls
 * and the page's dialogs.
 * @typedef {{
 *   call: import('./worker-client.js').WorkerClient['call'],
 *   must: import('./worker-client.js').WorkerClient['must'],
 *   on: import('./worker-client.js').WorkerClient['on'],
 *   notify: typeof notify,
 *   confirmAction: typeof confirmAction,
 * }} PageServices
 */
