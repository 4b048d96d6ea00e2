import type { PackageCoordinates } from "@svc/contracts";
import type { PypiFileRow } from "./pypi-store.js";

/** PEP 503's normal form: runs of `-`, `_` and `.` become one `-`, letters lower case. */
export const normalizeProject = (name: string): string => name.replace(/[-_.]+/g, "-").toLowerCase();

/** A distribution name as PEP 508 allows it (core metadata's `Name`). */
const PROJECT = /^([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9])$/;
export const isProjectName = (name: string): boolean => name.length <= 200 && PROJECT.test(name);

/** A version as it can appear in a file name and a path segment (PEP 440 forms, and legacy ones, but never a separator). */
const VERSION = /^[A-Za-z0-9][A-Za-z0-9._+!-]{0,127}$/;
export const isVersion = (v: string): boolean => VERSION.test(v);

/** The distribution files PyPI accepts today: wheels and sdists (.tar.gz, and the older .zip). */
const FILE = /^[A-Za-z0-9][A-Za-z0-9._+!-]*\.(whl|tar\.gz|zip)$/;

/**
 * The project a file name says it belongs to (the wheel's first field, the sdist's name before
 * its version), normalised; undefined when the name is not a distribution file name.
 */
export function projectOfFile(filename: string, version: string): string | undefined {
  if (filename.length > 255) return undefined;
  const m = FILE.exec(filename);
  if (!m) return undefined;
  const stem = filename.slice(0, -(m[1]!.length + 1));
  if (m[1] === "whl") {
    const parts = stem.split("-");
    return parts.length === 5 || parts.length === 6 ? normalizeProject(parts[0]!) : undefined;
  }
  return stem.endsWith(`-${version}`) ? normalizeProject(stem.slice(0, -(version.length + 1))) : undefined;
}

/** The version field of a wheel's file name (`{name}-{version}(-{build})?-{python}-{abi}-{platform}.whl`); undefined for other files. */
export function versionOfWheel(filename: string): string | undefined {
  if (!filename.endsWith(".whl")) return undefined;
  const parts = filename.slice(0, -4).split("-");
  return parts.length === 5 || parts.length === 6 ? parts[1] : undefined;
}

/** PEP 440's public and local versions, case-insensitive, with the separators and spellings it normalises. */
const PEP440 =
  /^v?(?:(\d+)!)?(\d+(?:\.\d+)*)(?:[-_.]?(alpha|a|beta|b|preview|pre|c|rc)[-_.]?(\d+)?)?(?:-(\d+)|[-_.]?(post|rev|r)[-_.]?(\d+)?)?(?:[-_.]?(dev)[-_.]?(\d+)?)?(?:\+([a-z0-9]+(?:[-_.][a-z0-9]+)*))?$/i;

const PRE: Record<string, string> = { alpha: "a", a: "a", beta: "b", b: "b", preview: "rc", pre: "rc", c: "rc", rc: "rc" };
/** A number as PEP 440 compares it: its value, so without leading zeros (as text: any length). */
const int = (digits: string | undefined): string => (digits ?? "0").replace(/^0+(?=\d)/, "");

/**
 * A version's identity under PEP 440 (what `packaging.version.Version` compares: `1.2` is
 * `1.2.0`, `1.0-RC1` is `1.0rc1`, `1.0-1` is `1.0.post1`); a version PEP 440 does not read is
 * only itself, with `-` as a wheel file name writes it (`_`).
 */
export function versionKey(version: string): string {
  const v = version.trim();
  const m = PEP440.exec(v);
  if (!m) return `legacy:${v.replace(/-/g, "_")}`;
  const [, epoch, release, preL, preN, postN1, postL, postN2, dev, devN, local] = m;
  const parts = release!.split(".").map((n) => int(n));
  while (parts.length > 1 && parts[parts.length - 1] === "0") parts.pop();
  let key = `${int(epoch)}!${parts.join(".")}`;
  if (preL !== undefined) key += `${PRE[preL.toLowerCase()]}${int(preN)}`;
  if (postN1 !== undefined || postL !== undefined) key += `.post${int(postN1 ?? postN2)}`;
  if (dev !== undefined) key += `.dev${int(devN)}`;
  if (local !== undefined) key += `+${local.toLowerCase().split(/[-_.]/).map((p) => (/^\d+$/.test(p) ? int(p) : p)).join(".")}`;
  return key;
}

export const sameVersion = (a: string, b: string): boolean => versionKey(a) === versionKey(b);

