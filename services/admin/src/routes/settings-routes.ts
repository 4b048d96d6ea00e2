import { Type } from "@sinclair/typebox";
import { Answer, StringEnum, errorResponses, type ServiceApp, type SettingsReply } from "@svc/kit";
import { settingsTable } from "../domain/settings-table.js";
import type { NodeControl } from "../messaging/node-control.js";

export interface SettingsDeps {
  /** The other nodes' reports, over the control subjects. */
  peers: Pick<NodeControl, "gatherSettings">;
  /** This process's own report, answered locally so the table has admin's row with NATS down. */
  own: () => SettingsReply;
}

const nodeValue = Answer({
  node: Type.String(),
  service: Type.String(),
  from: StringEnum(["default", "environment", "-D", "file"]),
  set: Type.Boolean(),
  value: Type.Optional(Type.String({ description: "the value as written, or the default; never present for a secret" })),
});

/** `GET /api/settings`: every setting in force on each node, where it came from, whether the nodes agree. Read-only. */
export function settingsRoutes(app: ServiceApp, deps: SettingsDeps): void {
  app.get(
    "/api/settings",
    {
      schema: {
        summary: "Every setting in force on each node (service process): value, origin, agreement; secrets only as set or not set",
        response: {
          200: Answer({
            nodes: Type.Array(Answer({ node: Type.String(), service: Type.String() })),
            settings: Type.Array(
              Answer({
                name: Type.String(),
                environment: Type.String(),
                description: Type.String(),
                secret: Type.Boolean(),
                readBy: Type.Array(Type.String()),
                agree: Type.Boolean(),
                nodes: Type.Array(nodeValue),
              }),
            ),
          }),
          ...errorResponses(),
        },
      },
    },
    async (_req, reply) => {
      reply.header("cache-control", "no-store");
      return settingsTable([deps.own(), ...(await deps.peers.gatherSettings())]);
    },
  );
}
