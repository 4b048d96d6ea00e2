// Process exit / fatal signal cleanup, shared by every Infra of this process: a crashed or
// exiting parent leaves no server behind.
const cleanups = new Set<() => void>();
const FATAL_SIGNALS: NodeJS.Signals[] = ["SIGINT", "SIGTERM", "SIGHUP"];

function runCleanups(): void {
  for (const fn of [...cleanups]) {
    cleanups.delete(fn);
    try {
      fn();
    } catch {
      /* best effort */
    }
  }
}

function onProcessExit(): void {
  runCleanups();
}

// On a fatal signal nobody else handles, clean up and die by that signal as before. When the host
// program has its own handler, it is responsible for calling stop().
function onFatalSignal(sig: NodeJS.Signals): void {
  if (process.listenerCount(sig) > 1) return;
  runCleanups();
  uninstallHandlers();
  process.kill(process.pid, sig);
}

function installHandlers(): void {
  process.on("exit", onProcessExit);
  for (const s of FATAL_SIGNALS) process.on(s, onFatalSignal);
}

function uninstallHandlers(): void {
  process.removeListener("exit", onProcessExit);
  for (const s of FATAL_SIGNALS) process.removeListener(s, onFatalSignal);
}

export function registerCleanup(fn: () => void): void {
  if (cleanups.size === 0) installHandlers();
  cleanups.add(fn);
}

export function unregisterCleanup(fn: () => void): void {
  if (!cleanups.delete(fn)) return;
  if (cleanups.size === 0) uninstallHandlers();
}
