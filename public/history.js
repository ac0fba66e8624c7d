// @ts-check
// The History panel: every change to the workspace's files, newest first, with who made it (you
// in the file browser, or the assistant), and Undo and Redo over all of them. It reads the undo
// history of this tab's workspace from the worker (history.list), which tells the page whenever
// it changes. An undo that would lose a later change shows the two versions and lets the person
// choose: keep the current one, restore the earlier one (the current one stays for Redo), or
// keep both; the history then moves on. While a paired machine holds the workspace, Undo asks
// the machine through the assistant (undo_last_action); its history stays on the machine.
import { notify } from './dialogs.js';
import { byId, node } from './dom.js';
import { emit, listen } from './events.js';
import { sendTurn } from './turns.js';

/** @typedef {import('./worker-client.js').HistoryEntry} HistoryEntry */
/** @typedef {import('./worker-client.js').Resolution} Resolution */

/** VERBS are the past tense of each action, as the list says them. */
const VERBS = { write: 'wrote', edit: 'edited', delete: 'deleted', move: 'moved', mkdir: 'made the folder', rmdir: 'removed the folder' };
/** REDO_PROMISE ends an undo's note while the change waits for Redo; it goes when a new change ends the redos. */
const REDO_PROMISE = ' Redo puts it back.';

/**
 * describe says a change in words: "You wrote notes.txt (a new file)".
 * @param {HistoryEntry | {by?: string, action?: string, undone?: string, path: string, to?: string, created?: boolean}} e
 */
export function describeChange(e) {
  const who = e.by === 'person' ? 'You' : 'The assistant';
  const action = 'action' in e && e.action ? e.action : 'undone' in e && e.undone ? e.undone : 'write';
  const verb = VERBS[/** @type {keyof typeof VERBS} */ (action)] || action;
  const what = action === 'move' ? `${e.path} to ${e.to}` : e.path;
  return `${who} ${verb} ${what}${e.created ? ' (a new file)' : ''}`;
}

/**
 * startHistory runs the History panel.
 * @param {import('./dialogs.js').PageServices} vb
 */
