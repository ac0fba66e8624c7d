// @ts-check
// Results for people: what a tool observed, said in words and lists instead of JSON (the JSON
// stays behind "Details" where the panels show it). A refusal is its sentence, with its rule id
// small beside it.
import { node } from './dom.js';

/** MAX_LISTED bounds the items a result lists; the rest are counted. */
const MAX_LISTED = 50;
/** MAX_SHOWN_CHARS bounds the text of a file a result shows. */
const MAX_SHOWN_CHARS = 2000;

/** @param {number} n */
export function formatSize(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1 << 20) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1 << 30) return `${(n / (1 << 20)).toFixed(1)} MiB`;
  return `${(n / (1 << 30)).toFixed(2)} GiB`;
}

/**
 * refusalNode shows a refusal: the sentence, then the rule id small.
 * @param {string} rule
 * @param {string} why
 * @param {string} [cls]
 */
export function refusalNode(rule, why, cls = 'result') {
  const p = node('p', cls + ' refusal');
  p.append(node('span', 'why', why || 'Refused.'), ' ', node('code', 'rule', rule));
  return p;
}

/**
 * helpNode shows the typed commands' help (commands.Help: a first line, then commands laid out in
 * columns of spaces, some joined by " · ") as a sentence and a list of commands, one to an item,
 * which wraps at any width instead of breaking the columns into a jumble.
 * @param {string} help
 */
export function helpNode(help) {
  const box = node('div', 'help');
  const [first, ...rest] = help.split('\n');
  box.append(node('p', '', first));
  const ul = node('ul', 'help-list');
  for (const line of rest) {
    for (const item of line.trim().split(/\s{2,}|\s·\s/)) {
      if (!item.trim()) continue;
      const li = node('li');
      li.append(node('code', '', item.trim()));
      ul.append(li);
    }
  }
  box.append(ul);
  return box;
}

/**
 * list makes a list of items, at most MAX_LISTED, saying how many more there are.
 * @template T
 * @param {T[]} items
 * @param {(item: T) => (Node | string)[]} show
 */
function list(items, show) {
  const ul = node('ul', 'result-list');
  for (const item of items.slice(0, MAX_LISTED)) {
    const li = node('li');
    li.append(...show(item));
    ul.append(li);
  }
  if (items.length > MAX_LISTED) ul.append(node('li', 'hint', `and ${items.length - MAX_LISTED} more`));
  return ul;
}

/**
 * describeResult renders one tool's result: the observation of the tool named verb (a built-in
 * tool's name, or any other), or a refusal {refused, why}.
 * @param {string} verb
 * @param {any} r
 * @returns {HTMLElement}
 */
export function describeResult(verb, r) {
  if (!r || typeof r !== 'object') return node('p', 'result', String(r ?? ''));
  if (r.refused) return refusalNode(String(r.refused), String(r.why || ''));
  const box = node('div', 'result');
  /** @param {string} text */
  const say = (text) => box.append(node('p', '', text));
  const approved = r.approval === 'approved' ? ' (you approved it)' : '';
  switch (verb) {
    case 'list_files': {
      const entries = Array.isArray(r.entries) ? r.entries : [];
      say(entries.length === 0 ? `${r.dir ? `The folder ${r.dir}` : 'The workspace'} is empty.`
        : `${r.count ?? entries.length} ${entries.length === 1 ? 'entry' : 'entries'} in ${r.dir ? `the folder ${r.dir}` : 'the workspace'}${r.truncated ? ' (the first shown)' : ''}:`);
      if (entries.length) box.append(list(entries, (/** @type {any} */ e) => [e.dir ? `${e.name}/` : e.name, e.dir ? '' : node('span', 'hint', ` ${formatSize(e.size)}`)]));
      break;
    }
    case 'read_file':
      say(`${r.path}, ${formatSize(r.size)}${r.truncated ? ', the beginning of it' : ''}:`);
      if (r.encoding === 'base64') say('(binary content, not shown)');
      else box.append(node('pre', 'file-text', String(r.content).slice(0, MAX_SHOWN_CHARS) + (String(r.content).length > MAX_SHOWN_CHARS ? '\n…' : '')));
      break;
    case 'write_file':
      say(`Wrote ${formatSize(r.bytes)} to ${r.path}${r.created ? ' (a new file)' : ''}.${r.undoable ? ' Undo takes it back.' : ''}`);
      break;
    case 'edit_file':
      say(`Changed ${r.path} at line ${r.line}.${r.undoable ? ' Undo takes it back.' : ''}`);
      break;
    case 'delete_file':
      say(`Deleted ${r.path}${approved}.${r.undoable ? ' Undo brings it back.' : ''}`);
      break;
    case 'create_folder':
      say(r.created ? `Made the folder ${r.path}.${r.undoable ? ' Undo takes it back.' : ''}` : `The folder ${r.path} was there already.`);
      break;
    case 'move_file':
      say(`Moved the ${r.kind === 'folder' ? 'folder' : 'file'} ${r.path} to ${r.to}.${r.undoable ? ' Undo moves it back.' : ''}`);
      break;
    case 'undo_last_action':
      if (r.undone === 'mkdir') say(`Undid making the folder ${r.path}.`);
      else if (r.undone === 'move') say(`Moved ${r.to} back to ${r.path}.`);
      else say(`Undid the ${r.undone} of ${r.path}${r.removed ? ' (the file it made is gone again)' : ''}.`);
      break;
    case 'grep_files': {
      const matches = Array.isArray(r.matches) ? r.matches : [];
      say(matches.length === 0 ? `“${r.query}” occurs nowhere (${r.filesSearched} files searched).`
        : `“${r.query}” occurs ${matches.length} ${matches.length === 1 ? 'time' : 'times'}${r.truncated ? ' (the first shown)' : ''}:`);
      if (matches.length) box.append(list(matches, (/** @type {any} */ m) => [node('code', '', `${m.path}:${m.line}`), ` ${m.text}`]));
      break;
    }
    case 'list_mini_apps': {
      const apps = Array.isArray(r.apps) ? r.apps : [];
      say(apps.length === 0 ? 'There are no mini-apps yet.' : `${apps.length} mini-${apps.length === 1 ? 'app' : 'apps'}:`);
      if (apps.length) box.append(list(apps, (/** @type {any} */ a) => [a.title || a.id, node('span', 'hint', ` ${a.kind}${a.open ? ', open' : ''}`)]));
      break;
    }
    case 'launch_mini_app':
    case 'create_mini_app':
      say(`${verb === 'create_mini_app' ? 'Created and opened' : 'Opened'} ${r.title || r.id}. ${r.note || ''}`.trim());
      break;
    default: {
      // Any other tool: its plain fields as a short list.
      const plain = Object.entries(r).filter(([, v]) => v === null || typeof v !== 'object').slice(0, 8);
      if (plain.length === 0) say('Done.');
      else box.append(list(plain, ([k, v]) => [node('span', 'hint', `${k}: `), String(v)]));
    }
  }
  return box;
}
