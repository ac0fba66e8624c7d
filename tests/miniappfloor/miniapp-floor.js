// @ts-nocheck
// The floor of a mini-app tool call from the page's API: the product's four messages on the same
// threads and processes, and nothing else. The page posts a call's JSON text to a dedicated worker
// (miniapp-floor-worker.js, plain JavaScript: no Go, no validation, no registry); the worker posts
// {type: 'call_tool', callId, name, args} on a MessagePort whose other end is held by the app's
// document, a sandboxed srcdoc frame (its own renderer process, as the product's app document
// is); the app runs the tool and posts {type: 'tool_result', callId, ok, result} back on the port;
// the worker posts the answer's text to the page. The app is the product's scoreboard sample
// itself, its webMcp a three-line stand-in for the SDK (no checks, no events, no observers), or
// the product's SDK itself (floor.start's sdk): the SDK's share of a call, without the bridge.
'use strict';
(() => {
  const worker = new Worker('/miniapp-floor-worker.js');
  const pending = new Map();
  let next = 1;
  worker.onmessage = (event) => {
    const answer = JSON.parse(event.data);
    const settle = pending.get(answer.id);
    pending.delete(answer.id);
    if (settle) settle(answer);
  };
  const shim = '<script>window.webMcp = (() => { const tools = new Map(); window.addEventListener("message", (e) => {' +
    ' const port = e.ports && e.ports[0]; if (!port) return;' +
    ' port.onmessage = (m) => { const c = m.data; const t = tools.get(c.name);' +
    ' port.postMessage({ type: "tool_result", callId: c.callId, ok: true, result: JSON.stringify(t.execute(c.args)) }); };' +
    ' parent.postMessage("floor-app-ready", "*"); });' +
    ' return { registerTool: (t) => tools.set(t.name, t), ready: () => parent.postMessage("floor-app-loaded", "*") }; })();<\/script>';
  window.floor = {
    ready: false,
    // start loads html (the app) in the sandboxed frame, with the stand-in above for its webMcp,
    // or with sdk, the product's SDK (public/mini-app-sdk.js) put first as the bridge puts it, and
    // handed its two ports as the bridge hands them: one the bridge's (here read by no one), one
    // the worker's.
    start(html, sdk) {
      const frame = document.createElement('iframe');
      frame.sandbox = 'allow-scripts';
      frame.style.cssText = 'width: 480px; height: 360px; border: 0';
      const script = sdk ? '<script>' + sdk + '\n<\/script>' : shim;
      frame.srcdoc = html.replace('<head>', '<head>' + script);
      const handOver = () => {
        const channel = new MessageChannel();
        worker.postMessage({ port: channel.port1 }, [channel.port1]);
        if (!sdk) {
          frame.contentWindow.postMessage('port', '*', [channel.port2]);
          return;
        }
        const bridge = new MessageChannel();
        bridge.port1.onmessage = (m) => { if (m.data && m.data.type === 'ready') window.floor.ready = true; };
        frame.contentWindow.postMessage({ type: 'mini_app_port' }, '*', [bridge.port2, channel.port2]);
      };
      window.addEventListener('message', (e) => {
        if (e.source !== frame.contentWindow) return;
        if (e.data === 'floor-app-loaded' || (sdk && e.data && e.data.type === 'mini_app_ready' && !window.floor.handed)) {
          window.floor.handed = true;
          handOver();
        } else if (e.data === 'floor-app-ready') {
          window.floor.ready = true;
        }
      });
      document.body.append(frame);
    },
    call(tool, args) {
      const id = next++;
      return new Promise((resolve) => {
        pending.set(id, resolve);
        worker.postMessage(JSON.stringify({ type: 'call', id, method: 'miniapps.call', params: { appId: 'app_scoreboard', tool, args } }));
      });
    },
  };
})();
