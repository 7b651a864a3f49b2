/*
 * What the library takes from the runtime, by the globals that Node, workerd (Cloudflare
 * Workers) and Vercel Edge share, so that no `node:` module is on a hit's route: where only Node
 * has a part (`process`, `setImmediate`, a timer's `unref`), Node's is used, and elsewhere the
 * nearest the web platform has. In Node each of these is what the library called before.
 */

/** A timer as `setTimeout` returns it: Node's object, or a number in workerd. */
type Timer = ReturnType<typeof setTimeout> | number;

/** Lets the process exit with `timer` pending (Node); workerd's numbers have nothing to unref. */
export function unref(timer: Timer): void {
  if (typeof timer === 'object' && typeof timer.unref === 'function') timer.unref();
}

const nodeProcess = (globalThis as { process?: Partial<NodeJS.Process> }).process;

/**
 * Runs `f` once the current operation is done: Node's `process.nextTick`, else a microtask
 * (workerd, Vercel Edge).
 */
export const nextTick: (f: () => void) => void =
  typeof nodeProcess?.nextTick === 'function'
    ? (f) => (nodeProcess as NodeJS.Process).nextTick(f)
    : (f) => queueMicrotask(f);

/**
 * Runs `f` after the event loop's current pass: Node's `setImmediate`, else a timer of 0 ms.
 */
export const afterThisPass: (f: () => void) => void =
  typeof globalThis.setImmediate === 'function'
    ? (f) => void globalThis.setImmediate(f)
    : (f) => void setTimeout(f, 0);

/** A random UUID (v4), from the Web Crypto API every runtime the library runs on has. */
export const randomUUID = (): string => globalThis.crypto.randomUUID();

/**
 * Emits `message` as a process warning with its `code` (Node: `process.on('warning')`); where
 * there is no process (workerd, Vercel Edge), as a console warning that starts with the code.
 */
export function emitWarning(message: string, code: string): void {
  if (typeof nodeProcess?.emitWarning === 'function') {
    nodeProcess.emitWarning(message, { code });
  } else {
    console.warn(`${code}: ${message}`);
  }
}
