import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import http, { type IncomingHttpHeaders } from "node:http";
import https from "node:https";
import { isIP, type LookupFunction } from "node:net";
import { Transform, type Readable } from "node:stream";
import { classifyAddress, describeVerdict } from "@svc/kit";

/** What an upstream answered: its status, headers and whole body. */
export interface UpstreamAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/**
 * The upstream could not be asked or did not answer (refused connection, timeout, an address
 * the rule refuses, a body cut short or too large): never a definite answer, never cached.
 */
export class UpstreamUnreachable extends Error {}

export interface UpstreamGetOptions {
  headers?: Record<string, string>;
  /** svc.block-private-import-hosts as it is now: only https on public addresses. */
  blockPrivate: boolean;
  timeoutMs?: number;
  maxBytes?: number;
  /** Sent only to the origin it was given for (dropped when a redirect leaves it). */
  authorization?: { origin: string; value: string };
}

const agents = { http: new http.Agent({ keepAlive: true, maxSockets: 64 }), https: new https.Agent({ keepAlive: true, maxSockets: 64 }) };

/** A DNS look-up that refuses, with the rule's reason, a name any of whose addresses is not public. */
const checkedLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
    if (err) return (callback as (e: Error | null, a: LookupAddress[]) => void)(err, []);
    const bad = addresses.map((a) => classifyAddress(a.address)).find((v) => !v.allowed);
    if (bad) return (callback as (e: Error | null, a: LookupAddress[]) => void)(new UpstreamUnreachable(`${hostname}: ${describeVerdict(bad)} (block-private-import-hosts is on)`), []);
    if (options.all) return (callback as (e: Error | null, a: LookupAddress[]) => void)(null, addresses);
    const first = addresses[0]!;
    return (callback as (e: Error | null, a: string, f: number) => void)(null, first.address, first.family);
  });
};

/** What an upstream answered, its body still arriving (a file streamed to the store as it comes). */
export interface UpstreamStream {
  status: number;
  headers: IncomingHttpHeaders;
  /** Fails with UpstreamUnreachable when it is cut short, stalls past the timeout or exceeds maxBytes. */
  body: Readable;
}

/**
 * GET of an upstream URL, following up to 3 redirects. With block-private-import-hosts on, only
 * https is asked, and the address is checked where the connection is made: the look-up refuses a
 * name resolving to a non-public address, an IP literal is judged as written, and the socket's
 * remote address is checked once connected (no second look-up can answer differently).
 */
export async function upstreamGet(url: string, opts: UpstreamGetOptions): Promise<UpstreamAnswer> {
  const answer = await upstreamStream(url, opts);
  const chunks: Buffer[] = [];
  for await (const chunk of answer.body) chunks.push(chunk as Buffer);
  return { status: answer.status, headers: answer.headers, body: Buffer.concat(chunks) };
}

/** upstreamGet with the body left to arrive: the caller reads it (or destroys it) at its own pace, in bounded memory. */
export async function upstreamStream(url: string, opts: UpstreamGetOptions): Promise<UpstreamStream> {
  let target = new URL(url);
  for (let hop = 0; ; hop++) {
    const answer = await once(target, opts).catch((err: unknown) => {
      // A kept-alive connection the upstream closed as it was reused (its idle timeout): asked again once, on another.
      if (err instanceof ReusedConnectionClosed) return once(target, opts);
      throw err;
    });
    const location = answer.headers.location;
    if (answer.status >= 300 && answer.status < 400 && answer.status !== 304 && location && hop < 3) {
      answer.body.resume();
      target = new URL(location, target);
      continue;
    }
    return answer;
  }
}

/** The request went out on a kept-alive connection that the upstream had closed, before any answer: safe to ask again (a GET). */
class ReusedConnectionClosed extends UpstreamUnreachable {}

function once(target: URL, opts: UpstreamGetOptions): Promise<UpstreamStream> {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const maxBytes = opts.maxBytes ?? 512 * 1024 * 1024;
  return new Promise((resolve, reject) => {
    const fail = (why: string) => reject(new UpstreamUnreachable(`${target.origin}: ${why}`));
    if (target.protocol !== "https:" && target.protocol !== "http:") return fail("not an http(s) URL");
    if (opts.blockPrivate && target.protocol !== "https:") return fail("plain http is refused (block-private-import-hosts is on)");
    const host = target.hostname.replace(/^\[|\]$/g, "");
    if (opts.blockPrivate && isIP(host)) {
      const v = classifyAddress(host);
      if (!v.allowed) return fail(`${describeVerdict(v)} (block-private-import-hosts is on)`);
    }
    const headers: Record<string, string> = { "user-agent": "svc-artifacts-proxy", ...opts.headers };
    if (opts.authorization && opts.authorization.origin === target.origin) headers.authorization = opts.authorization.value;
    const lib = target.protocol === "https:" ? https : http;
    const req = lib.request(target, { method: "GET", headers, agent: target.protocol === "https:" ? agents.https : agents.http, ...(opts.blockPrivate ? { lookup: checkedLookup } : {}) }, (res) => {
      // The body as it arrives, counted: past maxBytes, cut short or stalled, it fails with the reason.
      let size = 0;
      const body = new Transform({
        transform(chunk: Buffer, _enc, cb) {
          size += chunk.length;
          if (size > maxBytes) return cb(new UpstreamUnreachable(`${target.origin}: the answer is larger than ${maxBytes} bytes`));
          cb(null, chunk);
        },
      });
      body.on("error", () => req.destroy());
      res.on("aborted", () => body.destroy(new UpstreamUnreachable(`${target.origin}: the answer was cut short`)));
      res.on("error", (err) => body.destroy(err instanceof UpstreamUnreachable ? err : new UpstreamUnreachable(`${target.origin}: the answer was cut short (${err.message})`)));
      req.on("error", (err) => body.destroy(err instanceof UpstreamUnreachable ? err : new UpstreamUnreachable(`${target.origin}: ${err.message}`)));
      res.pipe(body);
      resolve({ status: res.statusCode ?? 502, headers: res.headers, body });
    });
    req.setTimeout(timeoutMs, () => req.destroy(new UpstreamUnreachable(`${target.origin}: no answer within ${timeoutMs} ms`)));
    req.on("socket", (socket) => {
      if (!opts.blockPrivate) return;
      const check = () => {
        const remote = socket.remoteAddress;
        const v = remote ? classifyAddress(remote) : undefined;
        if (!v || !v.allowed) req.destroy(new UpstreamUnreachable(`${target.origin}: connected to ${v ? describeVerdict(v) : "an unknown address"} (block-private-import-hosts is on)`));
      };
      if (socket.remoteAddress) check();
      else socket.once("connect", check);
    });
    req.on("error", (err: NodeJS.ErrnoException) => {
      if (err instanceof UpstreamUnreachable) return reject(err);
      const Failure = req.reusedSocket && (err.code === "ECONNRESET" || err.code === "EPIPE") ? ReusedConnectionClosed : UpstreamUnreachable;
      reject(new Failure(`${target.origin}: ${err.message}`));
    });
    req.end();
  });
}
