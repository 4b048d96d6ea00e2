// HTTP for the scale run: one keep-alive agent, JSON in and out, every call timed; and the
// parallel loop that fills the rows.
import { Agent, request } from "undici";

const agent = new Agent({ connections: 32, keepAliveTimeout: 30_000 });

export const closeScaleAgent = () => agent.close();

export interface Answer {
  status: number;
  text: string;
  headers: Record<string, string | string[] | undefined>;
  /** From sending the request to the last byte of the answer. */
  ms: number;
}

export async function send(url: string, init: { method?: string; headers?: Record<string, string>; body?: Buffer | string } = {}): Promise<Answer> {
  const t0 = performance.now();
  const res = await request(url, { method: (init.method ?? "GET") as "GET", headers: init.headers, body: init.body, dispatcher: agent });
  const text = await res.body.text();
  return { status: res.statusCode, text, headers: res.headers, ms: performance.now() - t0 };
}

/** The gateway's API with one key: bodies as JSON; a status not in `expect` throws with the answer's text. */
export function apiClient(gatewayUrl: string, key: string) {
  return async function api<T = unknown>(method: string, path: string, body?: unknown, expect: number[] = [200, 201, 202, 204]): Promise<Answer & { json: T }> {
    const headers: Record<string, string> = { "service-repository-key": key };
    if (body !== undefined) headers["content-type"] = "application/json";
    const a = await send(gatewayUrl + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    if (!expect.includes(a.status)) throw new Error(`${method} ${path} answered ${a.status}: ${a.text.slice(0, 300)}`);
    return { ...a, json: (a.text ? JSON.parse(a.text) : undefined) as T };
  };
}
export type Api = ReturnType<typeof apiClient>;

/** Runs `fn(0..count-1)` with `concurrency` calls in flight; resolves to the seconds it took. */
export async function inParallel(count: number, concurrency: number, fn: (i: number) => Promise<void>): Promise<number> {
  const t0 = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < count) await fn(next++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  return (performance.now() - t0) / 1000;
}

export const median = (xs: number[]): number => quantile(xs, 0.5);

export function quantile(xs: number[], q: number): number {
  if (xs.length === 0) return NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/** Milliseconds of each of `times` calls, one after another. */
export async function timings(times: number, fn: () => Promise<Answer>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < times; i++) out.push((await fn()).ms);
  return out;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
