// The large-file client, as its own small process (bench/run.ts starts it). In the bench process
// itself every download would pay for that process's big heap (autocannon's figures, the
// services' output): V8 runs a full GC for about every 64 MB of received buffers, and a full GC
// costs in proportion to the heap. A lean client takes fewer cycles from the cores it shares.
//
// Protocol: one JSON request per line on stdin, `{ id, url, headers }`; one JSON answer per line
// on stdout, `{ id, status, bytes, seconds }` or `{ id, error }`. The body is counted and dropped.
import { createInterface } from "node:readline";
import { Agent, request } from "undici";

const dispatcher = new Agent({ keepAliveTimeout: 30_000, connections: 4 });

async function download(url: string, headers: Record<string, string>): Promise<{ status: number; bytes: number; seconds: number }> {
  const t0 = performance.now();
  const res = await request(url, { headers, dispatcher });
  const bytes = await new Promise<number>((resolve, reject) => {
    let n = 0;
    res.body.on("data", (c: Buffer) => (n += c.length));
    res.body.once("end", () => resolve(n));
    res.body.once("error", reject);
  });
  return { status: res.statusCode, bytes, seconds: (performance.now() - t0) / 1000 };
}

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const { id, url, headers } = JSON.parse(line) as { id: number; url: string; headers: Record<string, string> };
  let answer: object;
  try {
    answer = { id, ...(await download(url, headers)) };
  } catch (err) {
    answer = { id, error: err instanceof Error ? err.message : String(err) };
  }
  process.stdout.write(`${JSON.stringify(answer)}\n`);
}
await dispatcher.close();
