import { filesystemBlobStore, type FilesystemBlobStore } from "./filesystem.js";
import { s3BlobStore, type S3BlobStore } from "./s3.js";

/** The storage settings (svc.storage, svc.filesystem-root, svc.storage.s3.*) as a service's config holds them. */
export interface StorageSettings {
  storage: "filesystem" | "s3";
  filesystemRoot: string;
  s3Bucket: string;
  s3Endpoint: string;
  s3Region: string;
  s3PathStyle: boolean;
  s3Prefix: string;
  s3AccessKey: string;
  s3SecretKey: string;
  s3EqualParts: boolean;
  /** svc.storage.s3.idle-timeout (0: none). */
  s3IdleTimeoutMs: number;
  readOnly: boolean;
}

const EQUAL_PART = 64 * 1024 * 1024;

export type OpenedBlobStore = { kind: "filesystem"; store: FilesystemBlobStore } | { kind: "s3"; store: S3BlobStore };

/**
 * The blob store the settings name, ready for use: the filesystem's folders made, or the S3
 * bucket checked (reachable, writable unless read-only). A missing bucket or refused credentials
 * throw BlobStoreMisconfigured naming the setting (the service then refuses to start).
 */
export async function openBlobStore(s: StorageSettings): Promise<OpenedBlobStore> {
  if (s.storage === "s3") {
    const store = s3BlobStore({
      bucket: s.s3Bucket,
      endpoint: s.s3Endpoint || undefined,
      region: s.s3Region,
      pathStyle: s.s3PathStyle,
      prefix: s.s3Prefix,
      accessKey: s.s3AccessKey || undefined,
      secretKey: s.s3SecretKey || undefined,
      readOnly: s.readOnly,
      idleTimeoutMs: s.s3IdleTimeoutMs,
      ...(s.s3EqualParts ? { partSizeMode: "equal" as const, partSize: EQUAL_PART } : {}),
    });
    try {
      await store.check();
    } catch (err) {
      store.close();
      throw err;
    }
    return { kind: "s3", store };
  }
  const store = filesystemBlobStore({ root: s.filesystemRoot, readOnly: s.readOnly });
  await store.init();
  return { kind: "filesystem", store };
}

/** What the "ready" line and logs may say of the store: never a credential. */
export function storageIdentity(s: StorageSettings): Record<string, string> {
  return s.storage === "s3" ? { storage: "s3", bucket: s.s3Bucket, ...(s.s3Endpoint ? { endpoint: s.s3Endpoint } : {}), ...(s.s3Prefix ? { prefix: s.s3Prefix } : {}) } : { storage: "filesystem", root: s.filesystemRoot };
}

/**
 * The readiness check of the store (/health/ready): for S3 the bucket listed (nothing written on
 * every probe), answering within 3 s; none for the filesystem (a local folder).
 */
export function blobStoreHealthChecks(opened: OpenedBlobStore): { name: string; check: () => Promise<{ ok: true } | { ok: false; error: string }> }[] {
  if (opened.kind !== "s3") return [];
  const store = opened.store;
  return [
    {
      name: "object-store",
      async check() {
        let timer: NodeJS.Timeout | undefined;
        try {
          await Promise.race([store.check({ write: false }), new Promise((_, reject) => (timer = setTimeout(() => reject(new Error("timed out")), 3000)))]);
          return { ok: true };
        } catch (err) {
          return { ok: false, error: (err as Error).message };
        } finally {
          clearTimeout(timer);
        }
      },
    },
  ];
}

/** Whether a host name or address is this machine's loopback (as kit's isLoopback). */
const loopback = (host: string) => host === "localhost" || host === "[::1]" || host === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);

/**
 * What a node's heartbeat reports of its store for the posture (svc.storage.s3.plain-http): an
 * S3 endpoint reached over plain http on an address that is not this machine's loopback.
 */
export function storageStatus(s: Pick<StorageSettings, "storage" | "s3Endpoint">): Record<string, string> {
  if (s.storage !== "s3" || !s.s3Endpoint) return {};
  try {
    const u = new URL(s.s3Endpoint);
    return u.protocol === "http:" && !loopback(u.hostname) ? { "object-store": "plain-http" } : {};
  } catch {
    return {};
  }
}
