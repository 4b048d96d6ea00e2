import type { FastifyRequest } from "fastify";
import { runtimeSetting, settingText, shownSettingText, type AuditSpec } from "@svc/kit";

/** How the audit trail names the changes made through this service's routes (docs/operations/audit-trail.md). */
export const ADMIN_AUDIT: AuditSpec = {
  actions: {
    "PUT /api/settings/:name": "setting.change",
    "DELETE /api/settings/:name": "setting.override.remove",
    "PUT /api/rate-limits/:tenant": "rate-limit.set",
    "DELETE /api/rate-limits/:tenant": "rate-limit.remove",
  },
  detail: {
    // The new value as the settings API shows it: never a secret's, masked where part of it is one.
    "PUT /api/settings/:name": (request: FastifyRequest) => {
      const { name } = request.params as { name: string };
      const { tenant } = request.query as { tenant?: string };
      const field = runtimeSetting(name);
      const value = (request.body as { value?: unknown } | undefined)?.value;
      const shown = field === undefined ? undefined : shownSettingText(field, settingText(value));
      return { setting: name, ...(tenant === undefined ? {} : { tenant }), value: shown ?? "[secret]" };
    },
  },
};
