// Storing the two bench files through the gateway and checking a target serves them whole.
import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { Agent, request } from "undici";
import { LARGE_SIZE } from "./options.js";

const dispatcher = new Agent({ keepAliveTimeout: 30_000, connections: 4 });

export const closeDispatcher = () => dispatcher.close();

export async function put(url: string, key: string, body: Buffer | Readable, size: number): Promise<void> {
  const res = await request(url, {
    method: "PUT",
    headers: { "service-repository-key": key, "content-type": "application/octet-stream", "content-length": String(size) },
    body,
    dispatcher,
  });
  const text = await res.body.text();
  if (res.statusCode !== 200 && res.statusCode !== 201) throw new Error(`PUT ${url} answered ${res.statusCode}: ${text.slice(0, 300)}`);
}

/** 256 MiB produced 1 MiB at a time: never held in memory. */
export function largeBody(): Readable {
  const chunk = randomBytes(1024 * 1024);
  let left = LARGE_SIZE;
  return Readable.from(
    (function* () {
      while (left > 0) {
        const n = Math.min(left, chunk.length);
        left -= n;
        yield n === chunk.length ? chunk : chunk.subarray(0, n);
      }
    })(),
    { objectMode: false },
  );
}

export async function check(label: string, url: string, headers: Record<string, string>, size: number): Promise<void> {
  const res = await request(url, { headers, dispatcher });
  let n = 0;
  for await (const c of res.body) n += (c as Buffer).length;
  if (res.statusCode !== 200 || n !== size) throw new Error(`${label}: GET ${url} answered ${res.statusCode} with ${n} bytes (expected 200, ${size})`);
}
