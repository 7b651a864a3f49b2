/**
 * Runs `workers` callbacks that each wait for one shared start signal, released only once all
 * of them are ready, so their hits reach the store at the same instant. Returns every result.
 */
export async function releaseTogether<T>(
  workers: number,
  prepare: (index: number) => Promise<() => Promise<T>>,
): Promise<T[]> {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const ready = await Promise.all(Array.from({ length: workers }, (_, i) => prepare(i)));
  const running = ready.map(async (fire) => {
    await gate;
    return fire();
  });
  release();
  return Promise.all(running);
}
