import { existsSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build, type Plugin } from "esbuild";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

/**
 * A service bundled into one module (its own sources and the workspace packages it imports;
 * every npm package stays an import of its installed files), next to its main.ts so that
 * `import.meta.url` names the same folder. Loading a service through tsx compiles about two
 * hundred TypeScript files at every start (about 3.8 s of CPU each, 27 s for a suite of seven),
 * which the end-to-end tests pay once per file; a bundle loads in under one. The sources stay
 * the truth: a bundle is used only while it is newer than every file it was built from
 * (`freshBundle`), else the service runs through tsx as before.
 */
export const bundleOf = (name: string): string => join(repoRoot, "services", name, "src", "main.bundle.mjs");
const inputsOf = (name: string): string => join(repoRoot, "services", name, "src", "main.bundle.inputs.json");

/** Bare imports outside the workspace stay imports, resolved where the importer lives (pnpm keeps each package's own dependencies beside it). */
const installedPackages: Plugin = {
  name: "installed-packages",
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, async (a) => {
      if (a.pluginData === "resolving" || a.path.startsWith("@svc/")) return undefined;
      if (a.path.startsWith("node:")) return { external: true };
      const r = await b.resolve(a.path, { resolveDir: a.resolveDir, kind: a.kind, pluginData: "resolving" });
      if (r.errors.length > 0) return { errors: r.errors };
      return { path: r.path, external: true };
    });
  },
};

/** Builds the bundles of `names` (written whole, then renamed into place: a service starting meanwhile reads the old one or the new). */
export async function buildServiceBundles(names: readonly string[]): Promise<void> {
  await Promise.all(
    names.map(async (name) => {
      const out = bundleOf(name);
      const r = await build({
        entryPoints: [join(repoRoot, "services", name, "src", "main.ts")],
        bundle: true,
        platform: "node",
        format: "esm",
        target: "node20",
        outfile: out,
        absWorkingDir: repoRoot,
        sourcemap: "inline",
        write: false,
        metafile: true,
        logLevel: "silent",
        plugins: [installedPackages],
      });
      const code = r.outputFiles.find((f) => f.path === out) ?? r.outputFiles[0]!;
      // Relative to the checkout, as esbuild names them.
      const inputs = Object.keys(r.metafile.inputs);
      const tmp = `${out}.${process.pid}.tmp`;
      writeFileSync(`${inputsOf(name)}.${process.pid}.tmp`, JSON.stringify(inputs));
      writeFileSync(tmp, code.contents);
      renameSync(`${inputsOf(name)}.${process.pid}.tmp`, inputsOf(name));
      renameSync(tmp, out);
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
