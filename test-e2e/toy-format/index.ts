import type { FormatModule } from "../../services/artifacts/src/formats/format.js";

/**
 * A format of a few lines, for format-table.test.ts: it answers `GET …/hello` itself, counting
 * the greetings of each repository in a table of its own (its migration), leaves every other
 * request to the file routes, names the package a file is in its events, and tells `removed` of
 * each file that goes. Nothing else in the service knows of it.
 */
export function toyFormat(removed: string[]): FormatModule {
  return {
    name: "toy",
    label: "toy (a test's format)",
    migrations: {
      "0100_toy_greetings": {
        async up(db) {
          await db.schema.withSchema("artifacts").createTable("toy_greetings").addColumn("repository", "text", (c) => c.primaryKey()).addColumn("count", "integer", (c) => c.notNull()).execute();
        },
      },
    },
    create: (deps) => ({
      handle: (req, reply, a) => {
        if (req.method !== "GET" || a.path !== "hello") return undefined;
        return (async () => {
          const r = await deps.pool.query<{ count: number }>(
            "insert into artifacts.toy_greetings (repository, count) values ($1, 1) on conflict (repository) do update set count = toy_greetings.count + 1 returning count",
            [a.repository],
          );
          return reply.type("text/plain").send(`the toy format answers for ${a.repository} (greeting ${r.rows[0]!.count})`);
        })();
      },
      removing: async (_tx, a) => void removed.push(a.path),
      coordinates: (path) => ({ format: "toy", name: path.split("/")[0]!, version: "1", file: path }),
    }),
  };
}
