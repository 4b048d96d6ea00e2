/**
 * The `maven-metadata.xml` documents the server writes from what was deployed (clients' own
 * copies are not kept: two deploys merging into one document would lose one of them).
 */
export interface VersionRow {
  version: string;
  /** When the version's first file arrived: versions are listed in that order, as Maven's own merge does. */
  deployed: Date;
  /** When a file of it last arrived. */
  updated: Date;
}

export interface SnapshotRow {
  classifier: string;
  extension: string;
  /** `1.0-20240101.120000-3` */
  value: string;
  timestamp: string;
  buildNumber: number;
  updated: Date;
}

export const escapeXml = (s: string) => s.replace(/[<>&'"]/g, (c) => ({ "<": "&lt;", ">": "&gt;", "&": "&amp;", "'": "&apos;", '"': "&quot;" })[c]!);
const el = (name: string, value: string) => `<${name}>${escapeXml(value)}</${name}>`;

/** Maven's `lastUpdated`: yyyyMMddHHmmss in UTC. */
export const lastUpdated = (d: Date): string => d.toISOString().replace(/[-:T]/g, "").slice(0, 14);
const newest = (dates: Date[]) => new Date(Math.max(...dates.map((d) => d.getTime())));

const document = (body: string[]) => `<?xml version="1.0" encoding="UTF-8"?>\n${body.join("\n")}\n`;

/** Artifact level (`<g>/<a>/maven-metadata.xml`): every version, the latest and the latest release. */
export function artifactMetadata(groupId: string, artifactId: string, versions: readonly VersionRow[]): string {
  const ordered = [...versions].sort((a, b) => a.deployed.getTime() - b.deployed.getTime() || a.version.localeCompare(b.version));
  const release = ordered.filter((v) => !v.version.endsWith("-SNAPSHOT")).pop();
  return artifactVersioning(groupId, artifactId, {
    versions: ordered.map((v) => v.version),
    latest: ordered[ordered.length - 1]!.version,
    ...(release ? { release: release.version } : {}),
    lastUpdated: lastUpdated(newest(ordered.map((v) => v.updated))),
  });
}

/** An artifact-level document of versions in the order given (oldest first), as the server writes one (a group's merge too). */
export function artifactVersioning(groupId: string, artifactId: string, v: { versions: readonly string[]; latest?: string; release?: string; lastUpdated?: string }): string {
  return document([
    "<metadata>",
    `  ${el("groupId", groupId)}`,
    `  ${el("artifactId", artifactId)}`,
    "  <versioning>",
    ...(v.latest ? [`    ${el("latest", v.latest)}`] : []),
    ...(v.release ? [`    ${el("release", v.release)}`] : []),
    "    <versions>",
    ...v.versions.map((version) => `      ${el("version", version)}`),
    "    </versions>",
    ...(v.lastUpdated ? [`    ${el("lastUpdated", v.lastUpdated)}`] : []),
    "  </versioning>",
    "</metadata>",
  ]);
}

const later = (a: SnapshotRow, b: SnapshotRow) => a.buildNumber - b.buildNumber || a.timestamp.localeCompare(b.timestamp) || a.updated.getTime() - b.updated.getTime();

/**
 * Version level of a snapshot (`<g>/<a>/<v>-SNAPSHOT/maven-metadata.xml`): the latest build and,
 * per classifier and extension, the file of the latest build that has one (what `-SNAPSHOT` resolves to).
 */
export function snapshotMetadata(groupId: string, artifactId: string, version: string, builds: readonly SnapshotRow[]): string {
  const latest = [...builds].sort(later).pop()!;
  const perFile = new Map<string, SnapshotRow>();
  for (const b of builds) {
    const key = `${b.classifier}\u0000${b.extension}`;
    const seen = perFile.get(key);
    if (!seen || later(b, seen) > 0) perFile.set(key, b);
  }
  const files = [...perFile.values()].sort((a, b) => a.extension.localeCompare(b.extension) || a.classifier.localeCompare(b.classifier));
  return document([
    '<metadata modelVersion="1.1.0">',
    `  ${el("groupId", groupId)}`,
    `  ${el("artifactId", artifactId)}`,
    `  ${el("version", version)}`,
    "  <versioning>",
    "    <snapshot>",
    `      ${el("timestamp", latest.timestamp)}`,
    `      ${el("buildNumber", String(latest.buildNumber))}`,
    "    </snapshot>",
    `    ${el("lastUpdated", lastUpdated(newest(builds.map((b) => b.updated))))}`,
    "    <snapshotVersions>",
    ...files.flatMap((f) => [
      "      <snapshotVersion>",
      ...(f.classifier ? [`        ${el("classifier", f.classifier)}`] : []),
      `        ${el("extension", f.extension)}`,
      `        ${el("value", f.value)}`,
      `        ${el("updated", lastUpdated(f.updated))}`,
      "      </snapshotVersion>",
    ]),
    "    </snapshotVersions>",
    "  </versioning>",
    "</metadata>",
  ]);
}
