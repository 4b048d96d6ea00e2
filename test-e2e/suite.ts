import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { request } from "node:http";
import { Redis } from "ioredis";
import { Agent, setGlobalDispatcher } from "undici";
import { inject } from "vitest";
import type { RepositoryFormat } from "@svc/contracts";
import { createDatabase, startInfra, type Infra } from "@svc/devstack";
import { startServices, type RunningServices, type ServicesOptions } from "@svc/devstack/service-runner";

/**
 * The tests' fetch lets a connection idle at most 10 s before it drops it, as clients do (npm's
 * agent, browsers). By default it keeps one for as long as the server's Keep-Alive hint says
 * (the gateway's 65 s, less 1 s), and on a machine whose cores were busy a request sent on a
 * connection idle for 64 s met the gateway closing it ("other side closed"): a race between the
 * two timers, not a refusal.
 */
setGlobalDispatcher(new Agent({ keepAliveTimeout: 10_000, keepAliveMaxTimeout: 10_000 }));

export interface Suite extends RunningServices {
  databaseUrl: string;
  /** The suite's own Redis database (its rate buckets). */
  redisUrl: string;
  /**
   * The suite's own NATS server (unless the test named one in SVC_NATS_URL): every suite's tenant
   * is `default`, and on a shared server one suite's notifier took another's events from their
   * tenant's shared durable consumer and delivered them to its own endpoints (seen: a webhook
   * endpoint of webhooks-masked.test.ts with a delivery of an event it never published).
   */
  natsUrl: string;
  /** A request to the gateway. `key` goes in Service-Repository-Key unless headers say otherwise. */
  call(method: string, path: string, opts?: CallOptions): Promise<Response>;
  /** A request with the path sent byte for byte, as a hostile client would (fetch would normalise it). */
  rawCall(method: string, path: string, headers?: Record<string, string>): Promise<{ status: number; body: string }>;
  /** Mints a key through the API with the bootstrap key, optionally granting rights. */
  mint(opts?: { label?: string; expires?: string; grants?: { scope: string; tokens: string[]; expires?: string }[] }): Promise<{ id: string; key: string }>;
  /** Creates a repository through the API with the bootstrap key unless `key`; throws with the answer when it is not created. */
  createRepository(name: string, format: RepositoryFormat, key?: string): Promise<void>;
  /** The bucket the suite stores its blobs in when it runs on the S3 blob store (the S3 pass); else undefined. */
  bucket: string | undefined;
}

export interface CallOptions {
  key?: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array | ReadableStream | object;
  /** Send the path exactly as given (no URL normalisation). */
  raw?: boolean;
}

/** The suites this test file has running, with the refusals and failures their calls met. */
const running = new Set<{ services: RunningServices; refused: string[] }>();

/**
 * What a failed test's reader needs and vitest does not show: the last refusals and failures the
 * suite's calls met (status and body, which says why) and the last lines each service logged.
 * Printed by test-e2e/setup.ts when a test fails.
 */
export function failureReport(): string {
  const parts: string[] = [];
  for (const r of running) {
    parts.push(`--- ${r.services.gatewayUrl}: last answers >= 400 through the gateway`, ...r.refused);
    for (const service of ["gateway", "auth", "artifacts", "console"] as const) {
      parts.push(`--- ${service}: last lines`, ...r.services.output(service).slice(-15).map((l) => l.slice(0, 600)));
    }
  }
  return parts.join("\n");
}

/**
 * A Redis database of the suite's own on the run's shared server: rate buckets are keyed by
 * tenant, and every suite's tenant is `default`, so a suite with a tiny limit would otherwise
 * empty the bucket of every suite running beside it (seen: a 429 in an unrelated test). Numbered
 * by a counter in database 0, so parallel test files never pick the same one while the server
 * has more databases than the run has suites (ours: 1024; a server of the operator's: its own
 * count, 16 by default).
 */
async function suiteRedisUrl(): Promise<string> {
  const shared = inject("redisUrl");
  const redis = new Redis(shared, { lazyConnect: true, maxRetriesPerRequest: 2 });
  try {
    await redis.connect();
    const [, count] = (await redis.config("GET", "databases")) as [string, string];
    const n = await redis.incr("svc:test:suites");
    const url = new URL(shared);
    url.pathname = `/${1 + (n % (Number(count) - 1))}`;
    return url.toString();
  } finally {
    redis.disconnect();
  }
}

/**
 * The S3 pass (project e2e-s3 in vitest.config.ts sets SVC_TEST_STORAGE=s3): the suite stores its
 * blobs in a fresh bucket of its own on the run's RADOS Gateway (test-e2e/global-setup-s3.ts), so
 * files running side by side never see each other's objects. A test that names its own storage
 * in `env` keeps it.
 */
async function s3Env(name: string): Promise<Record<string, string>> {
  const s3 = inject("s3");
  const bucket = name.replaceAll("_", "-");
  // Loaded by the S3 pass only: about 0.4 s of CPU that every other test file would pay.
  const { CreateBucketCommand, S3Client } = await import("@aws-sdk/client-s3");
  const client = new S3Client({ endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials: { accessKeyId: s3.accessKey, secretAccessKey: s3.secretKey } });
  try {
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
  } finally {
    client.destroy();
  }
  return {
    SVC_STORAGE: "s3",
    SVC_STORAGE_S3_BUCKET: bucket,
    SVC_STORAGE_S3_ENDPOINT: s3.endpoint,
    SVC_STORAGE_S3_REGION: s3.region,
    SVC_STORAGE_S3_PATH_STYLE: "true",
    SVC_STORAGE_S3_ACCESS_KEY: s3.accessKey,
    SVC_STORAGE_S3_SECRET_KEY: s3.secretKey,
  };
}

