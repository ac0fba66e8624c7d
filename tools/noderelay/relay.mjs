// relay.mjs: a minimal Node relay doing the job of the Go relay's /live for the capacity
// benchmark (relay/voice, BenchmarkLiveRelayCapacity), with the pinned ws package.
//
// For each page socket on /live it dials the vendor (OpenAI's realtime protocol) with the key in
// the Authorization header, sends the benchmark's session.update, and tells the page
// {"type":"state","state":"ready"} once the vendor answers session.updated. Each binary frame
// from the page (PCM16) then goes to the vendor as {"type":"input_audio_buffer.append",
// "audio":"<base64>"}; each audio delta from the vendor goes to the page as a binary frame. A
// close on either side closes the other.
//
// What it does not do, unlike /live: no origin check, no session gate, no bound on sockets, no
// frame validation beyond ws's size limit, no refusals, no tool calls, no transcripts, no queue
// for the page (ws buffers without bound).
//
// Usage: node relay.mjs MODULES_DIR, where MODULES_DIR holds node_modules with ws (build.sh
// installs it into .cache/noderelay). The environment gives VENDOR_URL (the OpenAI endpoint,
// ?model=... included), VENDOR_KEY and SESSION_UPDATE (the setup frame, as the Go relay sends it).
// It listens on 127.0.0.1 on a free port, prints "LISTEN <port>", and ends when its standard
// input closes.
import http from "node:http";
import path from "node:path";
import { createRequire } from "node:module";

const require = createRequire(path.join(path.resolve(process.argv[2] ?? "."), "package.json"));
const { WebSocket, WebSocketServer } = require("ws");

/** MAX_PAGE_FRAME bounds one frame from the page, as the Go relay's read limit does. */
const MAX_PAGE_FRAME = (16 << 10) + 1024;
/** MAX_VENDOR_FRAME bounds one frame from the vendor, as the Go relay's does. */
const MAX_VENDOR_FRAME = 4 << 20;

const vendorURL = process.env.VENDOR_URL;
const vendorKey = process.env.VENDOR_KEY;
const setup = process.env.SESSION_UPDATE;
if (!vendorURL || !vendorKey || !setup) {
  console.error("relay.mjs: VENDOR_URL, VENDOR_KEY and SESSION_UPDATE are required");
  process.exit(2);
}

const HEAD = '{"type":"input_audio_buffer.append","audio":"';
const TAIL = '"}';

const server = http.createServer((_, res) => {
  res.writeHead(404).end();
});
const wss = new WebSocketServer({ server, path: "/live", perMessageDeflate: false, maxPayload: MAX_PAGE_FRAME });

wss.on("connection", (page) => {
  let ready = false;
  const vendor = new WebSocket(vendorURL, {
    headers: { Authorization: "Bearer " + vendorKey },
    perMessageDeflate: false,
    maxPayload: MAX_VENDOR_FRAME,
  });
  vendor.on("open", () => vendor.send(setup));
  vendor.on("message", (data, isBinary) => {
    if (isBinary) return;
    let ev;
    try {
      ev = JSON.parse(data.toString());
    } catch {
      return;
    }
    if (ev.type === "session.updated" && !ready) {
      ready = true;
      page.send('{"type":"state","state":"ready"}');
    } else if ((ev.type === "response.output_audio.delta" || ev.type === "response.audio.delta") && typeof ev.delta === "string") {
      page.send(Buffer.from(ev.delta, "base64"), { binary: true });
    }
  });
  vendor.on("close", () => page.close(1000, "session ended"));
  vendor.on("error", () => page.terminate());
  page.on("message", (data, isBinary) => {
    if (!isBinary || !ready || data.length === 0 || data.length % 2 !== 0) return;
    vendor.send(HEAD + data.toString("base64") + TAIL);
  });
  page.on("close", () => vendor.terminate());
  page.on("error", () => vendor.terminate());
});

server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`LISTEN ${server.address().port}\n`);
});
process.stdin.resume();
process.stdin.on("end", () => process.exit(0));
process.stdin.on("close", () => process.exit(0));