export const filePath = (project: string, version: string, filename: string): string => `packages/${project}/${version}/${filename}`;

/** The coordinates of a PyPI file's artifact path (`packages/<project>/<version>/<file>`), for its events. */
export function pypiCoordinates(path: string): PackageCoordinates | undefined {
  const s = path.split("/");
  if (s.length !== 4 || s[0] !== "packages") return undefined;
  return { format: "pypi", name: s[1]!, version: s[2]!, file: s[3]! };
}

export const JSON_TYPE = "application/vnd.pypi.simple.v1+json";
export const HTML_TYPE = "application/vnd.pypi.simple.v1+html";

/**
 * PEP 691 content negotiation: the answer type the client weighs highest, HTML when it names
 * none we serve (pip before 22.2 sends no Accept at all).
 */
export function negotiate(accept: string | string[] | undefined): typeof JSON_TYPE | typeof HTML_TYPE | "text/html" {
  const text = Array.isArray(accept) ? accept.join(",") : (accept ?? "");
  let best: { type: typeof JSON_TYPE | typeof HTML_TYPE | "text/html"; q: number } = { type: "text/html", q: 0 };
  for (const range of text.split(",")) {
    const [type, ...params] = range.split(";").map((p) => p.trim().toLowerCase());
    const q = Number(params.find((p) => p.startsWith("q="))?.slice(2) ?? "1");
    const served = type === JSON_TYPE ? JSON_TYPE : type === HTML_TYPE ? HTML_TYPE : type === "text/html" ? "text/html" : undefined;
    if (served && Number.isFinite(q) && q > best.q) best = { type: served, q };
  }
  return best.type;
}

const escapeHtml = (s: string): string => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");

/**
 * A file as a project page lists it: an uploaded file's row, or a proxy repository's file as its
 * upstream lists it (no SHA-256 when the upstream declares none; size and upload time when known).
 */
export type ListedFile = Pick<PypiFileRow, "filename" | "version" | "path" | "requiresPython" | "yanked"> & { sha256?: string; size?: number; uploaded?: Date };

/** A file's link from its project page (`<repo>/simple/<project>/`): relative, so it holds behind any proxy. */
const fileUrl = (f: ListedFile): string => `../../${f.path.split("/").map(encodeURIComponent).join("/")}${f.sha256 ? `#sha256=${f.sha256}` : ""}`;

const page = (title: string, body: string): string =>
  `<!DOCTYPE html>\n<html>\n<head>\n<meta name="pypi:repository-version" content="1.1">\n<title>${escapeHtml(title)}</title>\n</head>\n<body>\n<h1>${escapeHtml(title)}</h1>\n${body}</body>\n</html>\n`;

export function projectListHtml(projects: readonly string[]): string {
  return page("Simple index", projects.map((p) => `<a href="${encodeURIComponent(p)}/">${escapeHtml(p)}</a><br/>\n`).join(""));
}

export function projectListJson(projects: readonly string[]): string {
  return JSON.stringify({ meta: { "api-version": "1.1" }, projects: projects.map((name) => ({ name })) });
}

/** PEP 503 with PEP 592 (`data-yanked`) and `data-requires-python`, escaped as PEP 503 asks. */
export function projectPageHtml(project: string, files: readonly ListedFile[]): string {
  const links = files.map((f) => {
    const requires = f.requiresPython ? ` data-requires-python="${escapeHtml(f.requiresPython)}"` : "";
    const yanked = f.yanked === null ? "" : ` data-yanked="${escapeHtml(f.yanked)}"`;
    return `<a href="${escapeHtml(fileUrl(f))}"${requires}${yanked}>${escapeHtml(f.filename)}</a><br/>\n`;
  });
  return page(`Links for ${project}`, links.join(""));
}

/** PEP 691 (with PEP 700's versions, size and upload-time). */
export function projectPageJson(project: string, files: readonly ListedFile[]): string {
  return JSON.stringify({
    meta: { "api-version": "1.1" },
    name: project,
    versions: [...new Set(files.map((f) => f.version))],
    files: files.map((f) => ({
      filename: f.filename,
      url: fileUrl(f).split("#")[0],
      hashes: f.sha256 ? { sha256: f.sha256 } : {},
      ...(f.requiresPython ? { "requires-python": f.requiresPython } : {}),
      yanked: f.yanked === null ? false : f.yanked === "" ? true : f.yanked,
      ...(f.size !== undefined ? { size: f.size } : {}),
      ...(f.uploaded ? { "upload-time": f.uploaded.toISOString() } : {}),
    })),
  });
}
