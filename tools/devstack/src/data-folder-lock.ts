import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pidAlive, readPidFile } from "./process.js";

/**
 * One holder per data folder at a time: `name` is a file of the data folder holding the process
 * id (startInfra takes infra.lock, `npm start` suite.pid). A lock left by a process that is gone
 * is taken over. Returns the lock file, for releaseLock.
 */
export function acquireLock(dataDir: string, name = "infra.lock"): string {
  const lock = join(dataDir, name);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(lock, `${process.pid}\n`, { flag: "wx" });
      return lock;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const pid = readPidFile(lock);
      if (pid !== undefined && pid !== process.pid && pidAlive(pid)) {
        throw new Error(`The data folder ${dataDir} is in use by process ${pid} (${lock}). Stop it first or use another data folder.`);
      }
      if (pid === process.pid) throw new Error(`${lock} is already held by this process`);
      rmSync(lock, { force: true });
    }
  }
  throw new Error(`could not lock ${lock}`);
}

/** Removes a lock file of acquireLock if this process still holds it. */
export function releaseLock(lock: string): void {
  if (readPidFile(lock) === process.pid) rmSync(lock, { force: true });
}
