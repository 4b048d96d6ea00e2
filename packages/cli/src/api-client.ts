import { CliError, EXIT } from "./cli-errors.js";

export interface ApiClientOptions {
  /** The gateway's base URL, e.g. http://127.0.0.1:8080 (no trailing slash needed). */
  baseUrl: string;
  /** Sent as Service-Repository-Key; never printed. */
  key: string | undefined;
}

export interface RequestOptions {
  query?: Record<string, string | number | undefined>;
  /** An object is sent as JSON; a stream or bytes as they are. */
  body?: unknown;
  headers?: Record<string, string>;
}

/** A page of a paged list: its items and the `after` cursor of the next page, if more remain. */
export interface Page<T> {
  items: T[];
  next: string | null;
}

const PROBLEM_READ_LIMIT = 64 * 1024;

/**
 * The one place the client talks HTTP: every call sends the key, and every answer that is not
 * a success becomes a CliError carrying the server's reason (4xx) or its failure reference (5xx).
 */
export function apiClient(opts: ApiClientOptions) {
  // A user name and password in the address (a reverse proxy's Basic sign-in) are sent as an
  // Authorization header, never as part of a URL: fetch refuses such URLs, and every URL the
  // client prints must be free of them.
  const given = new URL(opts.baseUrl);
  const basic = given.username || given.password ? Buffer.from(`${decodeURIComponent(given.username)}:${decodeURIComponent(given.password)}`).toString("base64") : undefined;
  const base = withoutCredentials(opts.baseUrl).replace(/\/+$/, "");

  const urlOf = (path: string, query?: RequestOptions["query"]): string => {
    const u = new URL(base + path);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== "") u.searchParams.set(k, String(v));
    return u.toString();
  };

  async function request(method: string, path: string, o: RequestOptions = {}): Promise<Response> {
    const url = urlOf(path, o.query);
    const headers: Record<string, string> = { accept: "application/json", ...o.headers };
    if (basic) headers.authorization = `Basic ${basic}`;
    if (opts.key) headers["service-repository-key"] = opts.key;
    let body: BodyInit | undefined;
    if (o.body instanceof ReadableStream || o.body instanceof Uint8Array || typeof o.body === "string") body = o.body as BodyInit;
    else if (o.body !== undefined) {
      body = JSON.stringify(o.body);
      headers["content-type"] = "application/json";
    }
    let res: Response;
    try {
      res = await fetch(url, { method, headers, body, duplex: "half", redirect: "manual" } as RequestInit);
    } catch (err) {
      throw unreachable(url, err);
    }
    if (res.status >= 400) throw await failureOf(method, path, res);
    // A redirect is never followed (the key would go wherever it points) and never a success
    // (its body is not the answer asked for): usually the address names the wrong scheme or path.
    if (res.status >= 300) throw redirected(method, path, res);
    return res;
  }

  async function json<T>(method: string, path: string, o: RequestOptions = {}): Promise<T> {
    const res = await request(method, path, o);
    if (res.status === 204) return undefined as T;
    const text = await res.text();
    return (text ? JSON.parse(text) : undefined) as T;
  }

  /** One page of a list; `items` picks the list out of an answer that wraps it (GET /api/audit's `entries`). */
  async function page<T>(path: string, query: RequestOptions["query"], items: (body: unknown) => T[] = (body) => body as T[]): Promise<Page<T>> {
    const res = await request("GET", path, { query });
    return { items: items(await res.json()), next: res.headers.get("x-next-cursor") };
  }

  /** Every item of a paged list, one page after another (pages of 500, the most the server gives). */
  async function all<T>(path: string, query: RequestOptions["query"] = {}, pick?: (body: unknown) => T[]): Promise<T[]> {
    const items: T[] = [];
    let after: string | undefined;
    do {
      const p = await page<T>(path, { ...query, limit: 500, after }, pick);
      items.push(...p.items);
      after = p.next ?? undefined;
    } while (after);
    return items;
  }

  return { baseUrl: base, urlOf, request, json, page, all };
}

