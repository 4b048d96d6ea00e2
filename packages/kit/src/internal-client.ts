import type { IncomingHttpHeaders } from "node:http";
import { Pool } from "undici";
import { encodePrincipal } from "@svc/contracts";
import { bodyDigest, identitySigner } from "./identity.js";
import { settlesWithin } from "./settles-within.js";
import { upstreamAddress } from "./upstream-address.js";

export interface InternalClientOptions {
  /** The upstream's origin, or `unix:/path.sock` (a path on an origin is ignored: every call names its own). */
  baseUrl: string;
  /** Names the upstream in errors, e.g. "auth service". */
  service: string;
  internalSecret: string;
  /** The system principal this caller signs as: `system:<tenant>:<caller>`. */
  tenant: string;
  caller: string;
  /** Keep-alive connections to the upstream; 4 unless set. */
  connections?: number;
  /** Waiting for the answer's headers, and then between body chunks; 10 s unless set. */
  timeoutMs?: number;
}

export interface InternalCall {
  /** Sent as JSON. */
  body?: unknown;
  /** Statuses answered as a value; any other is thrown. Every 2xx unless set. */
  expect?: readonly number[];
  timeoutMs?: number;
}

export interface InternalAnswer<T> {
  status: number;
  /** The parsed JSON body; undefined when the answer has none (a 204, say). */
  body: T;
  headers: IncomingHttpHeaders;
}

/**
 * Everything an internal call can fail with: a status the caller did not expect (`status` set),
 * no answer in time, a refused connection, a body that is not JSON (`status` unset). The
 * message names the service, method and path, never the signature or the secret.
 */
export class InternalCallError extends Error {
  constructor(
    message: string,
    readonly status: number | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "InternalCallError";
  }
}

const isSuccess = (status: number) => status >= 200 && status < 300;

/** How long close() waits for calls under way before it cuts them. */
const CLOSE_WAIT_MS = 2000;

/**
 * The one client services use to call each other's internal routes: an undici Pool with
 * keep-alive, every request signed as a system principal over the exact path it sends
 * (query included), JSON in and out. An expected status is a value; everything else throws
 * an InternalCallError, so each caller decides once whether to fail open or closed.
 */
export function internalClient(o: InternalClientOptions) {
  const timeout = o.timeoutMs ?? 10_000;
  const upstream = upstreamAddress(o.baseUrl);
  const pool = new Pool(upstream.origin, { socketPath: upstream.socketPath, connections: o.connections ?? 4, keepAliveTimeout: 60_000, headersTimeout: timeout, bodyTimeout: timeout });
  const sign = identitySigner(o.internalSecret);
  const principal = encodePrincipal({ kind: "system", tenant: o.tenant, id: o.caller });

  const call = async <T>(method: "GET" | "POST" | "PUT" | "DELETE", path: string, c: InternalCall = {}): Promise<InternalAnswer<T>> => {
    const where = `${method} ${path.split("?", 1)[0]}`;
    const headers: Record<string, string> = {};
    const payload = c.body === undefined ? undefined : JSON.stringify(c.body);
    // The content type is signed, so it is set first; the signature binds the body's digest.
    if (payload !== undefined) headers["content-type"] = "application/json";
    sign(headers, method, path, principal, payload === undefined ? undefined : bodyDigest(payload));
    let status: number;
    let text: string;
    let answerHeaders: IncomingHttpHeaders;
    try {
      const res = await pool.request({
        method,
        path,
        headers,
        body: payload,
        ...(c.timeoutMs !== undefined ? { headersTimeout: c.timeoutMs, bodyTimeout: c.timeoutMs } : {}),
      });
      status = res.statusCode;
      answerHeaders = res.headers;
      text = await res.body.text();
    } catch (err) {
      throw new InternalCallError(`${o.service} did not answer ${where}: ${(err as Error).message}`, undefined, { cause: err });
    }
    if (!(c.expect ? c.expect.includes(status) : isSuccess(status))) {
      throw new InternalCallError(`${o.service} answered ${status} to ${where}: ${text.slice(0, 300)}`, status);
    }
    // An expected refusal (a 404 the caller asked for) may come as plain text: its body is not the
    // caller's document, only its status is.
    if (!isSuccess(status) && !/json/i.test(String(answerHeaders["content-type"] ?? ""))) return { status, body: undefined as T, headers: answerHeaders };
    let body: T;
    try {
      body = (text ? JSON.parse(text) : undefined) as T;
    } catch (err) {
      throw new InternalCallError(`${o.service} answered ${where} with a body that is not JSON`, undefined, { cause: err });
    }
    return { status, body, headers: answerHeaders };
  };

  return {
    call,
    get: <T>(path: string, c?: Omit<InternalCall, "body">) => call<T>("GET", path, c),
    post: <T>(path: string, body: unknown, c?: Omit<InternalCall, "body">) => call<T>("POST", path, { ...c, body }),
    /**
     * Lets calls under way finish for up to CLOSE_WAIT_MS, then cuts the rest. A shutting-down
     * service has answered its own requests by then; what is left are its background reads, and
     * one to a peer already gone can wait out a name lookup that never answers (seen in pods:
     * getaddrinfo EAI_AGAIN for a stopped pod's name), which held the whole shutdown past its grace.
     */
    close: async (): Promise<void> => {
      if (!(await settlesWithin(pool.close(), CLOSE_WAIT_MS))) await pool.destroy();
    },
  };
}

export type InternalClient = ReturnType<typeof internalClient>;
