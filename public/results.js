// @ts-check
// Results for people: what a tool observed, said in words and lists instead of JSON (the JSON
// stays behind "Details" where the panels show it). A refusal is its sentence, with its rule id
// small beside it.
import { node } from './dom.js';

/** MAX_LISTED bounds the items a result lists; the rest are counted. */
const MAX_LISTED = 50;
/** MAX_SHOWN_CHARS bounds the text of a file a result shows. */
const MAX_SHOWN_CHARS = 2000;
/** MAX_DIFF_LINES bounds the lines of a diff a result shows. */
const MAX_DIFF_LINES = 400;

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
 * firstSentence is the first sentence of a description (a tool's, an extension's), for a list.
 * @param {unknown} text
 */
const firstSentence = (text) => {
  const t = String(text || '');
  const end = t.search(/[.!?](\s|$)/);
  return end < 0 ? t : t.slice(0, end + 1);
};

/**
 * diffNode shows a unified diff as lines with both line numbers, additions and removals marked
 * (and coloured by the stylesheet), the hunk headers as separators, at most MAX_DIFF_LINES lines.
 * @param {string} diff
 */
export function diffNode(diff) {
  const table = node('table', 'diff');
  table.setAttribute('aria-label', 'Changes');
  const body = node('tbody');
  let oldNo = 0;
  let newNo = 0;
  const lines = diff.split('\n');
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  let shown = 0;
  for (const line of lines) {
    if (line.startsWith('--- ') || line.startsWith('+++ ')) continue;
    if (shown++ >= MAX_DIFF_LINES) {
      const tr = node('tr', 'diff-more');
      const td = node('td', '', `and ${lines.length - MAX_DIFF_LINES} more lines`);
      td.colSpan = 3;
      tr.append(td);
      body.append(tr);
      break;
    }
    const hunk = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
    if (hunk) {
      oldNo = Number(hunk[1]);
      newNo = Number(hunk[2]);
      const tr = node('tr', 'diff-hunk');
      const td = node('td', '', line);
      td.colSpan = 3;
      tr.append(td);
      body.append(tr);
      continue;
    }
    if (line.startsWith('\\')) { // "\ No newline at end of file"
      const tr = node('tr', 'diff-hunk');
      const td = node('td', '', line);
      td.colSpan = 3;
      tr.append(td);
      body.append(tr);
      continue;
    }
    const kind = line[0] === '+' ? 'add' : line[0] === '-' ? 'del' : 'same';
    const tr = node('tr', 'diff-' + kind);
    tr.append(node('td', 'diff-no', kind === 'add' ? '' : String(oldNo)), node('td', 'diff-no', kind === 'del' ? '' : String(newNo)));
    const text = node('td', 'diff-text', line);
    text.setAttribute('aria-label', (kind === 'add' ? 'added: ' : kind === 'del' ? 'removed: ' : '') + line.slice(1));
    tr.append(text);
    body.append(tr);
    if (kind !== 'add') oldNo++;
    if (kind !== 'del') newNo++;
  }
  table.append(body);
  return table;
}

/**
 * treeNode shows a directory_tree's nodes as nested lists.
 * @param {any[]} nodes
 * @param {number} depth
 */
