// The globals of the two scripts that run outside the page: worker.js (a dedicated worker, with
// Go's wasm_exec.js) and audio-worklet.js and audio-player.js (AudioWorkletGlobalScopes, which TypeScript's
// libraries do not describe).

// worker.js: what wasm_exec.js defines, and the inbox Go drains when it starts.
declare class Go {
  importObject: WebAssembly.Imports;
  run(instance: WebAssembly.Instance): Promise<void>;
}
declare var voiceboxInbox: unknown[];
// engine-io.js's engineIO(the instance's memory), set before Go starts (internal/jsutil io_js.go calls it).
declare var voiceboxIO: unknown;
// app-port.js's openAppPort, set before Go starts (internal/engine ports_js.go calls it).
declare var voiceboxOpenAppPort: (port: MessagePort, receive: (text: string) => void, over: (why: string, messages: number, bytes: number) => void) => { post: (text: string, callId: string, owe: boolean) => void; refused: () => string; close: () => void };

// audio-worklet.js and audio-player.js
declare var sampleRate: number;
declare var currentTime: number;
declare class AudioWorkletProcessor {
  constructor(options?: { processorOptions?: any });
  readonly port: MessagePort;
}
declare function registerProcessor(name: string, processor: new (options: any) => AudioWorkletProcessor): void;

// wasm-runner.js: the call the engine posts (see internal/engine's wasm runner).
interface WasmRunnerCall {
  id: number;
  module: Uint8Array<ArrayBuffer>;
  export: string;
  inputs: Uint8Array[];
  offsets: number[];
  output: { offset: number; maxBytes: number };
  refuse: { rule: string; why: string } | null;
}
