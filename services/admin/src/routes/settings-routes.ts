import { Type } from "@sinclair/typebox";
import { ADMIN_INTERNAL, conflict, forbidden, invalid, notFound, StoredSettingsDoc, type SettingsTable } from "@svc/contracts";
import { isTenant } from "@svc/keys";
import { Answer, NoContent, SETTINGS, TENANT_SETTINGS, parseRuntimeValue, runtimeChangeProblems, shownSettingText, problemResponses, StringEnum, errorResponses, fixedAt, pagingQuerySchema, readPaging, runtimeSetting, settingText, RUNTIME_SETTINGS, type RuntimeSetting, type ServiceApp, type SettingsReply, type TenantOverrides, type TenantSetting } from "@svc/kit";
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
  newValue: Type.Union([Type.String(), Type.Null()], { description: "null for a secret, or for a tenant's override removed" }),
  tenant: Type.Optional(Type.String({ description: "the tenant whose override was set or removed; absent: the deployment's value" })),
  principal: Type.String(),
  at: Type.String(),
});

/**
 * Adds to the nodes' table each run-time setting's live value (a secret's only as set or not),
 * whether the operator fixed it, and a per-tenant setting's overrides.
 */
export function withRuntime(table: SettingsTable, live: ReturnType<LiveSettings["current"]>, overrides: TenantOverrides = new Map()): SettingsTable {
  return {
    ...table,
    settings: table.settings.map((row) => {
      const field = runtimeSetting(row.name);
      if (field === undefined) return row;
      const at = fixedAt(live, field);
      const text = settingText(live[field]);
      const value = shownSettingText(field, text);
      const perTenant = (TENANT_SETTINGS as readonly string[]).includes(field)
        ? { tenants: [...overrides].flatMap(([tenant, byName]) => (byName.has(row.name) ? [{ tenant, value: byName.get(row.name)! }] : [])) }
        : {};
      return { ...row, runtime: true, ...(value === undefined ? { set: text !== "" } : { value }), fixed: at !== undefined, ...(at === undefined ? {} : { fixedAt: at }), ...perTenant };
    }),
  };
}

/** The tenant a per-tenant change names, checked: well-formed and served here (as /api/rate-limits). */
function servedTenant(tenant: string, served: string): string {
  if (!isTenant(tenant)) throw invalid("tenant", "a tenant is 1-63 lowercase letters, digits and inner hyphens");
  if (tenant !== served) throw invalid("tenant", `this deployment serves tenant "${served}" only (svc.tenant)`);
  return tenant;
}

/** The per-tenant setting a name means, or a 400 naming those that have per-tenant values. */
function tenantSetting(field: RuntimeSetting): TenantSetting {
  if ((TENANT_SETTINGS as readonly string[]).includes(field)) return field as TenantSetting;
  throw invalid("tenant", `${SETTINGS[field].name} has no per-tenant value; settings set for a tenant: ${TENANT_SETTINGS.map((f) => SETTINGS[f].name.slice(4)).join(", ")}`);
}

const tenantQuery = Type.Object({ tenant: Type.Optional(Type.String({ maxLength: 63, description: "the tenant whose override is set (a setting set for a tenant only)" })) }, { additionalProperties: false });

/** The run-time setting a name in the path means, if a run-time change of it is allowed: 404, 400 (read at start only) or 409 (fixed) otherwise. */
function changeableIn(live: Pick<LiveSettings, "current">, nameInPath: string): RuntimeSetting {
  const field = runtimeSetting(nameInPath);
  if (field === undefined) {
    const full = nameInPath.startsWith("svc.") ? nameInPath : `svc.${nameInPath}`;
    if (Object.values(SETTINGS).some((d) => d.name === full)) {
      throw invalid("name", `${full} is read at start only and cannot be changed at run time (set it in the environment, a -D argument or the properties file and restart); run-time settings: ${RUNTIME_SETTINGS.map((f) => SETTINGS[f].name.slice(4)).join(", ")}`);
    }
    throw notFound(`no setting named ${nameInPath}`);
  }
  const at = fixedAt(live.current(), field);
  if (at !== undefined) throw conflict(`${SETTINGS[field].name} is fixed by the operator at start (${at}) and wins over a run-time change; change it there and restart`);
  return field;
}

/**
 * `GET /api/settings`: every setting in force on each node, where it came from, whether the nodes
 * agree, and for a run-time setting its live value. `PUT /api/settings/<name>` changes a run-time
 * setting (stored, recorded, announced); `GET /api/settings/changes` lists the changes.
 */
