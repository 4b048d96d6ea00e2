import { Type } from "@sinclair/typebox";
import { ADMIN_INTERNAL, conflict, forbidden, invalid, notFound, StoredSettingsDoc, type SettingsTable } from "@svc/contracts";
import { Answer, SETTINGS, parseRuntimeValue, runtimeChangeProblems, shownSettingText, problemResponses, StringEnum, errorResponses, fixedAt, pagingQuerySchema, readPaging, runtimeSetting, settingText, RUNTIME_SETTINGS, type ServiceApp, type SettingsReply } from "@svc/kit";
import type { LiveSettings } from "../domain/live-settings.js";
import { settingsTable } from "../domain/settings-table.js";
import type { NodeControl } from "../messaging/node-control.js";
import type { RuntimeSettingStore } from "../store/runtime-setting-store.js";

export interface SettingsDeps {
  /** The other nodes' reports, over the control subjects; the announcement of a change. */
  peers: Pick<NodeControl, "gatherSettings" | "announceSettingsChanged" | "announceLimitsChanged">;
  /** This process's own report, answered locally so the table has admin's row with NATS down. */
  own: () => SettingsReply;
  /** The run-time settings as they stand (stored values over the ones read at start). */
  live: LiveSettings;
  store: Pick<RuntimeSettingStore, "changes" | "load">;
}

const nodeValue = Answer({
  node: Type.String(),
  service: Type.String(),
  from: StringEnum(["default", "environment", "-D", "file"]),
  set: Type.Boolean(),
  value: Type.Optional(Type.String({ description: "the value as written, or the default; never present for a secret" })),
});
const changeRow = Answer({
  id: Type.String(),
  name: Type.String(),
  oldValue: Type.Union([Type.String(), Type.Null()], { description: "null for a secret" }),
  newValue: Type.Union([Type.String(), Type.Null()], { description: "null for a secret" }),
  principal: Type.String(),
  at: Type.String(),
});

/** Adds each run-time setting's live value and whether the operator fixed it to the nodes' table. */
export function withRuntime(table: SettingsTable, live: ReturnType<LiveSettings["current"]>): SettingsTable {
  return {
    ...table,
    settings: table.settings.map((row) => {
      const field = runtimeSetting(row.name);
      if (field === undefined) return row;
      const at = fixedAt(live, field);
      const value = shownSettingText(field, settingText(live[field]));
      return { ...row, runtime: true, ...(value === undefined ? {} : { value }), fixed: at !== undefined, ...(at === undefined ? {} : { fixedAt: at }) };
    }),
  };
}

/**
 * `GET /api/settings`: every setting in force on each node, where it came from, whether the nodes
 * agree, and for a run-time setting its live value. `PUT /api/settings/<name>` changes a run-time
 * setting (stored, recorded, announced); `GET /api/settings/changes` lists the changes.
 */
export function settingsRoutes(app: ServiceApp, deps: SettingsDeps): void {
  app.get(
    "/api/settings",
    {
      schema: {
        summary: "Every setting in force on each node (service process): value, origin, agreement; secrets only as set or not set; a run-time setting's live value and whether it is fixed",
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
                runtime: Type.Optional(Type.Boolean({ description: "changeable at run time with PUT /api/settings/<name>" })),
                value: Type.Optional(Type.String({ description: "a run-time setting's live value" })),
                fixed: Type.Optional(Type.Boolean({ description: "a run-time setting fixed by the operator at start (it wins; a PUT is refused)" })),
                fixedAt: Type.Optional(Type.String({ description: "where it is fixed" })),
              }),
            ),
          }),
          ...errorResponses(),
        },
      },
    },
    async (_req, reply) => {
      reply.header("cache-control", "no-store");
      const live = await deps.live.fresh();
      return withRuntime(settingsTable([deps.own(), ...(await deps.peers.gatherSettings())]), live);
    },
  );

  app.get(
    "/api/settings/changes",
    {
      schema: {
        summary: "Changes of run-time settings, newest first: who, when, old and new value (a secret's never)",
        querystring: pagingQuerySchema,
        response: { 200: Answer({ changes: Type.Array(changeRow) }), ...errorResponses(400) },
      },
    },
    async (req, reply) => {
      const page = readPaging(req.query);
      if (page.after !== undefined && !/^\d{1,18}$/.test(page.after)) throw invalid("after", "after must be the id of a change");
      const changes = await deps.store.changes(page);
      if (changes.length === page.limit) reply.header("x-next-cursor", changes[changes.length - 1]!.id);
      return { changes };
    },
  );

  app.put(
    "/api/settings/:name",
    {
      schema: {
        summary: "Changes a run-time setting (name without svc., e.g. rate-limit): stored, recorded and applied by every node without a restart",
        params: Type.Object({ name: Type.String({ maxLength: 200 }) }),
        body: Type.Object({ value: Type.Union([Type.String({ maxLength: 65_536 }), Type.Number(), Type.Boolean()]) }, { additionalProperties: false }),
        response: {
          200: Answer({
            name: Type.String(),
            value: Type.Optional(Type.String({ description: "the new value as shown; absent for a secret, masked where part of it is one (webhook endpoints' URLs)" })),
            previous: Type.Optional(Type.String({ description: "the value before, shown the same way" })),
          }),
          ...errorResponses(400, 404, 409, 413, 415),
        },
      },
    },
    async (req) => {
      const field = runtimeSetting(req.params.name);
      if (field === undefined) {
        const full = req.params.name.startsWith("svc.") ? req.params.name : `svc.${req.params.name}`;
        if (Object.values(SETTINGS).some((d) => d.name === full)) {
          throw invalid("name", `${full} is read at start only and cannot be changed at run time (set it in the environment, a -D argument or the properties file and restart); run-time settings: ${RUNTIME_SETTINGS.map((f) => SETTINGS[f].name.slice(4)).join(", ")}`);
        }
        throw notFound(`no setting named ${req.params.name}`);
      }
      const name = SETTINGS[field].name;
      const at = fixedAt(deps.live.current(), field);
      if (at !== undefined) throw conflict(`${name} is fixed by the operator at start (${at}) and wins over a run-time change; change it there and restart`);
      const parsed = parseRuntimeValue(field, req.body.value);
      if (!parsed.ok) throw invalid("value", parsed.reason);
      // Settings read together (the webhook ones) are checked with the others in force, as the notifier checks them at start.
      const together = runtimeChangeProblems(field, parsed.value, deps.live.current());
      if (together.length > 0) throw invalid("value", together.join("; "));
      const { oldValue, newValue } = await deps.live.change(field, parsed.text, req.principal.id);
      deps.peers.announceSettingsChanged(name);
      if (field === "rateLimit") deps.peers.announceLimitsChanged(deps.live.current().tenant);
      req.log.info({ setting: name, ...(newValue === undefined ? {} : { from: oldValue, to: newValue }), principal: req.principal.id }, "run-time setting changed");
      return newValue === undefined ? { name } : { name, value: newValue, previous: oldValue ?? "" };
    },
  );

  // Every other service's live view (kit live-settings-follower.ts) reads the stored values here.
  app.get(
    ADMIN_INTERNAL.settings,
    { schema: { response: { 200: StoredSettingsDoc, ...problemResponses(401, 403, 500, 503) } } },
    async (req): Promise<StoredSettingsDoc> => {
      if (req.principal.kind !== "system") throw forbidden("internal route");
      return { stored: Object.fromEntries(await deps.store.load()) };
    },
  );
}
