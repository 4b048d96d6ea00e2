import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { installPackages } from "@svc/devstack";
import { run, type Run } from "./npm-clients.js";

/**
 * The PyPI clients the pypi-format suite drives, unmodified, from Debian's packages: twine,
 * python3-build, python3-venv and pip for Debian's own Python (/usr/bin/python3, whatever else
 * is first on PATH), with setuptools and wheel to build the test distributions offline (PyPI is
 * not reachable). Installed once when missing, as the suite's servers are.
 */
const PYTHON = "/usr/bin/python3";
const TWINE = "/usr/bin/twine";
const PACKAGES = ["twine", "python3-build", "python3-venv", "python3-pip", "python3-setuptools", "python3-wheel"];

export interface PythonClients {
  python: string;
  twine: string;
}

const importable = (module: string) => run(PYTHON, ["-c", `import ${module}`], { cwd: "/", env: { PATH: "/usr/bin:/bin" } });

export async function ensurePythonClients(): Promise<PythonClients> {
  const ready = async () => existsSync(PYTHON) && existsSync(TWINE) && (await Promise.all(["build", "venv", "ensurepip", "setuptools", "wheel", "pip"].map(importable))).every((r) => r.code === 0);
  if (!(await ready())) {
    await installPackages(PACKAGES, (line) => console.log(line));
    if (!(await ready())) throw new Error(`after installing ${PACKAGES.join(" ")}, ${PYTHON} still lacks build, venv, pip, setuptools or wheel, or ${TWINE} is missing`);
  }
  return { python: PYTHON, twine: TWINE };
}

/** An environment with nothing of the machine's Python or pip configuration: its own HOME, no user site, no pip config file. */
export function pythonEnv(dir: string, extra: Record<string, string> = {}): Record<string, string> {
  mkdirSync(join(dir, "home"), { recursive: true });
  return {
    PATH: "/usr/bin:/bin",
    HOME: join(dir, "home"),
    PYTHONNOUSERSITE: "1",
    PIP_CONFIG_FILE: "/dev/null",
    PIP_DISABLE_PIP_VERSION_CHECK: "1",
    PIP_NO_INPUT: "1",
    XDG_CONFIG_HOME: join(dir, "xdg-config"),
    XDG_CACHE_HOME: join(dir, "xdg-cache"),
    XDG_DATA_HOME: join(dir, "xdg-data"),
    // keyring would look for a desktop secret store: twine and pip take the password given.
    PYTHON_KEYRING_BACKEND: "keyring.backends.null.Keyring",
    ...extra,
  };
}

export interface Dist {
  wheel: string;
  sdist: string;
}

/**
 * Builds a wheel and an sdist of a one-module project with Debian's setuptools, offline
 * (`python3 -m build --no-isolation`), in a scratch folder.
 */
export async function buildDist(work: string, py: PythonClients, p: { name: string; version: string; requiresPython?: string; readme?: string }): Promise<Dist> {
  const dir = join(work, `src-${p.name}-${p.version}`);
  const module = p.name.replace(/[-.]/g, "_").toLowerCase();
  mkdirSync(join(dir, module), { recursive: true });
  const requires = p.requiresPython ? `requires-python = ${JSON.stringify(p.requiresPython)}\n` : "";
  // The readme becomes the core metadata's description, which twine sends as the form's longest field.
  const readme = p.readme === undefined ? "" : `readme = "README.md"\n`;
  if (p.readme !== undefined) writeFileSync(join(dir, "README.md"), p.readme);
  writeFileSync(
    join(dir, "pyproject.toml"),
    `[build-system]\nrequires = ["setuptools", "wheel"]\nbuild-backend = "setuptools.build_meta"\n\n[project]\nname = ${JSON.stringify(p.name)}\nversion = ${JSON.stringify(p.version)}\ndescription = "e2e test package"\n${requires}${readme}\n[tool.setuptools]\npackages = [${JSON.stringify(module)}]\n`,
  );
  writeFileSync(join(dir, module, "__init__.py"), `VERSION = ${JSON.stringify(`${p.name}@${p.version}`)}\n`);
  const r: Run = await run(py.python, ["-m", "build", "--no-isolation", "--outdir", join(dir, "dist"), dir], { cwd: dir, env: pythonEnv(dir) });
  if (r.code !== 0) throw new Error(`building ${p.name} ${p.version} failed (exit ${r.code}):\n${r.output.slice(-3000)}`);
  const files = readdirSync(join(dir, "dist"));
  const wheel = files.find((f) => f.endsWith(".whl"));
  const sdist = files.find((f) => f.endsWith(".tar.gz"));
  if (!wheel || !sdist) throw new Error(`building ${p.name} ${p.version} made ${files.join(", ")}`);
  return { wheel: join(dir, "dist", wheel), sdist: join(dir, "dist", sdist) };
}

