/** A resolver that counts how many of its calls run at once, and ends when told to. */
export function gate() {
  let running = 0;
  let most = 0;
  let open!: () => void;
  let opened = new Promise<void>((resolve) => (open = resolve));
  return {
    get running() {
      return running;
    },
    get most() {
      return most;
    },
    /** Ends every call waiting, and lets later calls end at once. */
    open: () => open(),
    /** Calls made from now wait again. */
    close: (): void => {
      opened = new Promise<void>((resolve) => (open = resolve));
    },
    resolve: async () => {
      running++;
      most = Math.max(most, running);
      try {
        await opened;
        return true;
      } finally {
        running--;
      }
    },
  };
}
