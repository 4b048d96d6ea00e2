import Fastify from "fastify";
import send from "@fastify/send";
import { createReadStream } from "node:fs";
const mode = process.argv[2];
const app = Fastify();
app.get("/f", async (req, reply) => {
  if (mode === "raw") { reply.header("content-length", 268435456); return reply.send(createReadStream("/work/main/.data/bench-dev/suite/store/repositories/default/bench/large-256m.bin")); }
  const r = await send(req.raw, "large-256m.bin", { root: "/work/main/.data/bench-dev/suite/store/repositories/default/bench", acceptRanges: true, etag: true, lastModified: true, cacheControl: false, index: false, dotfiles: "allow", highWaterMark: Number(process.argv[3]) });
  reply.code(r.statusCode).headers(r.headers as any);
  return reply.send(r.stream);
});
await app.listen({ port: 18997, host: "127.0.0.1" });