function treeList(nodes, depth) {
  const ul = node('ul', 'result-list');
  for (const n of nodes.slice(0, MAX_LISTED)) {
    const li = node('li', '', n.dir ? `${n.name}/` : n.name);
    if (!n.dir) li.append(node('span', 'hint', ` ${formatSize(n.size || 0)}`));
    if (n.more) li.append(node('span', 'hint', ' (not read: deeper than asked)'));
    if (Array.isArray(n.children) && n.children.length && depth < 8) li.append(treeList(n.children, depth + 1));
    ul.append(li);
  }
  if (nodes.length > MAX_LISTED) ul.append(node('li', 'hint', `and ${nodes.length - MAX_LISTED} more`));
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
      if (r.dryRun) say(`Nothing written: ${r.edits} ${r.edits === 1 ? 'change' : 'changes'} to ${r.path} would begin at line ${r.line}:`);
      else say(`Changed ${r.path} at line ${r.line}.${r.undoable ? ' Undo takes it back.' : ''}`);
      if (r.diff) box.append(diffNode(String(r.diff)));
      break;
    case 'diff_file':
      if (!r.changed) say(r.existed ? `No change: ${r.path} holds this text already.` : `No change: ${r.path} is not there, and the text is empty.`);
      else say(`${r.existed ? `What writing ${r.path} would change` : `${r.path} is not there yet; writing would make it`}${r.truncated ? ' (the beginning of the diff)' : ''}. Nothing is written:`);
      if (r.changed && r.diff) box.append(diffNode(String(r.diff)));
      break;
    case 'file_info':
      say(r.kind === 'folder' ? `${r.path} is a folder${r.modTime ? `, changed ${new Date(r.modTime).toLocaleString()}` : ''}.`
        : `${r.path} is a file of ${formatSize(r.size)}${r.modTime ? `, last changed ${new Date(r.modTime).toLocaleString()}` : ''}.`);
      break;
    case 'directory_tree': {
      const tree = Array.isArray(r.tree) ? r.tree : [];
      say(tree.length === 0 ? `${r.dir ? `The folder ${r.dir}` : 'The workspace'} is empty.`
        : `${r.entries} ${r.entries === 1 ? 'entry' : 'entries'} in ${r.dir ? `the folder ${r.dir}` : 'the workspace'}, ${r.depth} ${r.depth === 1 ? 'level' : 'levels'} deep${r.truncated ? ' (the first shown)' : ''}:`);
      if (tree.length) box.append(treeList(tree, 0));
      break;
    }
    case 'read_files': {
      const files = Array.isArray(r.files) ? r.files : [];
      say(`${files.length} ${files.length === 1 ? 'file' : 'files'}:`);
      for (const f of files.slice(0, MAX_LISTED)) {
        if (f.refused) { box.append(refusalNode(String(f.refused), `${f.path}: ${f.why || ''}`, '')); continue; }
        say(`${f.path}, ${formatSize(f.size)}${f.truncated ? ', the beginning of it' : ''}:`);
        if (f.encoding === 'base64') say('(binary content, not shown)');
        else box.append(node('pre', 'file-text', String(f.content).slice(0, MAX_SHOWN_CHARS) + (String(f.content).length > MAX_SHOWN_CHARS ? '\n…' : '')));
      }
      break;
    }
    case 'read_media_file':
      say(`${r.path}: ${r.kind === 'audio' ? 'audio' : 'an image'} (${r.mimeType}, ${formatSize(r.size)}), read whole for the model.`);
      break;
    case 'list_tools':
    case 'search_tools': {
      const tools = Array.isArray(r.tools) ? r.tools : [];
      const c = r.counts || {};
      const by = [c.native ? `${c.native} built in` : '', c.extension ? `${c.extension} from extensions` : '', c['mini-app'] ? `${c['mini-app']} from mini-apps` : ''].filter(Boolean).join(', ');
      if (verb === 'search_tools') say(tools.length === 0 ? `No tool matches “${r.query}”.` : `${tools.length} ${tools.length === 1 ? 'tool matches' : 'tools match'} “${r.query}”:`);
      else say(`${tools.length} ${tools.length === 1 ? 'tool' : 'tools'}${by ? ` (${by})` : ''}:`);
      if (tools.length) box.append(list(tools, (/** @type {any} */ t) => [node('code', '', t.name), node('span', 'hint', ` ${t.kind !== 'native' ? `${t.kind}: ` : ''}${firstSentence(t.description)}`)]));
      break;
    }
    case 'list_extensions': {
      /** @param {string} title @param {any[]} items @param {(e: any) => (Node | string)[]} show */
      const section = (title, items, show) => {
        say(`${title}: ${items.length === 0 ? 'none' : items.length}.`);
        if (items.length) box.append(list(items, show));
      };
      const tools = (/** @type {any} */ e) => (Array.isArray(e.tools) && e.tools.length ? ` (${e.tools.map((/** @type {any} */ t) => t.name).join(', ')})` : '');
      section('Admitted', Array.isArray(r.admitted) ? r.admitted : [], (e) => [node('strong', '', e.name || e.id), node('span', 'hint', tools(e))]);
      section('Waiting for a decision', Array.isArray(r.pending) ? r.pending : [], (e) => [node('strong', '', e.name || e.id), node('span', 'hint', e.ok ? ' (admit it in Extensions)' : ` (refused ${e.refused}: ${e.why})`)]);
      section('In the catalogue', Array.isArray(r.catalogue) ? r.catalogue : [], (e) => [node('strong', '', e.name || e.id), node('span', 'hint', e.admitted ? ' (admitted)' : e.ok ? ` ${firstSentence(e.description)}` : ` (refused ${e.refused})`)]);
      const present = Array.isArray(r.presentNotAdmitted) ? r.presentNotAdmitted : [];
      if (present.length) section('In the directory, not running', present, (p) => [node('strong', '', p.id), node('span', 'hint', ` ${p.refused}: ${p.why}`)]);
      break;
    }
    case 'propose_extension':
      say(`Proposed the extension ${r.staged}. ${r.note || ''}`.trim());
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
      else if (r.undone === 'rmdir') say(`Made the folder ${r.path} again.`);
      else say(`Undid the ${r.undone} of ${r.path}${r.removed ? ' (the file it made is gone again)' : ''}.`);
      break;
    case 'redo_last_action':
      if (r.redone === 'move') say(`Moved ${r.path} to ${r.to} again.`);
      else if (r.redone === 'mkdir') say(`Made the folder ${r.path} again.`);
      else if (r.redone === 'rmdir') say(`Removed the folder ${r.path} again.`);
      else say(`Redid the ${r.redone} of ${r.path}.`);
      break;
    case 'grep_files': {
      const matches = Array.isArray(r.matches) ? r.matches : [];
      say(matches.length === 0 ? `“${r.query}” occurs nowhere (${r.filesSearched} ${r.filesSearched === 1 ? 'file' : 'files'} searched).`
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
      // Any other tool: its fields as a short list, a list or an object said by its size. The
      // built-in tools each have their own form above (data-form tells the tests which).
      box.dataset.form = 'fields';
      const fields = Object.entries(r).slice(0, 12);
      /** @param {unknown} v */
      const words = (v) => (Array.isArray(v) ? `${v.length} ${v.length === 1 ? 'item' : 'items'}`
        : v && typeof v === 'object' ? Object.entries(v).slice(0, 6).map(([k, x]) => `${k} ${x !== null && typeof x === 'object' ? '…' : String(x)}`).join(', ')
          : String(v));
      if (fields.length === 0) say('Done.');
      else box.append(list(fields, ([k, v]) => [node('span', 'hint', `${k}: `), words(v)]));
    }
  }
  return box;
}
