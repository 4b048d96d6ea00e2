import { readdirSync, readFileSync, statSync } from "node:fs";
import { extname, join } from "node:path";
import type { FastifyInstance } from "fastify";
import { SECURITY_HEADERS } from "./console-http.js";

const TYPES: Record<string, string> = {
  ".css": "text/css; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
};

/** Every file of a folder (not its subfolders) with a type we serve, read once at start: the console's assets are few and small. */
function readFolder(dir: string): Map<string, { type: string; body: Buffer }> {
  const out = new Map<string, { type: string; body: Buffer }>();
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of names) {
    const type = TYPES[extname(name)];
    const file = join(dir, name);
    if (type && statSync(file).isFile()) out.set(name, { type, body: readFileSync(file) });
  }
  return out;
}

/**
 * The console's own files (no CDN, nothing fetched from elsewhere): its stylesheet and script at
 * /ui/assets/<file>, the pages' scripts at /ui/assets/pages/<file>.
 */
export function assetRoutes(app: FastifyInstance, dirs: { core: string; pages: string }): void {
  const folders = { core: readFolder(dirs.core), pages: readFolder(dirs.pages) };
  const serve = (folder: keyof typeof folders) => async (req: { params: unknown }, reply: import("fastify").FastifyReply) => {
    const asset = folders[folder].get((req.params as { file: string }).file);
    if (!asset) return reply.code(404).type("text/plain; charset=utf-8").send("no such console file\n");
    return reply.headers(SECURITY_HEADERS).header("cache-control", "public, max-age=300").type(asset.type).send(asset.body);
  };
  app.get("/ui/assets/:file", serve("core"));
  // Browsers ask for /favicon.ico on their own; the console's icon is an SVG (pages also link it).
  app.get("/favicon.ico", async (_req, reply) => {
    const icon = folders.core.get("favicon.svg");
    if (!icon) return reply.code(404).type("text/plain; charset=utf-8").send("no such console file\n");
    return reply.headers(SECURITY_HEADERS).header("cache-control", "public, max-age=86400").type(icon.type).send(icon.body);
  });
  app.get("/ui/assets/pages/:file", serve("pages"));
}
