// The large-file client, as its own small process (bench/run.ts starts it).
//
// It measures the servers, so it takes as little of the machine as it can: client, gateway and
// artifacts service share two cores here, and every cycle the client spends is a cycle the
// three-process gateway path cannot use (the two-process direct path has a core to spare). An
// HTTP client library allocates a buffer per socket read and runs a parser over every byte; this
// one reads the whole body into one reused buffer (`onread`) and only counts it: one plain
// HTTP/1.1 GET per connection, status line and Content-Length read from the response head.
// (undici here took about 0.45 ms of CPU per MB, this about a third of that: see the CPU table.)
//
// Protocol: one JSON request per line on stdin, `{ id, url, headers }`; one JSON answer per line
// on stdout, `{ id, status, bytes, seconds }` or `{ id, error }`. The body is counted and dropped.
import { connect } from "node:net";
import { createInterface } from "node:readline";

const buffer = Buffer.allocUnsafe(1024 * 1024);
const HEAD_LIMIT = 64 * 1024;

interface Downloaded {
  status: number;
  bytes: number;
  seconds: number;
  /** A redirect's Location (3xx): the body is not read. */
  location?: string;
}

function download(url: string, headers: Record<string, string>): Promise<Downloaded> {
  const u = new URL(url);
  if (u.protocol !== "http:") return Promise.reject(new Error(`only http:// URLs, not ${u.protocol}`));
  const lines = [`GET ${u.pathname}${u.search} HTTP/1.1`, `Host: ${u.host}`, "Connection: close", ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let head = "";
    let status = 0;
    let length = -1;
    let bytes = 0;
    let location: string | undefined;
    let settled = false;
    const finish = (err?: Error) => {
      if (settled) return;
      settled = true;
      socket.destroy();
      if (err) reject(err);
      else resolve({ status, bytes, seconds: (performance.now() - t0) / 1000, ...(location !== undefined ? { location } : {}) });
    };
    const socket = connect({
      host: u.hostname,
      port: Number(u.port || 80),
      onread: {
        buffer,
        callback: (n: number, buf: Uint8Array) => {
          if (length < 0) {
            head += Buffer.from(buf.buffer, buf.byteOffset, n).toString("latin1");
            const end = head.indexOf("\r\n\r\n");
            if (end < 0) {
              if (head.length > HEAD_LIMIT) finish(new Error("no end of the response head"));
              return true;
            }
            status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0);
            if (status >= 300 && status < 400) {
              // A redirect (svc.storage.s3.redirect, distribution's S3 driver): followed by the caller, its body never read.
              location = /\r\nlocation:\s*([^\r\n]+)/i.exec(head.slice(0, end))?.[1]?.trim();
              if (location === undefined) finish(new Error(`status ${status} without Location`));
              else finish();
              return false;
            }
            const cl = /\r\ncontent-length:\s*(\d+)/i.exec(head.slice(0, end));
            if (!cl) {
              finish(new Error(`status ${status} without Content-Length`));
              return false;
            }
            length = Number(cl[1]);
            bytes = head.length - (end + 4);
          } else {
            bytes += n;
          }
          if (bytes >= length) finish();
          return true;
        },
      },
    });
    socket.once("connect", () => socket.write(`${lines.join("\r\n")}\r\n\r\n`));
    socket.once("error", (err) => finish(err));
    socket.once("close", () => finish(length >= 0 && bytes >= length ? undefined : new Error(`connection closed after ${bytes} of ${length} body bytes`)));
  });
}

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const { id, url, headers } = JSON.parse(line) as { id: number; url: string; headers: Record<string, string> };
  let answer: object;
  try {
    // Redirects followed (at most 3), as a container client follows a registry's 307 to its
    // bucket: credentials stay with their host name (as Go's client keeps them), and the time
    // counted is the whole chain's.
    let got = await download(url, headers);
    let seconds = got.seconds;
    let at = url;
    for (let hops = 0; got.location !== undefined; hops++) {
      if (hops === 3) throw new Error(`more than 3 redirects from ${url}`);
      const next = new URL(got.location, at);
      got = await download(next.href, next.hostname === new URL(at).hostname ? headers : {});
      seconds += got.seconds;
      at = next.href;
    }
    answer = { id, status: got.status, bytes: got.bytes, seconds };
  } catch (err) {
    answer = { id, error: err instanceof Error ? err.message : String(err) };
  }
  process.stdout.write(`${JSON.stringify(answer)}\n`);
}
