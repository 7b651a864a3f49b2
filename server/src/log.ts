/** One JSON object per line on stdout (errors on stderr), as log collectors expect. */
export type Level = 'info' | 'warn' | 'error';

/** Writes `message` with `fields` as one JSON line. */
export function log(level: Level, message: string, fields: Record<string, unknown> = {}): void {
  const line = JSON.stringify({ time: new Date().toISOString(), level, msg: message, ...fields });
  if (level === 'error') console.error(line);
  else console.log(line);
}

/**
 * A logger for a burst-prone event: the first occurrence is written at once, later ones at most
 * once per `intervalMs`, with how many were folded into that line.
 */
export function throttled(
  level: Level,
  message: string,
  intervalMs = 5_000,
): (fields: Record<string, unknown>) => void {
  let last = 0;
  let folded = 0;
  return (fields) => {
    const now = Date.now();
    if (now - last < intervalMs) {
      folded++;
      return;
    }
    log(level, message, folded > 0 ? { ...fields, alsoSince: folded } : fields);
    last = now;
    folded = 0;
  };
}
