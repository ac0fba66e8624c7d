// @ts-check
// The message budget every app is held to, one implementation for every realm that receives an
// app's messages: the mini-app bridge (what the app posts over its port or to the bridge's
// window; the app cannot reach into the bridge's realm), the page (what a frame inside a
// mini-app posts to it directly, and everything an external app's frame posts). The realm that
// receives a message has already paid for it: the browser copies it in and deserialises it there
// before any listener can look, so the budget is charged where the bytes land, and bounds what
// an app can make that realm pay to the budget and one message more.
//
// An app may send MESSAGE_BUDGET messages and MESSAGE_BYTE_BUDGET bytes within
// MESSAGE_WINDOW_MS (internal/shared/miniapp, generated into rules.js). An answer it owes (one per call
// it was sent) is free of both: how many there are is the host's doing, and a result has its own
// bound where it is read (the bridge's MAX_OUTPUT_BYTES). A message's bytes are estimated
// without serialising it again (messageBytes).
import { MAX_SIZED_VALUES, MESSAGE_BUDGET, MESSAGE_BYTE_BUDGET, MESSAGE_WINDOW_MS } from './rules.js';

/** OVER is what a message too large to size is charged: more than the whole byte budget. */
const OVER = MESSAGE_BYTE_BUDGET + 1;

/**
 * messageBytes estimates the bytes of data, a message as the receiving realm holds it: a string
 * by its length, binary data by its byteLength (a Blob by its size, an ImageBitmap by its
 * pixels), anything else by a walk of at most MAX_SIZED_VALUES values, keys and strings by their
 * length and every other value 8 bytes. A message with more values is charged more than the
 * whole byte budget: no app's envelope has thousands of values.
 * @param {unknown} data
 * @returns {number}
 */
export function messageBytes(data) {
  if (typeof data === 'string') return data.length;
  let bytes = 0;
  let values = 1; // values taken into the walk so far, data the first
  /** @type {unknown[]} */
  const todo = [data];
  while (todo.length > 0) {
    const v = todo.pop();
    if (typeof v === 'string') {
      bytes += v.length;
      continue;
    }
    bytes += 8;
    if (v === null || typeof v !== 'object') continue;
    if (v instanceof ArrayBuffer || ArrayBuffer.isView(v)) bytes += v.byteLength;
    else if (typeof Blob !== 'undefined' && v instanceof Blob) bytes += v.size;
    else if (typeof ImageBitmap !== 'undefined' && v instanceof ImageBitmap) bytes += 4 * v.width * v.height;
    else if (Array.isArray(v) || v instanceof Map || v instanceof Set) {
      const n = Array.isArray(v) ? v.length : v.size;
      if ((values += n) > MAX_SIZED_VALUES) return OVER;
      for (const x of v) todo.push(x); // a Map's entries are [key, value] arrays: two values more each
    } else {
      const o = /** @type {Record<string, unknown>} */ (v);
      for (const k in o) {
        if (++values > MAX_SIZED_VALUES) return OVER;
        bytes += k.length;
        todo.push(o[k]);
      }
    }
    if (bytes > MESSAGE_BYTE_BUDGET) return OVER;
  }
  return bytes;
}

/**
 * MessageBudget is one app's budget: its messages and their bytes within the last
 * MESSAGE_WINDOW_MS, a window that slides with each message (a window that began at a first
 * message and ended a second later let a burst that crossed its end through twice over: 500 at
 * its end and 500 more at the next one's start). It keeps when each message in the window
 * arrived and what it was charged, at most MESSAGE_BUDGET + 1 of them.
 */
export class MessageBudget {
  /** when each message in the window arrived, oldest first from head, in a ring */
  at = new Float64Array(MESSAGE_BUDGET + 1);
  /** what each was charged in bytes, beside at */
  size = new Float64Array(MESSAGE_BUDGET + 1);
  head = 0;
  /** how many messages the window holds */
  count = 0;
  /** their bytes together */
  bytes = 0;

  /**
   * charge charges one message of the app, data as received: itself and its bytes, unless it is
   * an answer the app owed (free). It returns '' while the app is within both budgets, and why
   * it is not for the first message over either (the caller stops the app).
   *
   * at is when the message reached this realm: the MessageEvent's timeStamp, which the browser
   * sets as the message arrives, before it waits for a listener. The window is of arrivals: a
   * realm busy elsewhere (a loaded machine) reads a flood later and more slowly than it came,
   * and timed by its reading the flood would spread over several windows and never be stopped.
   * A charge without an event (the bridge's count of a reload) is at performance.now().
   * @param {unknown} data
   * @param {boolean} [owed]
   * @param {number} [at]
   * @returns {string}
   */
  charge(data, owed = false, at = performance.now()) {
    if (owed) return '';
    const ring = this.at.length;
    while (this.count > 0 && at - this.at[this.head] >= MESSAGE_WINDOW_MS) {
      this.bytes -= this.size[this.head];
      this.head = (this.head + 1) % ring;
      this.count--;
    }
    const over = `it sent more than ${MESSAGE_BUDGET} messages within ${MESSAGE_WINDOW_MS} ms`;
    if (this.count === ring) return over; // the window holds the one over already
    const i = (this.head + this.count) % ring;
    this.at[i] = at;
    this.size[i] = 0;
    if (++this.count > MESSAGE_BUDGET) return over;
    this.size[i] = messageBytes(data);
    this.bytes += this.size[i];
    if (this.bytes > MESSAGE_BYTE_BUDGET) return `it sent more than ${MESSAGE_BYTE_BUDGET} bytes within ${MESSAGE_WINDOW_MS} ms`;
    return '';
  }
}
