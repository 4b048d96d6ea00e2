// Growing the data of a scale run. The bulk goes through internal paths, fast: keys (with a
// grant each) and group members straight into the auth service's tables, files straight into
// the path index (artifacts.artifacts) with their blobs written into the blob store's folder
// (blobs/sha256/<ab>/<hex>). A sample of keys and files goes through the API at every size:
// their rates are what is measured of minting and uploading, and the sample keys are real keys
// whose checks measure the lookup at that table's size.
import { createHash, randomBytes } from "node:crypto";
import pg from "pg";
import type { BlobStore } from "@svc/blobs";
import { inParallel, send, type Api } from "./scale-client.js";
import { log, SCALE_CONCURRENCY, SCALE_ROWS_PER_BLOB } from "./options.js";

export const REPOSITORY = "default";
export const GROUP = "scale";
export const FILE_SIZE = 1024;
/** Rows a bulk statement inserts at once. */
const BATCH = 50_000;

/** Paths of the bulk-filled files: 1000 folders, the number padded so byte order is numeric order within one. */
export const filePath = (i: number) => `scale/d${String(i % 1000).padStart(3, "0")}/f${String(i).padStart(8, "0")}.bin`;
/** The paths the API sample uploads, apart from the bulk ones. */
const uploadPath = (i: number) => `scale-api/f${String(i).padStart(8, "0")}.bin`;
/** A file the API stored (the warm-up's first): what the key checks GET. */
export const SMALL_FILE = uploadPath(0);

/** The bulk-filled content number `k`: 1 KiB, distinct per `k`, the same in every run. */
function blobContent(k: number): Buffer {
  const seed = createHash("sha256").update(`scale-blob-${k}`).digest();
  return Buffer.concat(Array.from({ length: FILE_SIZE / seed.length }, () => seed));
}

export interface Filled {
  /** Rows now in each table (bulk and API together for files and keys: the bulk counts what the API added). */
  keys: number;
  files: number;
  members: number;
  /** Distinct blobs behind the bulk-filled rows. */
  blobs: number;
  /** Seconds the bulk statements (and blob writes, and the analyze) took. */
  seconds: number;
  /** The suite's database on disk (every service's tables), in bytes. */
  databaseBytes: number;
}

/** Bulk rows so far, per table; the API sample adds rows beside them. */
export interface FillState {
  keys: number;
  files: number;
  members: number;
  blobs: string[];
}

export const newFillState = (): FillState => ({ keys: 0, files: 0, members: 0, blobs: [] });

/** Runs `statement(from, to)` for `from..to-1` in batches of `BATCH`. */
async function inBatches(from: number, to: number, statement: (a: number, b: number) => Promise<unknown>): Promise<void> {
  for (let a = from; a < to; a += BATCH) await statement(a, Math.min(to, a + BATCH));
}

/**
 * Grows every table to `size` rows counted with what is there already (the API sample's rows
 * count too), writing the blobs the new file rows point at first. A VACUUM ANALYZE at the end
 * does what autovacuum would do after so many inserts, so every size is measured with fresh
 * statistics rather than whenever autovacuum happened to come by.
 */