export type ApiClient = ReturnType<typeof apiClient>;

/** A URL as it may be printed: without a user name or password. */
export function withoutCredentials(url: string): string {
  try {
    const u = new URL(url);
    if (!u.username && !u.password) return url;
    u.username = "";
    u.password = "";
    return u.toString();
  } catch {
    return url.replace(/\/\/[^/@]*@/, "//");
  }
}

/** A 3xx answer: where it pointed (without credentials) and what to change. */
export function redirected(method: string, path: string, res: Response): CliError {
  res.body?.cancel().catch(() => {});
  const location = res.headers.get("location");
  const to = location ? ` to ${withoutCredentials(location)}` : "";
  return new CliError(
    `Refused (${res.status}) ${method} ${path.split("?")[0]}: the server answered with a redirect${to}, which the client does not follow (it would send the key there). Check the server address (--url or SVC_URL).`,
    EXIT.refused,
  );
}

/** Names the URL that could not be reached and why, in the words of the network layer. */
export function unreachable(url: string, err: unknown): CliError {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  const why = cause?.code ?? cause?.message ?? (err as Error).message;
  return new CliError(`Could not reach ${withoutCredentials(url)} (${withoutCredentials(String(why))}). Check the server address (--url or SVC_URL).`, EXIT.unreachable);
}

interface ProblemLike {
  title?: unknown;
  detail?: unknown;
  reference?: unknown;
  error?: unknown;
  message?: unknown;
}

/**
 * The server's answer to a call it did not complete, as one sentence. A refusal (4xx) says the
 * server's reason (the problem document's title and detail); an unexpected failure (5xx) ends
 * with `Reference: <reference>`, the string the operator finds in the server's log.
 */
export async function failureOf(method: string, path: string, res: Response): Promise<CliError> {
  const text = await readBounded(res);
  let doc: ProblemLike = {};
  try {
    const parsed = JSON.parse(text) as unknown;
    if (parsed && typeof parsed === "object") doc = parsed as ProblemLike;
  } catch {
    // Plain text (a proxy in between, or an artifact route): read as it is.
  }
  const str = (v: unknown) => (typeof v === "string" && v.trim() ? v.trim() : undefined);
  const title = str(doc.title) ?? str(doc.error) ?? str(doc.message) ?? (text.trim() && !text.trimStart().startsWith("<") ? text.trim().slice(0, 300) : undefined);
  const detail = str(doc.detail);
  const where = `${method} ${path.split("?")[0]}`;
  if (res.status >= 500) {
    const reference = str(doc.reference) ?? /Reference: ([A-Za-z0-9]{12})/.exec(text)?.[1];
    const what = title && !/^Unexpected failure/.test(title) ? `${res.status} ${title}` : String(res.status);
    if (reference) return new CliError(`The server failed unexpectedly while ${where} (${what}). Reference: ${reference}`, EXIT.unexpected);
    return new CliError(`The server failed unexpectedly while ${where} (${what}) and gave no reference; look for ${where} in its log.`, EXIT.unexpected);
  }
  const reason = [title, detail && detail !== title ? detail : undefined].filter(Boolean).join(": ") || res.statusText || "no reason given";
  const hint = res.status === 401 ? " (no key, or one the server does not accept: give one with SVC_KEY or --key-file)" : "";
  return new CliError(`Refused (${res.status}) ${where}: ${reason}${hint}`, EXIT.refused);
}

async function readBounded(res: Response): Promise<string> {
  if (!res.body) return "";
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < PROBLEM_READ_LIMIT) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } catch {
    // A body cut short still says what it said so far.
  } finally {
    reader.cancel().catch(() => {});
  }
  return Buffer.concat(chunks).toString("utf8").slice(0, PROBLEM_READ_LIMIT);
}