export function settingsRoutes(app: ServiceApp, deps: SettingsDeps): void {
  const changeable = (nameInPath: string) => changeableIn(deps.live, nameInPath);
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
                agree: Type.Boolean({ description: "every node reporting it runs with the same value; always true for a perProcess setting" }),
                perProcess: Type.Optional(Type.Boolean({ description: "differs between nodes by nature (a process's own host and port, log level, config file, neighbours' addresses): never a disagreement" })),
                nodes: Type.Array(nodeValue),
                runtime: Type.Optional(Type.Boolean({ description: "changeable at run time with PUT /api/settings/<name>" })),
                value: Type.Optional(Type.String({ description: "a run-time setting's live value" })),
                fixed: Type.Optional(Type.Boolean({ description: "a run-time setting fixed by the operator at start (it wins; a PUT is refused)" })),
                fixedAt: Type.Optional(Type.String({ description: "where it is fixed" })),
                set: Type.Optional(Type.Boolean({ description: "a run-time secret: whether its live value is set (never the value)" })),
                tenants: Type.Optional(Type.Array(Answer({ tenant: Type.String(), value: Type.String() }), { description: "per-tenant overrides (PUT /api/settings/<name>?tenant=<t>)" })),
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
      return withRuntime(settingsTable([deps.own(), ...(await deps.peers.gatherSettings())], (name) => runtimeSetting(name) !== undefined), live, deps.live.overrides());
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
        summary:
          "Changes a run-time setting (name without svc., e.g. rate-limit): stored, recorded and applied by every node without a restart; with ?tenant=<t>, sets that tenant's override (malware-action, vulnerability-action, vulnerability-threshold, deny-list-action, gate.min-age)",
        params: Type.Object({ name: Type.String({ maxLength: 200 }) }),
        querystring: tenantQuery,
        body: Type.Object({ value: Type.Union([Type.String({ maxLength: 65_536 }), Type.Number(), Type.Boolean()]) }, { additionalProperties: false }),
        response: {
          200: Answer({
            name: Type.String(),
            tenant: Type.Optional(Type.String({ description: "the tenant whose override was set" })),
            value: Type.Optional(Type.String({ description: "the new value as shown; absent for a secret, masked where part of it is one (webhook endpoints' URLs)" })),
            previous: Type.Optional(Type.String({ description: "the value before, shown the same way" })),
          }),
          ...errorResponses(400, 404, 409, 413, 415),
        },
      },
    },
    async (req) => {
      const field = changeable(req.params.name);
      const name = SETTINGS[field].name;
      const parsed = parseRuntimeValue(field, req.body.value);
      if (!parsed.ok) throw invalid("value", parsed.reason);
      if (req.query.tenant !== undefined) {
        const tenant = servedTenant(req.query.tenant, deps.live.current().tenant);
        const changed = (await deps.live.changeForTenant(tenantSetting(field), tenant, parsed.text, req.principal.id))!;
        deps.peers.announceSettingsChanged(name);
        req.log.info({ setting: name, tenant, from: changed.oldValue, to: changed.newValue, principal: req.principal.id }, "run-time setting changed for a tenant");
        return { name, tenant, value: changed.newValue, previous: changed.oldValue };
      }
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

  app.delete(
    "/api/settings/:name",
    {
      schema: {
        summary: "Removes a tenant's override of a setting set for a tenant (?tenant=<t> required): the tenant then follows the deployment's value; recorded",
        params: Type.Object({ name: Type.String({ maxLength: 200 }) }),
        querystring: tenantQuery,
        response: { 204: NoContent, ...errorResponses(400, 404, 409) },
      },
    },
    async (req, reply) => {
      const field = tenantSetting(changeable(req.params.name));
      if (req.query.tenant === undefined) throw invalid("tenant", "name the tenant whose override is removed: ?tenant=<tenant> (the deployment's value is changed with PUT)");
      const tenant = servedTenant(req.query.tenant, deps.live.current().tenant);
      const name = SETTINGS[field].name;
      if (!(await deps.live.changeForTenant(field, tenant, null, req.principal.id))) throw notFound(`tenant ${tenant} has no override of ${name}`);
      deps.peers.announceSettingsChanged(name);
      req.log.info({ setting: name, tenant, principal: req.principal.id }, "run-time setting override removed for a tenant");
      return reply.code(204).send();
    },
  );

  // Every other service's live view (kit live-settings-follower.ts) reads the stored values here.
  app.get(
    ADMIN_INTERNAL.settings,
    { schema: { response: { 200: StoredSettingsDoc, ...problemResponses(401, 403, 500, 503) } } },
    async (req): Promise<StoredSettingsDoc> => {
      if (req.principal.kind !== "system") throw forbidden("internal route");
      await deps.live.fresh();
      const tenants = Object.fromEntries([...deps.live.overrides()].map(([t, byName]) => [t, Object.fromEntries(byName)]));
      return { stored: Object.fromEntries(await deps.store.load()), tenants };
    },
  );
}
