import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
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
