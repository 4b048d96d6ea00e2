// The download pool against real upstream sockets: an HTTP server for the ordinary cases, a raw
// TCP server where the upstream has to misbehave in a precise way.
import { createHash, randomBytes } from "node:crypto";
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import { createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { DownloadPool, parseHead, type DownloadPoolOptions, type ResponseHead } from "./download-pool.js";

interface Outcome {
  head?: ResponseHead;
  body: Buffer;
  ended: boolean;
  unframed: boolean;
  error?: Error;
  headSent?: boolean;
  /** Most buffers lent out at once. */
  maxLent: number;
}

const servers: Array<HttpServer | NetServer> = [];
const pools: DownloadPool[] = [];

afterEach(async () => {
  for (const p of pools.splice(0)) p.close();
  for (const s of servers.splice(0)) {
    (s as HttpServer).closeAllConnections?.();
    await new Promise((r) => s.close(r));
  }
});

async function listen<T extends HttpServer | NetServer>(server: T): Promise<{ server: T; port: number }> {
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { server, port: (server.address() as AddressInfo).port };
}

function pool(port: number, options: Partial<DownloadPoolOptions> = {}): DownloadPool {
  const p = new DownloadPool({ host: "127.0.0.1", port, connections: 8, timeoutMs: 5_000, ...options });
  pools.push(p);
  return p;
}

const head = (path: string) => `GET ${path} HTTP/1.1\r\nhost: upstream\r\n\r\n`;

/** One GET; `hold` keeps each lent buffer this many ms before releasing it (a slow client). */
function get(p: DownloadPool, path: string, hold = 0, request: { head: string; body?: Buffer } = { head: head(path) }): { done: Promise<Outcome>; cancel: () => void } {
  const parts: Buffer[] = [];
  let lent = 0;
  const out: Outcome = { body: Buffer.alloc(0), ended: false, unframed: false, maxLent: 0 };
  let cancel: () => void = () => {};
  const done = new Promise<Outcome>((resolve) => {
    const finish = () => {
      out.body = Buffer.concat(parts);
      resolve(out);
    };
    cancel = p.request(request.head, {
      head: (h) => (out.head = h),
      data: (chunk, release) => {
        // Copied: the pool reuses the buffer once released.
        parts.push(Buffer.from(chunk));
        out.maxLent = Math.max(out.maxLent, ++lent);
        const give = () => {
          lent--;
          release();
        };
        if (hold) setTimeout(give, hold);
        else setImmediate(give);
      },
      end: () => {
        out.ended = true;
        finish();
      },
      unframed: () => {
        out.unframed = true;
        finish();
      },
      fail: (err, headSent) => {
        out.error = err;
        out.headSent = headSent;
        finish();
      },
    }, request.body);
  });
  return { done, cancel };
}

/** A PUT of `body` (a write whose body is in memory, as upload-forwarder.ts sends it). */
const put = (p: DownloadPool, path: string, body: Buffer) => get(p, path, 0, { head: `PUT ${path} HTTP/1.1\r\nhost: upstream\r\ncontent-length: ${body.length}\r\n\r\n`, body });

const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");

describe("parseHead", () => {
  it("reads status, headers in order and spelling, and the body length", () => {
    const h = parseHead("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nSet-Cookie: a=1\r\nset-cookie: b=2\r\nContent-Length: 12\r\nETag:  \"x\"  ");
    expect(h).toEqual({ status: 200, headers: ["Content-Type", "text/plain", "Set-Cookie", "a=1", "set-cookie", "b=2", "Content-Length", "12", "ETag", '"x"'], length: 12, keepAlive: true });
  });

  it("drops hop-by-hop headers and the ones Connection names", () => {
    const h = parseHead("HTTP/1.1 206 Partial Content\r\nConnection: keep-alive, X-Hop\r\nKeep-Alive: timeout=5\r\nX-Hop: 1\r\nX-End: 2\r\nContent-Length: 0");
    expect(h).toMatchObject({ status: 206, headers: ["X-End", "2", "Content-Length", "0"], length: 0, keepAlive: true });
  });

  it("knows when a connection may be kept", () => {
    expect(parseHead("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1")).toMatchObject({ keepAlive: false });
    expect(parseHead("HTTP/1.0 200 OK\r\nContent-Length: 1")).toMatchObject({ keepAlive: false });
    expect(parseHead("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 1")).toMatchObject({ keepAlive: true });
  });

  it("has no length for chunked or close-delimited bodies, and 0 for 204 and 304", () => {
    expect(parseHead("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked")).toMatchObject({ length: null, headers: [] });
    expect(parseHead("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5")).toMatchObject({ length: null });
    expect(parseHead("HTTP/1.1 200 OK\r\nX-A: 1")).toMatchObject({ length: null });
    expect(parseHead("HTTP/1.1 304 Not Modified\r\nETag: \"x\"")).toMatchObject({ length: 0 });
    expect(parseHead("HTTP/1.1 204 No Content")).toMatchObject({ length: 0 });
  });

  it("refuses what is not a well-formed HTTP/1.x head", () => {
    for (const text of [
      "HTTP/2 200",
      "ICY 200 OK",
      "HTTP/1.1 20 OK",
      "HTTP/1.1 200 OK\r\nno colon here",
      "HTTP/1.1 200 OK\r\n: empty name",
      "HTTP/1.1 200 OK\r\nBad Name: x",
      "HTTP/1.1 200 OK\r\n folded: line",
      "HTTP/1.1 200 OK\r\nContent-Length: -1",
      "HTTP/1.1 200 OK\r\nContent-Length: 1e3",
      "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2",
    ]) {
      expect(parseHead(text), text).toBeInstanceOf(Error);
    }
    expect(parseHead("HTTP/1.1 200 OK\r\nContent-Length: 7\r\nContent-Length: 7")).toMatchObject({ length: 7 });
  });
});

describe("DownloadPool", () => {
  const file = randomBytes(5 * 1024 * 1024 + 123);

  async function fileServer() {
    const connections: Socket[] = [];
    const { server, port } = await listen(
      createHttpServer((req, res) => {
        if (req.url === "/missing") {
          res.writeHead(404, { "content-type": "application/json", "content-length": "2" });
          return res.end("{}");
        }
        res.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(file.length), "x-end": "yes" });
        res.end(file);
      }),
    );
    server.on("connection", (s) => connections.push(s));
    return { server, port, connections };
  }

  it("streams a body whole and reuses the connection for the next request", async () => {
    const { port, connections } = await fileServer();
    const p = pool(port);
    for (let i = 0; i < 3; i++) {
      const out = await get(p, "/file").done;
      expect(out.error).toBeUndefined();
      expect(out.ended).toBe(true);
      expect(out.head).toMatchObject({ status: 200, length: file.length });
      expect(out.head!.headers).toEqual(expect.arrayContaining(["x-end", "yes"]));
      expect(sha(out.body)).toBe(sha(file));
    }
    const missing = await get(p, "/missing").done;
    expect(missing.head?.status).toBe(404);
    expect(missing.body.toString()).toBe("{}");
    expect(connections).toHaveLength(1);
  });

  it("reads a long answer whole into small read buffers too", async () => {
    const { port } = await fileServer();
    const out = await get(pool(port, { bufferBytes: 1024 }), "/file").done;
    expect(out.error).toBeUndefined();
    expect(out.ended).toBe(true);
    expect(sha(out.body)).toBe(sha(file));
  });

  it("stops reading while three buffers are out with a slow client, and loses nothing", async () => {
    const { port } = await fileServer();
    const out = await get(pool(port), "/file", 15).done;
    expect(out.ended).toBe(true);
    expect(sha(out.body)).toBe(sha(file));
    expect(out.maxLent).toBe(3);
  });

  it("opens no more connections than allowed: further requests wait their turn", async () => {
    const { port, connections } = await fileServer();
    const p = pool(port, { connections: 1 });
    const outs = await Promise.all([get(p, "/a").done, get(p, "/b").done, get(p, "/c").done]);
    for (const out of outs) expect(sha(out.body)).toBe(sha(file));
    expect(connections).toHaveLength(1);
  });

  it("hands back an answer it cannot delimit, without passing any of it on", async () => {
    const { port } = await listen(
      createHttpServer((_req, res) => {
        res.write("chunked ");
        res.end("body");
      }),
    );
    const out = await get(pool(port), "/chunked").done;
    expect(out).toMatchObject({ unframed: true, ended: false, body: Buffer.alloc(0) });
    expect(out.head).toBeUndefined();
  });

  /** A raw upstream: `answer` gets each request's head and the socket. */
  async function rawServer(answer: (request: string, socket: Socket, index: number) => void) {
    let connections = 0;
    const { port } = await listen(
      createNetServer((socket) => {
        const index = connections++;
        let text = "";
        socket.on("data", (d) => {
          text += d.toString("latin1");
          let end: number;
          while ((end = text.indexOf("\r\n\r\n")) >= 0) {
            const request = text.slice(0, end);
            text = text.slice(end + 4);
            answer(request, socket, index);
          }
        });
        socket.on("error", () => {});
      }),
    );
    return { port, connections: () => connections };
  }

  it("sends a request once more when a kept-alive connection turns out closed, before any answer", async () => {
    let answered = 0;
    const { port, connections } = await rawServer((_request, socket, index) => {
      // The first connection answers once, then drops the next request unanswered.
      if (index === 0 && answered > 0) return socket.destroy();
      answered++;
      socket.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    });
    const p = pool(port);
    expect((await get(p, "/1").done).body.toString()).toBe("ok");
    const second = await get(p, "/2").done;
    expect(second.error).toBeUndefined();
    expect(second.body.toString()).toBe("ok");
    expect(connections()).toBe(2);
  });

  it("sends a request's body after its head and reads the answer, on a kept-alive connection", async () => {
    const received: string[] = [];
    const { port } = await listen(
      createHttpServer((req, res) => {
        const parts: Buffer[] = [];
        req.on("data", (c: Buffer) => parts.push(c));
        req.on("end", () => {
          const got = Buffer.concat(parts);
          received.push(`${req.method} ${req.url} ${sha(got)}`);
          const answer = JSON.stringify({ bytes: got.length });
          res.writeHead(201, { "content-type": "application/json", "content-length": String(Buffer.byteLength(answer)) });
          res.end(answer);
        });
      }),
    );
    const p = pool(port);
    const bodies = [randomBytes(60_000), Buffer.from('{"name":"x"}')];
    for (const [i, body] of bodies.entries()) {
      const out = await put(p, `/w/${i}`, body).done;
      expect(out.error).toBeUndefined();
      expect(out.head?.status).toBe(201);
      expect(JSON.parse(out.body.toString())).toEqual({ bytes: body.length });
    }
    expect(received).toEqual(bodies.map((b, i) => `PUT /w/${i} ${sha(b)}`));
  });

  it("never sends a request with a body twice, even when a kept-alive connection turns out closed", async () => {
    let requests = 0;
    const { port, connections } = await rawServer((_request, socket, index) => {
      requests++;
      if (index === 0 && requests > 1) return socket.destroy();
      socket.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    });
    const p = pool(port);
    expect((await get(p, "/1").done).body.toString()).toBe("ok");
    const out = await put(p, "/2", Buffer.from("body")).done;
    expect(out.error).toBeInstanceOf(Error);
    expect(out.headSent).toBe(false);
    expect(requests).toBe(2);
    expect(connections()).toBe(1);
  });

  it("fails a request whose fresh connection closes unanswered, without sending it again", async () => {
    const { port, connections } = await rawServer((_request, socket) => socket.destroy());
    const out = await get(pool(port), "/x").done;
    expect(out.error).toBeInstanceOf(Error);
    expect(out.headSent).toBe(false);
    expect(connections()).toBe(1);
  });

  it("reports a body cut short as a failure after the head", async () => {
    const { port } = await rawServer((_request, socket) => {
      socket.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this much");
      setTimeout(() => socket.destroy(), 20);
    });
    const out = await get(pool(port), "/x").done;
    expect(out.head?.status).toBe(200);
    expect(out).toMatchObject({ ended: false, headSent: true });
    expect(out.body.toString()).toBe("only this much");
  });

  it("fails at once when the upstream is not there", async () => {
    const { server, port } = await listen(createNetServer());
    await new Promise((r) => server.close(r));
    servers.splice(servers.indexOf(server), 1);
    const out = await get(pool(port), "/x").done;
    expect(out.error).toMatchObject({ code: "ECONNREFUSED" });
    expect(out.headSent).toBe(false);
  });

  it("fails a request the upstream does not answer in time", async () => {
    const { port } = await rawServer(() => {});
    const out = await get(pool(port, { timeoutMs: 150 }), "/x").done;
    expect(out.error?.message).toMatch(/sent nothing for 150 ms/);
  });

  it("waits longer for an answer than it keeps a connection idle, when told to", async () => {
    const { port } = await rawServer((request, socket) => {
      const wait = request.startsWith("PUT /slow") ? 300 : 900;
      setTimeout(() => socket.write("HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok"), wait);
    });
    const p = pool(port, { timeoutMs: 100, answerTimeoutMs: 500 });
    const slow = await put(p, "/slow", Buffer.from("x")).done;
    expect(slow.error).toBeUndefined();
    expect(slow.head?.status).toBe(201);
    const tooSlow = await put(p, "/too-slow", Buffer.from("x")).done;
    expect(tooSlow.error?.message).toMatch(/sent nothing for 500 ms/);
  });

  it("refuses a malformed answer", async () => {
    const { port } = await rawServer((_request, socket) => socket.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nBad Header\r\n\r\nok"));
    const out = await get(pool(port), "/x").done;
    expect(out.error?.message).toMatch(/malformed response header/);
    expect(out.headSent).toBe(false);
  });

  it("reads a head that arrives in pieces, after an interim 100 Continue", async () => {
    const { port } = await rawServer((_request, socket) => {
      socket.write("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nX-A: 1\r");
      setTimeout(() => socket.write("\nContent-Le"), 20);
      setTimeout(() => socket.write("ngth: 5\r\n\r"), 40);
      setTimeout(() => socket.write("\nhel"), 60);
      setTimeout(() => socket.write("lo"), 80);
    });
    const out = await get(pool(port), "/x").done;
    expect(out.error).toBeUndefined();
    expect(out.head).toEqual({ status: 200, headers: ["X-A", "1", "Content-Length", "5"], length: 5 });
    expect(out.body.toString()).toBe("hello");
  });

  it("does not reuse a connection that sent more than its answer, or said close", async () => {
    const { port, connections } = await rawServer((request, socket) => {
      if (request.startsWith("GET /extra")) socket.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA");
      else socket.write("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok");
    });
    const p = pool(port);
    expect((await get(p, "/extra").done).body.toString()).toBe("ok");
    expect((await get(p, "/close").done).body.toString()).toBe("ok");
    expect((await get(p, "/extra").done).body.toString()).toBe("ok");
    expect(connections()).toBe(3);
  });

  it("closes the upstream connection when the caller gives up mid-body", async () => {
    const { port } = await fileServer();
    const closed = new Promise<void>((resolve) => {
      (servers[0] as HttpServer).on("connection", (s: Socket) => s.on("close", () => resolve()));
    });
    const p = pool(port);
    const parts: number[] = [];
    let cancel: () => void = () => {};
    cancel = p.request(head("/file"), {
      head: () => {},
      data: (chunk, release) => {
        parts.push(chunk.length);
        cancel();
        release();
      },
      end: () => parts.push(-1),
      unframed: () => {},
      fail: () => parts.push(-2),
    });
    await closed;
    expect(parts).toHaveLength(1);
  });
});
