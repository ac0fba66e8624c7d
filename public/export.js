// @ts-check
// The whole workspace as one download: Files' "Download all" asks the worker for a zip of every
// file (files.export.*), chunk by chunk, and writes each chunk out before asking for the next:
// into the file the person picks where the browser can write one (showSaveFilePicker), else into
// a Blob the browser keeps (on disk past its memory limit) and downloads.
import { byId } from './dom.js';
import { listen } from './events.js';

/**
 * startExport runs Files' "Download all".
 * @param {import('./dialogs.js').PageServices} services
 */
export function startExport({ must, notify }) {
  const button = /** @type {HTMLButtonElement} */ (byId('download-all'));
  listen('root', () => { button.disabled = false; });

  /** The archive's name: the page's address and the day, e.g. voicebox-127.0.0.1-8787-2026-12-05.zip. */
  const archiveName = () => `voicebox-${location.host.replace(/[^A-Za-z0-9.-]+/g, '-')}-${new Date().toISOString().slice(0, 10)}.zip`;

  /**
   * chunks runs one download through the worker, handing each chunk to write.
   * @param {(bytes: Uint8Array<ArrayBuffer>) => Promise<void> | void} write
   * @returns {Promise<{files: number, bytes: number}>}
   */
  async function chunks(write) {
    const begun = await must('files.export.begin', undefined);
    for (;;) {
      const next = await must('files.export.next', { exportId: begun.exportId });
      await write(next.bytes);
      if (next.done) return { files: begun.files, bytes: begun.bytes };
    }
  }

  /** toBlob makes the whole workspace's zip as a Blob (the fallback, and the tests' handle). */
  async function toBlob() {
    /** @type {Uint8Array<ArrayBuffer>[]} */
    const parts = [];
    const info = await chunks((b) => { parts.push(b); });
    return { blob: new Blob(parts, { type: 'application/zip' }), ...info };
  }

  async function download() {
    const name = archiveName();
    const picker = /** @type {any} */ (window).showSaveFilePicker;
    if (typeof picker === 'function') {
      let writable = null;
      try {
        const handle = await picker({ suggestedName: name, types: [{ description: 'Zip archive', accept: { 'application/zip': ['.zip'] } }] });
        writable = await handle.createWritable();
      } catch (err) {
        if (err instanceof DOMException && err.name === 'AbortError') return; // the person cancelled
        writable = null; // the browser would not: the Blob below
      }
      if (writable) {
        const w = writable;
        try {
          const info = await chunks((b) => w.write(b));
          await w.close();
          notify(`Saved ${info.files} ${info.files === 1 ? 'file' : 'files'} as ${name}.`);
        } catch (err) {
          await w.abort().catch(() => {});
          throw err;
        }
        return;
      }
    }
    const { blob, files } = await toBlob();
    const url = URL.createObjectURL(blob);
    const a = document.createElement('a');
    a.href = url;
    a.download = name;
    a.click();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
    notify(`Downloading ${files} ${files === 1 ? 'file' : 'files'} as ${name}.`);
  }

  button.addEventListener('click', () => {
    button.disabled = true;
    download().catch(notify).finally(() => { button.disabled = false; });
  });
  return Object.freeze({ toBlob });
}