export async function bulkFill(db: pg.Client, blobs: Pick<BlobStore, "put" | "kind">, tenant: string, state: FillState, size: number): Promise<Filled> {
  const t0 = performance.now();
  const count = async (table: string, where = "") => Number((await db.query<{ n: string }>(`select count(*) as n from ${table} ${where}`)).rows[0]!.n);
  const keysNow = await count("auth.credentials");
  const filesNow = await count("artifacts.artifacts", `where repository = '${REPOSITORY}'`);
  const membersNow = await count("auth.memberships", `where group_name = '${GROUP}'`);

  const newKeys = Math.max(0, size - keysNow);
  log(`scale: ${newKeys} keys with a grant each into auth.credentials, auth.grants (${keysNow} -> ${keysNow + newKeys})`);
  // Filler keys are no key anyone holds: their id is the SHA-256 of a name, as a real key's is of the key.
  const keyId = `encode(sha256(convert_to('scale-filler-' || g, 'UTF8')), 'hex')`;
  await inBatches(state.keys, state.keys + newKeys, async (a, b) => {
    await db.query(`insert into auth.credentials (id, tenant, label) select ${keyId}, $1, 'scale filler' from generate_series($2::int, $3::int) g`, [tenant, a, b - 1]);
    await db.query(`insert into auth.grants (subject_kind, subject_id, scope, tokens) select 'key', ${keyId}, $1, '{read-only}' from generate_series($2::int, $3::int) g`, [REPOSITORY, a, b - 1]);
  });
  state.keys += newKeys;
  const took = (from: number) => `${((performance.now() - from) / 1000).toFixed(1)} s`;
  log(`scale: keys in ${took(t0)}`);
  const t1 = performance.now();

  const newMembers = Math.max(0, size - membersNow);
  log(`scale: ${newMembers} people into auth.principals and group ${GROUP} (${membersNow} -> ${membersNow + newMembers})`);
  const member = `'oidc/scale-' || lpad(g::text, 8, '0')`;
  await inBatches(state.members, state.members + newMembers, async (a, b) => {
    await db.query(`insert into auth.principals (id) select ${member} from generate_series($1::int, $2::int) g on conflict do nothing`, [a, b - 1]);
    await db.query(`insert into auth.memberships (group_name, principal_id) select $1, ${member} from generate_series($2::int, $3::int) g on conflict do nothing`, [GROUP, a, b - 1]);
  });
  state.members += newMembers;
  log(`scale: members in ${took(t1)}`);
  const t2 = performance.now();

  const newFiles = Math.max(0, size - filesNow);
  // Written through the suite's blob store itself (filesystem or S3), as the artifacts service would commit them.
  const blobsNeeded = Math.ceil((state.files + newFiles) / SCALE_ROWS_PER_BLOB);
  log(`scale: ${blobsNeeded - state.blobs.length} blobs into the ${blobs.kind} store, ${newFiles} rows into artifacts.artifacts (${filesNow} -> ${filesNow + newFiles}, ${SCALE_ROWS_PER_BLOB} rows per blob)`);
  // A few at once (an object store answers each PUT in milliseconds, not microseconds), kept in order.
  const from = state.blobs.length;
  const made = new Array<string>(Math.max(0, blobsNeeded - from));
  await inParallel(made.length, 8, async (i) => {
    made[i] = (await blobs.put(blobContent(from + i))).sha256;
  });
  state.blobs.push(...made);
  await inBatches(state.files, state.files + newFiles, async (a, b) => {
    // Row g points at blob floor(g / rows-per-blob): the digests go along as one array.
    const first = Math.floor(a / SCALE_ROWS_PER_BLOB);
    const digests = state.blobs.slice(first, Math.floor((b - 1) / SCALE_ROWS_PER_BLOB) + 1);
    await db.query(
      `insert into artifacts.artifacts (repository, path, size, sha256, content_type)
       select $1, 'scale/d' || lpad((g % 1000)::text, 3, '0') || '/f' || lpad(g::text, 8, '0') || '.bin', $2, ($3::text[])[g / $4::int - $5::int + 1], 'application/octet-stream'
       from generate_series($6::int, $7::int) g`,
      [REPOSITORY, FILE_SIZE, digests, SCALE_ROWS_PER_BLOB, first, a, b - 1],
    );
  });
  state.files += newFiles;
  log(`scale: blobs and files in ${took(t2)}`);
  const t3 = performance.now();
  for (const table of ["auth.credentials", "auth.grants", "auth.principals", "auth.memberships", "artifacts.artifacts"]) await db.query(`vacuum analyze ${table}`);
  log(`scale: vacuum analyze in ${took(t3)}`);
  return {
    keys: await count("auth.credentials"),
    files: await count("artifacts.artifacts", `where repository = '${REPOSITORY}'`),
    members: await count("auth.memberships", `where group_name = '${GROUP}'`),
    blobs: state.blobs.length,
    seconds: (performance.now() - t0) / 1000,
    databaseBytes: Number((await db.query<{ n: string }>("select pg_database_size(current_database()) as n")).rows[0]!.n),
  };
}

/** Real keys minted through the API, read-only on every repository: their rate, and the keys. */
export async function mintKeys(api: Api, n: number): Promise<{ perSecond: number; keys: string[] }> {
  log(`scale: minting ${n} keys through the API`);
  const minted: Array<{ id: string; key: string }> = new Array(n);
  const seconds = await inParallel(n, SCALE_CONCURRENCY, async (i) => {
    minted[i] = (await api<{ id: string; key: string }>("POST", "/api/credentials", { label: "scale-sample" }, [201])).json;
  });
  // The grants are set-up, not timed: a key check needs the key to be allowed its GET.
  await inParallel(n, SCALE_CONCURRENCY, async (i) => {
    await api("POST", `/api/credentials/${minted[i]!.id}/grants`, { scope: "*", tokens: ["read-only"] });
  });
  const keys = minted.map((m) => m.key);
  return { perSecond: n / seconds, keys };
}

const body = randomBytes(FILE_SIZE);
let uploaded = 0;

/** Files per second while uploading `n` 1 KiB files through the gateway. */
export async function uploadFiles(gatewayUrl: string, key: string, n: number): Promise<number> {
  log(`scale: uploading ${n} files of ${FILE_SIZE} bytes through the gateway`);
  const from = uploaded;
  uploaded += n;
  const headers = { "service-repository-key": key, "content-type": "application/octet-stream" };
  const seconds = await inParallel(n, SCALE_CONCURRENCY, async (i) => {
    const path = uploadPath(from + i);
    const a = await send(`${gatewayUrl}/repository/${REPOSITORY}/${path}`, { method: "PUT", headers, body });
    if (a.status !== 200 && a.status !== 201) throw new Error(`PUT ${path} answered ${a.status}: ${a.text.slice(0, 300)}`);
  });
  return n / seconds;
}

/** Members through the API (the warm-up: it makes the group). */
export async function addMembers(api: Api, n: number): Promise<void> {
  await inParallel(n, SCALE_CONCURRENCY, async (i) => {
    await api("POST", `/api/groups/${GROUP}/members`, { id: `oidc/scale-api-${i}` }, [201]);
  });
}