/** A repository name of this test's own. */
export const freshName = (what: string) => `${what}-${randomBytes(4).toString("hex")}`;

/** A fresh database and store with the real services in front of the run's shared servers. */
export async function startSuite(opts: Partial<Pick<ServicesOptions, "env" | "args" | "services">> = {}): Promise<Suite> {
  const name = `t_${randomBytes(6).toString("hex")}`;
  const dataDir = join(inject("dataDir"), name);
  mkdirSync(dataDir, { recursive: true });
  const named = opts.env?.SVC_NATS_URL;
  const startNats = async (): Promise<Infra | undefined> => {
    if (named) return undefined;
    const natsDir = join(dataDir, "nats");
    mkdirSync(natsDir, { recursive: true });
    return startInfra({ dataDir: natsDir, log: () => {}, env: { SVC_DATABASE_URL: inject("adminDatabaseUrl"), SVC_REDIS_URL: inject("redisUrl") } });
  };
  // The suite's database, Redis database and NATS server, made side by side.
  const [databaseUrl, redisUrl, nats] = await Promise.all([createDatabase(inject("adminDatabaseUrl"), name, { template: inject("templateDatabase") }), suiteRedisUrl(), startNats()]);
  const natsUrl = named ?? nats!.natsUrl;
  let services: RunningServices;
  let bucket: string | undefined;
  try {
    const env = process.env.SVC_TEST_STORAGE === "s3" ? { ...(await s3Env(name)), ...opts.env } : opts.env;
    if (env?.SVC_STORAGE === "s3") bucket = env.SVC_STORAGE_S3_BUCKET;
    services = await startServices({ databaseUrl, redisUrl, natsUrl, dataDir, ...opts, env });
  } catch (err) {
    await nats?.stop();
    throw err;
  }

  // The services answer once they have started; the gateway is ready once each has connected
  // to its NATS too, which a suite's fresh NATS server may take a second more for (a connect
  // timing out on a busy machine is retried a second later). A test starts from a ready
  // deployment: up to 30 s for the gateway's /health/ready, and on regardless (a test of a
  // deployment that is never ready says so itself).
  if (!opts.services || opts.services.includes("gateway")) {
    for (const until = Date.now() + 30_000; Date.now() < until; await new Promise((r) => setTimeout(r, 200))) {
      const ready = await fetch(`${services.gatewayUrl}/health/ready`).then((r) => r.status === 200, () => false);
      if (ready) break;
    }
  }

  const entry = { services, refused: [] as string[] };
  running.add(entry);
  const stop = async () => {
    running.delete(entry);
    await services.stop();
    await nats?.stop();
  };

  const call = async (method: string, path: string, o: CallOptions = {}): Promise<Response> => {
    const headers: Record<string, string> = { ...o.headers };
    if (o.key !== undefined) headers["service-repository-key"] = o.key;
    let body: BodyInit | undefined;
    if (o.body instanceof Uint8Array || typeof o.body === "string" || o.body instanceof ReadableStream) body = o.body as BodyInit;
    else if (o.body !== undefined) {
      body = JSON.stringify(o.body);
      headers["content-type"] ??= "application/json";
    }
    const res = await fetch(`${services.gatewayUrl}${path}`, { method, headers, body, duplex: "half" } as RequestInit);
    // Kept for failureReport(): a refusal's body says why. Read from a copy before the test sees
    // the response, so an assertion failing right after this call finds it recorded.
    const length = Number(res.headers.get("content-length") ?? NaN);
    if (res.status >= 400 && method !== "HEAD" && length < 65536) {
      const text = await res.clone().text().catch((err: Error) => `(body unreadable: ${err.message})`);
      entry.refused.push(`${method} ${path} -> ${res.status}: ${text.slice(0, 300)}`);
      if (entry.refused.length > 10) entry.refused.shift();
    }
    return res;
  };

  const mint: Suite["mint"] = async (m = {}) => {
    const res = await call("POST", "/api/credentials", { key: services.bootstrapKey, body: { label: m.label, expires: m.expires } });
    if (res.status !== 201) throw new Error(`mint answered ${res.status}: ${await res.text()}`);
    const minted = (await res.json()) as { id: string; key: string };
    for (const g of m.grants ?? []) {
      const r = await call("POST", `/api/credentials/${minted.id}/grants`, { key: services.bootstrapKey, body: g });
      if (r.status !== 200) throw new Error(`grant answered ${r.status}: ${await r.text()}`);
    }
    return minted;
  };

  const createRepository: Suite["createRepository"] = async (name, format, key = services.bootstrapKey) => {
    const res = await call("POST", "/api/repositories", { key, body: { name, format } });
    if (res.status !== 201) throw new Error(`creating repository ${name} (${format}) answered ${res.status}: ${await res.text()}`);
  };

  const rawCall: Suite["rawCall"] = (method, path, headers = {}) => {
    const u = new URL(services.gatewayUrl);
    return new Promise((resolve, reject) => {
      const req = request({ host: u.hostname, port: u.port, method, path, headers }, (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (d) => (body += d));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on("error", reject);
      req.end();
    });
  };

  return { ...services, stop, databaseUrl, redisUrl, natsUrl, call, rawCall, mint, createRepository, bucket };
}
