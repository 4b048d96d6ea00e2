"use strict";
/**
 * Runs a service's CommonJS bundle (service-bundle.ts) with V8's code cache: `node
 * bundle-launcher.cjs <bundle> [service args...]`. Node 20 compiles the 4-7 MB bundle at every
 * start, and again each function the start runs (Node 22's module.enableCompileCache is not
 * there); a suite of seven services is started for every end-to-end test file. The first run
 * leaves the code V8 compiled for the bundle beside it once the service has started
 * (`<bundle>.<size>-<mtime>.<node version>-<arch>.cache`, written whole, then renamed into
 * place); later runs compile from it. A cache made for another bundle, Node or V8 flags is not
 * used: its name holds the bundle's size and time and the Node version, and V8 refuses data made
 * under other flags (then this run writes a new one). With --enable-source-maps the bundle is
 * required as any module is, so stack traces are mapped to the sources as before.
 */
const { readFileSync, renameSync, statSync, writeFileSync } = require("node:fs");
const Module = require("node:module");
const { dirname, resolve } = require("node:path");
const vm = require("node:vm");

/** How long after its start the service's compiled code is kept: past its start-up, before a test's traffic. */
const CACHE_AFTER_MS = 4000;

const bundle = resolve(process.argv[2]);
// The service reads its own arguments (`-Dsvc.x=y`) from process.argv[2] on, as when node runs its bundle.
process.argv.splice(1, 1);

if (process.execArgv.includes("--enable-source-maps")) {
  require(bundle);
} else {
  const { size, mtimeMs } = statSync(bundle);
  const cacheFile = `${bundle}.${size}-${Math.floor(mtimeMs)}.${process.version}-${process.arch}.cache`;
  let cachedData;
  try {
    cachedData = readFileSync(cacheFile);
  } catch {
    // none yet
  }
  const script = new vm.Script(Module.wrap(readFileSync(bundle, "utf8")), {
    filename: bundle,
    cachedData,
    // import() of Node's own modules and installed packages, as in any CommonJS module.
    importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  });
  if (cachedData === undefined || script.cachedDataRejected) {
    setTimeout(() => {
      try {
        const tmp = `${cacheFile}.${process.pid}.tmp`;
        writeFileSync(tmp, script.createCachedData());
        renameSync(tmp, cacheFile);
      } catch {
        // a read-only checkout: the next start compiles again
      }
    }, CACHE_AFTER_MS).unref();
  }
  const mod = new Module(bundle, null);
  mod.filename = bundle;
  mod.paths = Module._nodeModulePaths(dirname(bundle));
  const req = (id) => mod.require(id);
  req.resolve = (request, options) => Module._resolveFilename(request, mod, false, options);
  req.main = mod;
  req.cache = Module._cache;
  script.runInThisContext().call(mod.exports, mod.exports, req, mod, bundle, dirname(bundle));
}
