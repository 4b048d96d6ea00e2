import { OciError } from "./oci-errors.js";
import { parseDigest } from "./oci-path.js";

export const OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json";
export const OCI_INDEX = "application/vnd.oci.image.index.v1+json";
export const DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json";
export const DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json";

const IMAGES = new Set([OCI_MANIFEST, DOCKER_MANIFEST]);
const INDEXES = new Set([OCI_INDEX, DOCKER_LIST]);
/** Layers a registry need not hold (Windows base layers pulled from elsewhere). */
const FOREIGN = /\.foreign\.|nondistributable/;

/** What a manifest refers to and says about itself. */
export interface ParsedManifest {
  mediaType: string;
  /** Blobs (config, layers) that must be in the image already. */
  blobs: string[];
  /** Child manifests (an index's) that must be in the image already. */
  manifests: string[];
  subject: string | null;
  artifactType: string | null;
  annotations: Record<string, string> | null;
}

const invalid = (why: string) => new OciError("MANIFEST_INVALID", `the manifest is not valid: ${why}`);

function descriptorDigest(d: unknown, where: string): string {
  const digest = (d as { digest?: unknown } | null)?.digest;
  if (typeof digest !== "string" || !parseDigest(digest)) throw invalid(`${where} has no valid digest`);
  return digest;
}

/**
 * Reads a manifest body: an image manifest or an index, OCI or Docker schema 2. Its media type is
 * the Content-Type the client sent, which must agree with the body's own `mediaType` when both
 * are there (the spec's rule); one of the four is required.
 */
export function parseManifest(body: Buffer, contentType: string | undefined): ParsedManifest {
  let doc: Record<string, unknown>;
  try {
    doc = JSON.parse(body.toString("utf8")) as Record<string, unknown>;
  } catch {
    throw invalid("it is not JSON");
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) throw invalid("it is not a JSON object");
  const declared = contentType?.split(";")[0]?.trim().toLowerCase() || undefined;
  const inBody = typeof doc.mediaType === "string" ? doc.mediaType : undefined;
  if (declared && inBody && declared !== inBody) throw invalid(`its mediaType ${inBody} differs from the Content-Type ${declared}`);
  const mediaType = declared ?? inBody;
  if (!mediaType || (!IMAGES.has(mediaType) && !INDEXES.has(mediaType))) {
    throw new OciError("MANIFEST_INVALID", `unsupported manifest media type ${mediaType ?? "(none)"}: send ${[OCI_MANIFEST, OCI_INDEX, DOCKER_MANIFEST, DOCKER_LIST].join(", ")}`);
  }
  if (doc.schemaVersion !== 2) throw invalid("schemaVersion must be 2");
  const subject = doc.subject === undefined ? null : descriptorDigest(doc.subject, "subject");
  const annotations = doc.annotations && typeof doc.annotations === "object" ? (doc.annotations as Record<string, string>) : null;
  let artifactType = typeof doc.artifactType === "string" ? doc.artifactType : null;
  if (IMAGES.has(mediaType)) {
    const config = doc.config as { mediaType?: unknown } | undefined;
    const blobs = [descriptorDigest(config, "config")];
    if (!Array.isArray(doc.layers)) throw invalid("layers must be an array");
    doc.layers.forEach((l: { mediaType?: unknown }, i) => {
      const digest = descriptorDigest(l, `layers[${i}]`);
      if (!(typeof l.mediaType === "string" && FOREIGN.test(l.mediaType))) blobs.push(digest);
    });
    if (artifactType === null && typeof config?.mediaType === "string") artifactType = config.mediaType;
    return { mediaType, blobs, manifests: [], subject, artifactType, annotations };
  }
  if (!Array.isArray(doc.manifests)) throw invalid("manifests must be an array");
  const manifests = doc.manifests.map((m, i) => descriptorDigest(m, `manifests[${i}]`));
  return { mediaType, blobs: [], manifests, subject, artifactType, annotations };
}
