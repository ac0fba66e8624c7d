// The assistant panel: the command box (typed turns, POST /api/turn), each turn's action and
// result, the calls a live model makes, the approval prompts with their deadline, the Undo
// button, and the "offline mode" label while no voice model is configured. It listens to the
// relay's event stream (GET /api/events), which reaches this page whoever holds the workspace,
// even a paired machine environment.
//
// window.voicebox.assistant.turn(text) and .undo() are what the page and the tests use.
'use strict';

(() => {
  const vb = window.voicebox;
  const $ = (id) => document.getElementById(id);
  const el = {
    form: $('command-form'), input: $('command'), turns: $('turns'), approvals: $('approvals'),
    undo: $('undo'), mode: $('assistant-mode'), help: $('command-help'),
  };
  if (!el.form) return;

  // MAX_TURNS bounds the turns the panel keeps on screen; older ones are dropped.
  const MAX_TURNS = 100;
  // Verbs whose success changes the workspace, so the file list is refreshed.
  const CHANGES = new Set(['write_file', 'edit_file', 'delete_file', 'undo_last_action', 'create_mini_app']);

  const node = (tag, cls, text) => {
    const n = document.createElement(tag);
    if (cls) n.className = cls;
    if (text !== undefined) n.textContent = text;
    return n;
  };

  async function post(path, body) {
    const resp = await fetch(path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    let data;
    try { data = await resp.json(); } catch (_) { data = { ok: false, refused: 'internal-error', why: `the relay answered ${resp.status}` }; }
    return data;
  }

  // ---- the record of turns and calls ----

  function entry(kind, said) {
    const li = node('li', 'turn');
    li.dataset.turn = kind;
    li.dataset.state = 'pending';
    const head = node('div', 'turn-head');
    head.append(node('span', 'badge', kind === 'model' ? 'assistant' : kind), node('span', 'said', said));
    li.append(head);
    el.turns.prepend(li);
    while (el.turns.children.length > MAX_TURNS) el.turns.lastElementChild.remove();
    return li;
  }

  function describe(result) {
    if (!result) return '';
    if (result.refused) return `${result.refused}: ${result.why}`;
    return JSON.stringify(result, null, 2);
  }

  // fill shows a turn's (or a call's) understanding, action and result.
  function fill(li, { understood, action, result, ok, help }) {
    li.dataset.state = ok ? 'ok' : 'refused';
    if (action && action.verb) li.dataset.verb = action.verb;
    if (understood) li.append(node('p', 'understood', understood));
    if (action) {
      const shown = { ...action };
      for (const key of ['content', 'html']) {
        if (typeof shown[key] === 'string' && shown[key].length > 200) shown[key] = shown[key].slice(0, 200) + `… (${shown[key].length} characters)`;
      }
      li.append(node('code', 'action', JSON.stringify(shown)));
    }
    if (result) li.append(node('pre', 'result', describe(result)));
    if (help) li.append(node('pre', 'help', help));
    if (ok && action && CHANGES.has(action.verb)) document.dispatchEvent(new CustomEvent('voicebox:files-changed'));
  }

  async function turn(text) {
    const li = entry('you', text);
    const t = await post('/api/turn', { transcript: text });
    fill(li, { ...t, result: t.result || (t.refused ? { refused: t.refused, why: t.why } : null) });
    return t;
  }

  async function undo() {
    const li = entry('you', 'Undo');
    const t = await post('/api/turn', { action: { verb: 'undo_last_action' } });
    fill(li, t);
    return t;
  }

  el.form.addEventListener('submit', (event) => {
    event.preventDefault();
    const text = el.input.value.trim();
    if (!text) return;
    el.input.value = '';
    turn(text).catch(vb.notify);
  });
  el.undo.addEventListener('click', () => undo().catch(vb.notify));
  el.help.addEventListener('click', () => turn('help').catch(vb.notify));

  // ---- approvals ----

  const waiting = new Map(); // id -> {li, timer}

  function ask(a) {
    if (waiting.has(a.id)) return;
    const li = node('li', 'approval');
    li.dataset.approvalId = a.id;
    li.dataset.tool = a.tool;
    const left = node('span', 'deadline');
    const tick = () => {
      const s = Math.max(0, Math.round((Date.parse(a.deadline) - Date.now()) / 1000));
      left.textContent = `${s} s left`;
    };
    tick();
    const yes = node('button', 'approve', 'Approve');
    const no = node('button', 'deny danger', 'Deny');
    for (const [b, approve] of [[yes, true], [no, false]]) {
      b.type = 'button';
      b.addEventListener('click', async () => {
        yes.disabled = no.disabled = true;
        const answer = await post(`/api/approvals/${encodeURIComponent(a.id)}`, { approve });
        if (!answer.ok) vb.notify(new Error(answer.why || 'the request is no longer waiting'));
        settle(a.id);
      });
    }
    li.append(node('span', 'summary', a.summary), left, yes, no);
    el.approvals.append(li);
    el.approvals.hidden = false;
    waiting.set(a.id, { li, timer: setInterval(tick, 1000) });
  }

  function settle(id) {
    const w = waiting.get(id);
    if (!w) return;
    clearInterval(w.timer);
    w.li.remove();
    waiting.delete(id);
    el.approvals.hidden = waiting.size === 0;
  }

  // ---- the event stream ----

  function showMode(mode) {
    const offline = mode !== 'live';
    el.mode.textContent = offline ? 'offline mode' : 'live';
    el.mode.dataset.mode = offline ? 'offline' : 'live';
    el.mode.title = offline
      ? 'No voice model is configured: type commands here; the built-in resolver understands them.'
      : 'A live voice model is configured.';
  }

  let stream = null;
  let retry = 0;

  // listen opens the stream. When it fails it is closed rather than left to retry by itself:
  // it opens again once the page's channel to the relay is back (or, while another tab or a
  // machine holds the workspace, after a pause).
  function listen() {
    clearTimeout(retry);
    if (stream) return;
    stream = new EventSource('/api/events');
    stream.addEventListener('hello', (e) => {
      const hello = JSON.parse(e.data);
      showMode(hello.mode);
      const live = new Set((hello.approvals || []).map((a) => a.id));
      for (const id of [...waiting.keys()]) if (!live.has(id)) settle(id);
      for (const a of hello.approvals || []) ask(a);
    });
    stream.addEventListener('approval', (e) => ask(JSON.parse(e.data)));
    stream.addEventListener('approval-settled', (e) => settle(JSON.parse(e.data).id));
    stream.addEventListener('call', (e) => {
      const c = JSON.parse(e.data);
      if (c.source !== 'model') return; // typed turns are shown by the turn itself
      fill(entry('model', c.tool), { action: c.action, result: c.result, ok: c.ok });
    });
    stream.onerror = () => {
      stream.close();
      stream = null;
      const channel = document.querySelector('#channel');
      const state = channel && channel.dataset.state;
      if (state === 'replaced' || state === 'refused' || state === 'idle') retry = setTimeout(listen, 15000);
    };
  }

  document.addEventListener('voicebox:channel', (e) => {
    if (e.detail && e.detail.state === 'connected') listen();
  });
  showMode('offline');
  listen();

  vb.assistant = Object.freeze({ turn, undo, pending: () => [...waiting.keys()] });
})();
