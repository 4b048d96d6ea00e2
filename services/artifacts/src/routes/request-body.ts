import { Readable } from "node:stream";
import type { FastifyRequest } from "fastify";
import { readWhole } from "@svc/kit";

/**
 * A format's small request body (an npm document, a checksum, maven-metadata.xml), read whole
 * from the body fastify hands over: kit's service.ts checks that one against the gateway's
 * signature and fails it when they differ, so a body changed on its way here is refused (401)
 * before anything is stored. Never `req.raw`, which the check does not guard. A request without
 * a body reads as empty; past `limit`, `tooLarge` is thrown (the rest of the body is dropped).
 */
export async function readBody(req: FastifyRequest, limit: number, tooLarge: () => Error): Promise<Buffer> {
  if (!(req.body instanceof Readable)) return Buffer.alloc(0);
  const whole = await readWhole(req.body, limit);
  if (!whole) throw tooLarge();
  return whole;
}
