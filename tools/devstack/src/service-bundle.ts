import { existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build, type Plugin } from "esbuild";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

/**
 * A service bundled into one module (its own sources, the workspace packages and the npm
 * packages it imports), next to its main.ts so that `import.meta.url` names the same folder.
 * Loading a service through tsx compiles about two hundred TypeScript files at every start
 * (about 3.8 s of CPU each, 27 s for a suite of seven), which the end-to-end tests pay once per
 * file; a bundle of the service's own code loads in about 1 s, and with its npm packages in it
 * too (no module resolution, no CommonJS wrapping of a thousand files) in about 0.5 s. The
 * sources stay the truth: a bundle is used only while it is newer than every file it was built
 * from (`freshBundle`), else the service runs through tsx as before. It is a CommonJS module,
 * run by bundle-launcher.cjs with V8's code cache (Node 20 has none for ES modules).
 */
export const bundleOf = (name: string): string => join(repoRoot, "services", name, "src", "main.bundle.cjs");
/** Runs a bundle with V8's code cache (bundle-launcher.cjs). */
export const bundleLauncher = join(repoRoot, "tools", "devstack", "src", "bundle-launcher.cjs");
const inputsOf = (name: string): string => join(repoRoot, "services", name, "src", "main.bundle.inputs.json");

/**
 * npm packages that read their own files next to their code (a package.json, a worker script):
 * bundled, they would look for them beside the bundle. They stay imports of their installed
 * files.
 */
const READ_OWN_FILES = ["@fastify/swagger", "ioredis", "pino", "thread-stream"];
/** Optional packages their importers try and do without (pg's native driver): not installed, left as they are. */
const OPTIONAL = ["pg-native"];
const packageOf = (specifier: string): string => specifier.split("/").slice(0, specifier.startsWith("@") ? 2 : 1).join("/");

/** Those packages' imports resolved where the importer lives (pnpm keeps each package's own dependencies beside it) and left out of the bundle. */
const ownFilePackages: Plugin = {
  name: "own-file-packages",
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, async (a) => {
      if (a.pluginData === "resolving") return undefined;
      if (a.path.startsWith("node:") || OPTIONAL.includes(packageOf(a.path))) return { external: true };
      if (!READ_OWN_FILES.includes(packageOf(a.path))) return undefined;
      const r = await b.resolve(a.path, { resolveDir: a.resolveDir, kind: a.kind, pluginData: "resolving" });
      if (r.errors.length > 0) return { errors: r.errors };
      return { path: r.path, external: true };
    });
  },
};

/** ES modules read `import.meta.url`: in the CommonJS bundle it is the bundle's own URL, as beside its sources. */
const IMPORT_META_URL = `const __svcImportMetaUrl = require("node:url").pathToFileURL(__filename).href;`;

/** Builds the bundles of `names` (written whole, then renamed into place: a service starting meanwhile reads the old one or the new). */
export async function buildServiceBundles(names: readonly string[]): Promise<void> {
  await Promise.all(
    names.map(async (name) => {
      const out = bundleOf(name);
      // The bundle is dated when its sources were read, not when it was written: a source changed
      // while it was built is newer than it, so the next start builds again.
      const started = new Date();
      const r = await build({
        entryPoints: [join(repoRoot, "services", name, "src", "main.ts")],
        bundle: true,
        platform: "node",
        format: "cjs",
        target: "node20",
        outfile: out,
        absWorkingDir: repoRoot,
        // Stack traces name the sources' lines (the map in a file of its own, read only with
        // --enable-source-maps; the sources themselves are in the checkout).
        sourcemap: "linked",
        sourcesContent: false,
        banner: { js: IMPORT_META_URL },
        define: { "import.meta.url": "__svcImportMetaUrl" },
        write: false,
        metafile: true,
        logLevel: "silent",
        plugins: [ownFilePackages],
      });
      const code = r.outputFiles.find((f) => f.path === out)!;
      const map = r.outputFiles.find((f) => f.path === `${out}.map`)!;
      // Relative to the checkout, as esbuild names them; installed packages change only with the lockfile.
      const inputs = [...Object.keys(r.metafile.inputs).filter((p) => !p.includes("node_modules/")), "pnpm-lock.yaml"];
      const tmp = `${out}.${process.pid}.tmp`;
      writeFileSync(`${inputsOf(name)}.${process.pid}.tmp`, JSON.stringify(inputs));
      writeFileSync(`${out}.map.${process.pid}.tmp`, map.contents);
      writeFileSync(tmp, code.contents);
      renameSync(`${inputsOf(name)}.${process.pid}.tmp`, inputsOf(name));
      renameSync(`${out}.map.${process.pid}.tmp`, `${out}.map`);
      utimesSync(tmp, started, started);
      renameSync(tmp, out);
      // The code caches of the bundle this one replaces (bundle-launcher.cjs names them after it).
      for (const f of readdirSync(dirname(out))) if (f.startsWith(`${basename(out)}.`) && f.endsWith(".cache")) rmSync(join(dirname(out), f), { force: true });
    }),
  );
}

/** The bundle of a service when it is newer than each of its sources; undefined otherwise (run main.ts through tsx). */
export function freshBundle(name: string): string | undefined {
  const out = bundleOf(name);
  if (!existsSync(out) || !existsSync(inputsOf(name))) return undefined;
  try {
    const built = statSync(out).mtimeMs;
    const inputs = JSON.parse(readFileSync(inputsOf(name), "utf8")) as string[];
    return inputs.every((p) => statSync(join(repoRoot, p)).mtimeMs <= built) ? out : undefined;
  } catch {
    return undefined; // a source removed or renamed: build again
  }
}

/** Builds the bundles of `names` that are missing or older than a source. */
export async function ensureServiceBundles(names: readonly string[]): Promise<void> {
  await buildServiceBundles(names.filter((n) => freshBundle(n) === undefined));
}
