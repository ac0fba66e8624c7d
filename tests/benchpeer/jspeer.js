// A plain JavaScript executor on the page's main thread, for comparison with the page's Go in
// its worker: it connects to /channel as the page does and answers read-file calls from OPFS
// through a cached file handle. It knows nothing of the rules; it exists only to be measured.
'use strict';
window.peerReady = (async () => {
  const top = await navigator.storage.getDirectory();
  const dir = await top.getDirectoryHandle('workspace', { create: true });
  const handles = new Map();
  const decoder = new TextDecoder();
  const ws = new WebSocket(`ws://${location.host}/channel`);
  await new Promise((resolve, reject) => { ws.onopen = resolve; ws.onclose = reject; });
  ws.send(JSON.stringify({ type: 'root', kind: 'opfs', name: 'JavaScript peer' }));
  ws.send(JSON.stringify({ type: 'take' })); // the Go page holds the slot: take it, as "Use this tab" does
  ws.onmessage = async (event) => {
    const call = JSON.parse(event.data);
    if (!('v' in call)) return;
    let fh = handles.get(call.args.path);
    if (!fh) {
      fh = await dir.getFileHandle(call.args.path);
      handles.set(call.args.path, fh);
    }
    const bytes = new Uint8Array(await (await fh.getFile()).arrayBuffer());
    ws.send(JSON.stringify({
      v: 1, callId: call.callId, ok: true,
      observed: { path: call.args.path, size: bytes.length, bytes: bytes.length, truncated: false, encoding: 'utf-8', content: decoder.decode(bytes) },
    }));
  };
  return true;
})();