/** A file's SHA-256, as a page's `#sha256=` gives it. */
export const fileSha256 = (file: string) => createHash("sha256").update(readFileSync(file)).digest("hex");
/** The Basic authorization pip and twine send with a key as the password of `__token__`. */
export const basicAuth = (key: string) => ({ authorization: `Basic ${Buffer.from(`__token__:${key}`).toString("base64")}` });

/**
 * What the PyPI suites run with the clients, each run in a scratch folder of its own under
 * `work`: twine uploading to a repository URL, pip installing into a fresh venv from an index.
 */
export function pythonRuns(work: string, py: PythonClients) {
  let n = 0;
  const scratch = () => {
    const dir = join(work, `run-${++n}`);
    mkdirSync(dir, { recursive: true });
    return { dir, env: pythonEnv(dir) };
  };
  const expectOk = (r: Run) => {
    if (r.code !== 0) throw new Error(`exit ${r.code}:\n${r.output.slice(-3000)}`);
  };
  return {
    scratch,
    expectOk,
    /** twine upload to `url` (a repository's URL) with the key as password (TWINE_*); none: twine is given no password. */
    twine(url: string, files: string[], password: string | undefined): Promise<Run> {
      const c = scratch();
      const env = { ...c.env, TWINE_REPOSITORY_URL: url, TWINE_USERNAME: "__token__", ...(password === undefined ? {} : { TWINE_PASSWORD: password }) };
      return run(py.twine, ["upload", "--non-interactive", "--disable-progress-bar", ...files], { cwd: c.dir, env });
    },
    /** A fresh venv (with Debian's setuptools visible when `systemSite`, to build an sdist) and pip installing into it from `index`, with no cache; `imported` prints a module's VERSION. */
    async pipInstall(index: string, args: string[], opts: { systemSite?: boolean } = {}) {
      const c = scratch();
      expectOk(await run(py.python, ["-m", "venv", ...(opts.systemSite ? ["--system-site-packages"] : []), join(c.dir, "venv")], { cwd: c.dir, env: c.env }));
      const r = await run(join(c.dir, "venv", "bin", "pip"), ["install", "--isolated", "--no-cache-dir", "--index-url", index, ...args], { cwd: c.dir, env: c.env });
      const python = join(c.dir, "venv", "bin", "python");
      return { r, imported: (module: string) => run(python, ["-c", `import ${module}; print(${module}.VERSION)`], { cwd: c.dir, env: c.env }) };
    },
  };
}

/**
 * The `file_upload` form twine sends (metadata fields first, then the file), built here for
 * requests a test sends itself: one that twine would not send, or a file no build makes.
 */
export function uploadForm(fields: Record<string, string>, file: { name: string; content: Buffer }): { body: Buffer; contentType: string } {
  const boundary = `----svc-e2e-${Math.random().toString(16).slice(2)}`;
  const parts: Buffer[] = [];
  for (const [name, value] of Object.entries({ ":action": "file_upload", protocol_version: "1", ...fields })) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
  }
  parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="content"; filename="${file.name}"\r\nContent-Type: application/octet-stream\r\n\r\n`), file.content, Buffer.from(`\r\n--${boundary}--\r\n`));
  return { body: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}
