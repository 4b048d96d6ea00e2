import type { PackageCoordinates } from "@svc/contracts";

/** The checksum files a Maven client reads and writes beside every file (`.sha256`/`.sha512` when asked). */
export const CHECKSUM_ALGORITHMS = ["sha1", "md5", "sha256", "sha512"] as const;
export type ChecksumAlgorithm = (typeof CHECKSUM_ALGORITHMS)[number];
export const HEX_LENGTH: Record<ChecksumAlgorithm, number> = { sha1: 40, md5: 32, sha256: 64, sha512: 128 };

export const METADATA_FILE = "maven-metadata.xml";
const SNAPSHOT = "-SNAPSHOT";
/** A unique snapshot's timestamp and build number, as Maven names its files: `1.0-20240101.120000-3`. */
const TIMESTAMPED = /^(\d{8}\.\d{6})-(\d+)/;

export const isSnapshot = (version: string): boolean => version.endsWith(SNAPSHOT);

/** A file of an artifact version in the Maven 2 layout: `<g as folders>/<a>/<v>/<a>-<v>[-<classifier>].<extension>`. */
export interface MavenFile {
  groupId: string;
  artifactId: string;
  /** The version folder (`1.0`, `1.0-SNAPSHOT`). */
  version: string;
  file: string;
  classifier: string;
  extension: string;
  /** A unique snapshot's file: its version value (`1.0-20240101.120000-3`), timestamp and build number. */
  snapshot?: { value: string; timestamp: string; buildNumber: number };
}

export type MavenPath =
  | { kind: "checksum"; algorithm: ChecksumAlgorithm; of: string[] }
  /** `maven-metadata.xml` in the folder `dir` (artifact, version or group level). */
  | { kind: "metadata"; dir: string[] }
  | ({ kind: "file" } & MavenFile)
  | { kind: "other" };

/** Where a path lies in the Maven 2 layout. */
export function parseMavenPath(segments: readonly string[]): MavenPath {
  const last = segments[segments.length - 1] ?? "";
  for (const algorithm of CHECKSUM_ALGORITHMS) {
    if (last.endsWith(`.${algorithm}`) && last.length > algorithm.length + 1) {
      return { kind: "checksum", algorithm, of: [...segments.slice(0, -1), last.slice(0, -(algorithm.length + 1))] };
    }
  }
  if (last === METADATA_FILE) return { kind: "metadata", dir: segments.slice(0, -1) };
  if (segments.length < 4) return { kind: "other" };
  const [artifactId, version, file] = segments.slice(-3) as [string, string, string];
  const groupId = segments.slice(0, -3).join(".");
  if (!file.startsWith(`${artifactId}-`)) return { kind: "other" };
  let rest = file.slice(artifactId.length + 1);
  let snapshot: MavenFile["snapshot"];
  const base = version.slice(0, -SNAPSHOT.length);
  const stamped = isSnapshot(version) && rest.startsWith(`${base}-`) ? TIMESTAMPED.exec(rest.slice(base.length + 1)) : null;
  if (stamped) {
    const value = `${base}-${stamped[0]}`;
    snapshot = { value, timestamp: stamped[1]!, buildNumber: Number(stamped[2]) };
    rest = rest.slice(value.length);
  } else if (rest.startsWith(version)) {
    rest = rest.slice(version.length);
  } else {
    return { kind: "other" };
  }
  let classifier = "";
  if (rest.startsWith("-")) {
    const dot = rest.indexOf(".");
    if (dot < 2) return { kind: "other" };
    classifier = rest.slice(1, dot);
    rest = rest.slice(dot);
  }
  if (!rest.startsWith(".") || rest.length < 2) return { kind: "other" };
  return { kind: "file", groupId, artifactId, version, file, classifier, extension: rest.slice(1), ...(snapshot ? { snapshot } : {}) };
}

/** The coordinates of a Maven file's artifact path, for its events: `groupId:artifactId`, the version folder, the file. */
export function mavenCoordinates(path: string): PackageCoordinates | undefined {
  const p = parseMavenPath(path.split("/"));
  return p.kind === "file" ? { format: "maven", name: `${p.groupId}:${p.artifactId}`, version: p.version, file: p.file } : undefined;
}

/** Folders of a group id (`org.example` -> `org/example`). */
export const groupPath = (groupId: string): string => groupId.split(".").join("/");
