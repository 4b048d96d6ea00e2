import { LIMITS, invalid } from "@svc/contracts";
import { isRepositoryName } from "./scope.js";

export interface ArtifactAddress {
  repository: string;
  /** Decoded, validated segments; joined with "/" this is the artifact path. */
  segments: string[];
  path: string;
}

/** A request target under /repository/: an artifact, or a folder of one (a trailing slash, or the repository itself). */
export interface ArtifactTarget extends ArtifactAddress {
  /**
   * The target ends in a slash or names the repository alone (`path` is then "" or the folder
   * without its slash): what a package index is asked for (pip's `/simple/<project>/`, twine's
   * upload to the repository URL). Only a format that serves such a folder accepts it.
   */
  folder: boolean;
}

/**
 * A scoped npm package name sent as one segment (`@scope%2fname`, as npm and yarn escape it, in
 * either letter case): read as the two segments `@scope/name` are, so both spellings name the
 * same artifact path (and the same grant prefix). Each half is checked like any segment.
 */
const SCOPED_PACKAGE = /^(@[^/%]+)%2f([^/]+)$/i;

/**
 * Reads `/repository/<repository>/<path>` from the raw request URL. Refuses (400) anything
 * that could leave the repository or mean two things: `.` or `..` segments (encoded or not),
 * empty segments (`//`, an absolute path), NUL and other control characters, backslashes,
 * an encoded slash inside a segment (except the one of a scoped npm package name, read as a
 * separator), and bad percent-encoding.
 */
export function parseArtifactUrl(rawUrl: string): ArtifactAddress {
  const { folder, ...a } = parseArtifactTarget(rawUrl);
  if (folder) {
    if (a.path === "") throw invalid("path", "an artifact path is required after the repository name");
    throw invalid("path", "the artifact path has an empty segment (// or a trailing /)");
  }
  return a;
}

/**
 * parseArtifactUrl, but a folder is let through (`/repository/<repository>`, `.../`, `.../a/b/`):
 * a trailing slash is no traversal, and each format decides whether it serves the folder. Every
 * other refusal is the same (an empty segment inside the path among them).
 */
export function parseArtifactTarget(rawUrl: string): ArtifactTarget {
  const q = rawUrl.indexOf("?");
  const pathname = q < 0 ? rawUrl : rawUrl.slice(0, q);
  const rest = pathname.slice("/repository/".length);
  const slash = rest.indexOf("/");
  const repoRaw = slash < 0 ? rest : rest.slice(0, slash);
  let repository: string;
  try {
    repository = decodeURIComponent(repoRaw);
  } catch {
    throw invalid("repository", "the repository name is not valid percent-encoding");
  }
  if (!isRepositoryName(repository)) throw invalid("repository", "not a valid repository name");
  if (slash < 0 || slash === rest.length - 1) return { repository, segments: [], path: "", folder: true };
  const inside = rest.slice(slash + 1);
  const folder = inside.endsWith("/");
  const rawSegments = (folder ? inside.slice(0, -1) : inside).split("/").flatMap((raw) => {
    const scoped = SCOPED_PACKAGE.exec(raw);
    return scoped ? [scoped[1]!, scoped[2]!] : [raw];
  });
  const segments: string[] = [];
  for (const raw of rawSegments) {
    if (raw === "") throw invalid("path", "the artifact path has an empty segment (// or a trailing /)");
    if (raw.includes("\\") || /%5c/i.test(raw)) throw invalid("path", "backslashes are not allowed in artifact paths");
    if (/%2f/i.test(raw)) throw invalid("path", "an encoded slash is not allowed in an artifact path segment");
    let seg: string;
    try {
      seg = decodeURIComponent(raw);
    } catch {
      throw invalid("path", "the artifact path is not valid percent-encoding");
    }
    if (seg === "." || seg === "..") throw invalid("path", "'.' and '..' segments are not allowed in artifact paths");
    // eslint-disable-next-line no-control-regex
    if (/[\u0000-\u001f\u007f]/.test(seg)) throw invalid("path", "control characters (including NUL) are not allowed in artifact paths");
    if (Buffer.byteLength(seg) > LIMITS.pathSegmentBytes) throw invalid("path", `an artifact path segment is longer than ${LIMITS.pathSegmentBytes} bytes`);
    segments.push(seg);
  }
  const path = segments.join("/");
  if (path.length > LIMITS.artifactPath) throw invalid("path", `the artifact path is longer than ${LIMITS.artifactPath} characters`);
  return { repository, segments, path, folder };
}
