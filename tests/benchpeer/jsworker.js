// A plain JavaScript executor in a dedicated worker, for comparison with the page's Go in its
// worker: it connects to /channel and answers read-file calls from OPFS through a sync access
// handle kept open (what the Go root's pool does). It knows nothing of the rules; it exists only
// to be measured, as the floor under the Go worker (the same socket, thread and storage). The Go
// worker holds sync handles on the workspace's files, so this peer reads a copy of each file it is
// asked for, made in a folder of its own on first use.
'use strict';
(async () => {
  const top = await navigator.storage.getDirectory();
  const dir = await top.getDirectoryHandle('workspace', { create: true });
  const own = await top.getDirectoryHandle('jsworker-peer', { create: true });
  const handles = new Map();
  const decoder = new TextDecoder();
  const ws = new WebSocket(`ws://${location.host}/channel`);
  await new Promise((resolve, reject) => { ws.onopen = resolve; ws.onclose = reject; });
  ws.send(JSON.stringify({ type: 'root', kind: 'opfs', name: 'JavaScript worker peer' }));
  ws.send(JSON.stringify({ type: 'take' })); // the Go page holds the slot: take it, as "Use this tab" does
  ws.onmessage = async (event) => {
    const call = JSON.parse(event.data);
    if (!('v' in call)) return;
    let h = handles.get(call.args.path);
    if (!h) {
      const src = await (await (await dir.getFileHandle(call.args.path)).getFile()).arrayBuffer();
      const fh = await own.getFileHandle(call.args.path, { create: true });
      h = await fh.createSyncAccessHandle();
      h.truncate(0);
      h.write(new Uint8Array(src), { at: 0 });
      handles.set(call.args.path, h);
    }
    const bytes = new Uint8Array(h.getSize());
    h.read(bytes, { at: 0 });
    ws.send(JSON.stringify({
      v: 1, callId: call.callId, ok: true,
      observed: { path: call.args.path, size: bytes.length, bytes: bytes.length, truncated: false, encoding: 'utf-8', content: decoder.decode(bytes) },
    }));
  };
  postMessage('ready');
})().catch((err) => postMessage(String(err)));
