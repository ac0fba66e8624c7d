// @ts-check
// The page's notice line and its confirmation dialog, for every panel.
import { byId } from './dom.js';

/** NOTICE_MS is how long a notice stays shown. */
const NOTICE_MS = 6000;

let noticeTimer = 0;

/**
 * notify shows an error (or any message) in the page's notice line for a while.
 * @param {unknown} err
 */
export function notify(err) {
  const notice = byId('notice');
  notice.textContent = err instanceof Error && err.message ? err.message : String(err);
  notice.hidden = false;
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => { notice.hidden = true; }, NOTICE_MS);
}

/**
 * confirmAction asks the person to confirm; it resolves true when they pressed the verb's button.
 * @param {string} text
 * @param {string} verb
 * @returns {Promise<boolean>}
 */
export function confirmAction(text, verb) {
  const dialog = byId('confirm-dialog', HTMLDialogElement);
  byId('confirm-text').textContent = text;
  byId('confirm-ok').textContent = verb;
  dialog.returnValue = '';
  dialog.showModal();
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => resolve(dialog.returnValue === 'ok'), { once: true });
  });
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
