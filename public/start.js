// @ts-check
// The first screen's "Start here": what to do first (where the files are, a first command, how
// to talk), shown until the person hides it. Its voice step follows the relay's settings.
import { byId } from './dom.js';

/** START_HIDDEN_KEY is the localStorage key that remembers the steps were hidden. */
const START_HIDDEN_KEY = 'voicebox.start-hidden';

/** startFirstSteps shows the first steps unless the person hid them. */
export function startFirstSteps() {
  const panel = byId('start');
  panel.hidden = localStorage.getItem(START_HIDDEN_KEY) === '1';
  byId('start-dismiss').addEventListener('click', () => {
    localStorage.setItem(START_HIDDEN_KEY, '1');
    panel.hidden = true;
    byId('command').focus();
  });
  return Object.freeze({
    /**
     * voice says what the voice step is now (live.js knows whether a key is configured).
     * @param {string} text
     */
    voice: (text) => { byId('start-voice').textContent = text; },
  });
}