export function startHistory(vb) {
  const el = {
    panel: byId('history'), undo: byId('undo', HTMLButtonElement), redo: byId('redo', HTMLButtonElement),
    note: byId('history-note'), list: byId('history-list'), conflict: byId('history-conflict'),
    conflictText: byId('conflict-text'), current: byId('conflict-current'), earlier: byId('conflict-earlier'),
    choices: byId('conflict-choices'),
  };
  /** @type {import('./events.js').Where | null} */
  let where = null;
  let hasRoot = false;
  let busy = false;
  let readings = 0;

  const onMachine = () => where?.holder === 'machine';

  /** @param {string} text */
  const say = (text) => { el.note.textContent = text; };

  async function refresh() {
    if (onMachine()) {
      el.list.replaceChildren(node('li', 'hint', `The machine “${where?.name}” keeps the history of its folder. Undo asks it to take back its newest change.`));
      el.undo.disabled = busy;
      el.redo.disabled = true;
      return;
    }
    if (!hasRoot) return;
    // Only the newest reading is shown: an older one answered late would show a past history.
    const mine = ++readings;
    const answer = await vb.call('history.list');
    if (mine !== readings) return;
    if (!answer.ok) {
      el.list.replaceChildren(node('li', 'hint', `The history could not be read: ${answer.why}`));
      return;
    }
    const h = answer.value;
    // A new change ended the redos: the note no longer promises one.
    if (h.redo === 0 && el.note.textContent?.endsWith(REDO_PROMISE)) say(el.note.textContent.slice(0, -REDO_PROMISE.length));
    el.undo.disabled = busy || h.undo === 0;
    el.redo.disabled = busy || h.redo === 0;
    el.undo.title = h.undo ? `Undo: ${describeChange(h.entries[h.redo])}` : 'Nothing to undo';
    el.redo.title = h.redo ? `Redo: ${describeChange(h.entries[h.redo - 1])}` : 'Nothing to redo';
    if (h.entries.length === 0) {
      el.list.replaceChildren(node('li', 'hint empty', 'No changes yet. What you and the assistant change in the workspace shows here, and Undo takes it back.'));
      return;
    }
    el.list.replaceChildren(...h.entries.map((e) => {
      const li = node('li');
      li.dataset.by = e.by;
      li.dataset.undone = String(e.undone);
      const when = new Date(e.time);
      const time = node('time', 'hint', when.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }));
      time.dateTime = e.time;
      li.append(node('span', 'who-' + e.by, describeChange(e)), ' ', time);
      if (e.undone) li.append(' ', node('span', 'badge', 'undone'));
      return li;
    }));
  }

  /** @param {boolean} on */
  function setBusy(on) {
    busy = on;
    el.undo.disabled = el.redo.disabled = on;
    if (!on) refresh();
  }

  /**
   * undo takes back the newest change, resolving a conflict as said.
   * @param {Resolution} [resolve]
   */
  async function undo(resolve) {
    if (busy) return;
    setBusy(true);
    try {
      if (onMachine()) {
        const t = await sendTurn({ action: { verb: 'undo_last_action' } });
        const r = typeof t.result === 'string' ? JSON.parse(t.result) : t.result;
        say(t.ok ? `Undone on the machine: ${describeChange({ ...r, by: r.by })}.` : `Not undone: ${t.why} (${t.refused})`);
        if (t.ok) emit('files-changed');
        return;
      }
      const answer = await vb.call('history.undo', resolve ? { resolve } : {});
      if (answer.ok) {
        hideConflict();
        const d = answer.value;
        const what = describeChange({ ...d, action: d.undone });
        say(d.resolved === 'keep-current' ? `Kept the current version; “${what}” is no longer in the history.`
          : d.keptAs ? `Kept both: the earlier version is now ${d.keptAs}.`
            : `Undone: ${what}.${d.redo ? REDO_PROMISE : ''}`);
        return;
      }
      if (answer.refused === 'undo-conflict') {
        await showConflict(answer.why);
        return;
      }
      say(`Not undone: ${answer.why} (${answer.refused})`);
    } catch (err) {
      notify(err);
    } finally {
      setBusy(false);
    }
  }

  async function redo() {
    if (busy || onMachine()) return;
    setBusy(true);
    try {
      const answer = await vb.call('history.redo');
      if (answer.ok) {
        say(`Redone: ${describeChange({ ...answer.value, action: answer.value.redone })}.`);
      } else {
        say(`Not redone: ${answer.why} (${answer.refused})`);
      }
    } finally {
      setBusy(false);
    }
  }

  /**
   * showConflict shows the change undo would take back and the two versions of its file, with
   * the ways out this change allows; focus goes to the first of them.
   * @param {string} why
   */
  async function showConflict(why) {
    const answer = await vb.call('history.conflict');
    if (!answer.ok || !answer.value.inConflict) {
      // The change was dropped (it was not in effect) or the file is back: nothing to choose.
      say(why);
      return;
    }
    const c = answer.value;
    const folders = c.change.action === 'mkdir' || c.current.folder;
    const place = c.change.action === 'rmdir' ? 'a file took its place' : `${folders ? 'the folder' : 'the file'} changed`;
    el.conflictText.textContent = `${describeChange(c.change)}, and ${place} after that. Which version do you want?`;
    /**
     * @param {HTMLElement} pre
     * @param {import('./worker-client.js').Version} v
     */
    const show = (pre, v) => {
      pre.textContent = !v.exists ? (folders ? '(no folder)' : '(no file)') : v.folder ? '(a folder)'
        : v.binary ? `(binary content, ${v.size} ${v.size === 1 ? 'byte' : 'bytes'})` : v.text + (v.truncated ? '\n…' : '');
    };
    show(el.current, c.current);
    show(el.earlier, c.earlier);
    for (const b of el.choices.querySelectorAll('button')) {
      if (b instanceof HTMLButtonElement) b.hidden = !c.resolutions.includes(/** @type {Resolution} */ (b.dataset.resolve));
    }
    el.conflict.hidden = false;
    say('');
    el.conflict.scrollIntoView({ block: 'nearest', behavior: 'instant' });
    const first = el.choices.querySelector('button:not([hidden])');
    if (first instanceof HTMLElement) first.focus({ preventScroll: true });
  }

  function hideConflict() { el.conflict.hidden = true; }

  for (const b of el.choices.querySelectorAll('button')) {
    b.addEventListener('click', () => undo(/** @type {Resolution} */ (/** @type {HTMLElement} */ (b).dataset.resolve)));
  }
  el.undo.addEventListener('click', () => undo());
  el.redo.addEventListener('click', () => redo());
  listen('history', () => { hideConflictIfStale(); refresh(); });
  listen('root', () => { hasRoot = true; hideConflict(); say(''); refresh(); });
  listen('where', (w) => { where = w; hideConflict(); refresh(); });
  // A machine's changes come through the relay's calls.
  listen('relay:call', (c) => { if (onMachine() && c.ok) refresh(); });

  // A conflict shown is stale once the history moved on without it.
  function hideConflictIfStale() {
    if (el.conflict.hidden) return;
    vb.call('history.conflict').then((a) => { if (!a.ok || !a.value.inConflict) hideConflict(); });
  }

  return Object.freeze({ undo, redo, refresh });
}
