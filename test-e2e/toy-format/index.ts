import type { FormatModule } from "../../services/artifacts/src/formats/format.js";

/**
 * A format of a few lines, for format-table.test.ts: it answers `GET …/hello` itself, leaves
 * every other request to the file routes, names the package a file is in its events, and
 * tells `removed` of each file that goes. Nothing else in the service knows of it.
 */
export function toyFormat(removed: string[]): FormatModule {
  return {
    name: "toy",
    label: "toy (a test's format)",
    create: () => ({
      handle: (req, reply, a) => (req.method === "GET" && a.path === "hello" ? Promise.resolve(reply.type("text/plain").send(`the toy format answers for ${a.repository}`)) : undefined),
      removing: async (_tx, a) => void removed.push(a.path),
      coordinates: (path) => ({ format: "toy", name: path.split("/")[0]!, version: "1", file: path }),
    }),
  };
}
