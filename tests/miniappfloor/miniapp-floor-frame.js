// @ts-nocheck
// floorFrame loads the floor's app (see miniapp-floor.js) in a sandboxed srcdoc frame appended to
// this document, and hands it appPort (the worker's end is elsewhere) once it is ready for it:
// html with the stand-in webMcp below, or with sdk, the product's SDK, put first as the bridge puts
// it and handed two ports as the bridge hands them (one the bridge's, read here only for the app's
// ready, one the worker's). ready is called once the app can take calls. With observed, the
// stand-in also watches the document as the SDK watches it for declarative forms (a
// MutationObserver of the whole tree), its callback doing nothing.
'use strict';
const floorShim = '<script>window.webMcp = (() => { const tools = new Map(); window.addEventListener("message", (e) => {' +
  ' const port = e.ports && e.ports[0]; if (!port) return;' +
  ' port.onmessage = (m) => { const c = m.data; const t = tools.get(c.name);' +
  ' port.postMessage({ type: "tool_result", callId: c.callId, ok: true, result: JSON.stringify(t.execute(c.args)) }); };' +
  ' parent.postMessage("floor-app-ready", "*"); });' +
  ' return { registerTool: (t) => tools.set(t.name, t), ready: () => parent.postMessage("floor-app-loaded", "*") }; })();<\/script>';

const floorObserver = '<script>new MutationObserver(() => {}).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ["toolname", "tooldescription"] });<\/script>';

function floorFrame(html, sdk, style, appPort, ready, observed) {
  const frame = document.createElement('iframe');
  frame.sandbox = 'allow-scripts';
  frame.style.cssText = style || 'width: 480px; height: 360px; border: 0';
  frame.srcdoc = html.replace('<head>', '<head>' + (sdk ? '<script>' + sdk + '\n<\/script>' : (observed ? floorObserver : '') + floorShim));
  let handed = false;
  window.addEventListener('message', (e) => {
    if (e.source !== frame.contentWindow) return;
    if (e.data === 'floor-app-ready') {
      ready();
      return;
    }
    if (handed || !(e.data === 'floor-app-loaded' || (sdk && e.data && e.data.type === 'mini_app_ready'))) return;
    handed = true;
    if (!sdk) {
      frame.contentWindow.postMessage('port', '*', [appPort]);
      return;
    }
    const bridge = new MessageChannel();
    bridge.port1.onmessage = (m) => { if (m.data && m.data.type === 'ready') ready(); };
    frame.contentWindow.postMessage({ type: 'mini_app_port' }, '*', [bridge.port2, appPort]);
  });
  document.body.append(frame);
}
