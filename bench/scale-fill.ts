// Growing the data of a scale run: keys and files through the API (their rates are what is
// measured), group members through parallel API calls (set-up; their rate is printed too).
import { randomBytes } from "node:crypto";
import { inParallel, send, type Api } from "./scale-client.js";
import { log, SCALE_CONCURRENCY } from "./options.js";

export const REPOSITORY = "default";
export const GROUP = "scale";
const FILE_SIZE = 1024;
const body = randomBytes(FILE_SIZE);

/** What a run has made so far; every size adds to it. */
export interface ScaleData {
  keyIds: string[];
  /** Repository-relative paths of the uploaded files. */
  paths: string[];
  members: string[];
}

export const filePath = (i: number) => `scale/d${String(i % 100).padStart(2, "0")}/f${i}.bin`;
const memberId = (i: number) => `oidc/scale-${String(i).padStart(7, "0")}`;

/** Keys per second while minting from `data.keyIds.length` to `target`. */
export async function mintKeys(api: Api, data: ScaleData, target: number): Promise<number> {
  const from = data.keyIds.length;
  const n = target - from;
  log(`scale: minting ${n} keys (${from} -> ${target})`);
  const ids: string[] = new Array(n);
  const seconds = await inParallel(n, SCALE_CONCURRENCY, async (i) => {
    ids[i] = (await api<{ id: string }>("POST", "/api/credentials", { label: `scale-${from + i}` }, [201])).json.id;
  });
  data.keyIds.push(...ids);
  return n / seconds;
}

/** Files per second while uploading 1 KiB files through the gateway from `data.paths.length` to `target`. */
export async function uploadFiles(gatewayUrl: string, key: string, data: ScaleData, target: number): Promise<number> {
  const from = data.paths.length;
  const n = target - from;
  log(`scale: uploading ${n} files of ${FILE_SIZE} bytes (${from} -> ${target})`);
  const paths = Array.from({ length: n }, (_, i) => filePath(from + i));
  const headers = { "service-repository-key": key, "content-type": "application/octet-stream" };
  const seconds = await inParallel(n, SCALE_CONCURRENCY, async (i) => {
    const a = await send(`${gatewayUrl}/repository/${REPOSITORY}/${paths[i]}`, { method: "PUT", headers, body });
    if (a.status !== 200 && a.status !== 201) throw new Error(`PUT ${paths[i]} answered ${a.status}: ${a.text.slice(0, 300)}`);
  });
  data.paths.push(...paths);
  return n / seconds;
}

/** Members per second while adding people to the group from `data.members.length` to `target`. */
export async function addMembers(api: Api, data: ScaleData, target: number): Promise<number> {
  const from = data.members.length;
  const n = target - from;
  log(`scale: adding ${n} members to group ${GROUP} (${from} -> ${target})`);
  const ids = Array.from({ length: n }, (_, i) => memberId(from + i));
  const seconds = await inParallel(n, SCALE_CONCURRENCY, async (i) => {
    await api("POST", `/api/groups/${GROUP}/members`, { id: ids[i] }, [201]);
  });
  data.members.push(...ids);
  return n / seconds;
}

export const SMALL_FILE = filePath(0);
