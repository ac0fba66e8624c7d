// @ts-check
// The Worker the page's engine runs WebAssembly modules in (the relay's WASM shelf and wasm tools,
// when they run in the page): one call at a time, and the engine terminates this Worker when a
// call passes its deadline, then starts a new one. The rules (the two buffer ABIs, the order of
// the checks, the bounds) are Go's, in internal/shared/wasmabi; this file only does what Go cannot do here:
// compile the module, link it with no imports at all, write the inputs, call, read back.
//
// In: {id, module: Uint8Array, export, inputs: Uint8Array[], offsets: number[], output: {offset,
// maxBytes}, refuse: {rule, why} | null}. Out: {id, returned, hasResult, out: Uint8Array}, or
// {id, refused, why}.
'use strict';

/** @param {unknown} err */
function message(err) {
  return String(err instanceof Error ? err.message : err).slice(0, 200);
}

self.onmessage = (event) => {
  /** @type {WasmRunnerCall} */
  const m = event.data;
  /** @param {object} a @param {Transferable[]} [transfer] */
  const answer = (a, transfer) => self.postMessage(Object.assign({ id: m.id }, a), transfer || []);
  let mod;
  try {
    mod = new WebAssembly.Module(m.module);
  } catch (err) {
    return answer({ refused: 'wasm-invalid', why: 'the module does not compile: ' + message(err) });
  }
  // No imports at all: each module a module imports from is an empty object, so whatever it asks
  // for fails to link (WebAssembly.LinkError), the platform's own wall.
  const imports = WebAssembly.Module.imports(mod);
  if (imports.length > 0) {
    /** @type {Record<string, Record<string, never>>} */
    const none = {};
    for (const i of imports) none[i.module] = {};
    try {
      new WebAssembly.Instance(mod, none);
    } catch (err) {
      const kind = err instanceof WebAssembly.LinkError ? 'LinkError' : 'link failure';
      return answer({ refused: 'import-undeclared', why: 'the module asks for ' + imports.map((i) => i.module + '.' + i.name).join(', ') + ' and is given nothing (' + kind + ': ' + message(err) + ')' });
    }
    return answer({ refused: 'import-undeclared', why: 'the module asks for imports, and modules here are given none' });
  }
  if (m.refuse) {
    return answer({ refused: m.refuse.rule, why: m.refuse.why });
  }
  try {
    const instance = new WebAssembly.Instance(mod, {});
    const memory = instance.exports.memory;
    const fn = instance.exports[m.export];
    if (!(memory instanceof WebAssembly.Memory) || typeof fn !== 'function') {
      return answer({ refused: 'unsupported-abi', why: 'the module exports no memory "memory" or no function ' + m.export });
    }
    const view = new Uint8Array(memory.buffer);
    m.inputs.forEach((input, i) => view.set(input, m.offsets[i]));
    const returned = fn(...m.inputs.map((input) => input.length));
    const buffer = memory.buffer;
    const start = Math.min(m.output.offset, buffer.byteLength);
    const end = Math.min(m.output.offset + m.output.maxBytes, buffer.byteLength);
    const out = new Uint8Array(buffer.slice(start, end));
    answer({ returned: typeof returned === 'number' ? returned : 0, hasResult: returned !== undefined, out }, [out.buffer]);
  } catch (err) {
    answer({ refused: 'wasm-trapped', why: 'the module trapped: ' + message(err) });
  }
};
