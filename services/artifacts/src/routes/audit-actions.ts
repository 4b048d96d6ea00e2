import type { AuditSpec } from "@svc/kit";

/** How the audit trail names the changes made through this service's routes (docs/operations/audit-trail.md); others get kit's default name. */
export const ARTIFACTS_AUDIT: AuditSpec = {
  actions: {
    "POST /api/repositories": "repository.create",
    "PATCH /api/repositories/:name": "repository.change",
    "DELETE /api/repositories/:name": "repository.remove",
    "PUT /api/repositories/:name/members": "repository.members.set",
    "PUT /api/repositories/:name/gate": "repository.gate.set",
    "PUT /api/repositories/:name/oci": "repository.oci.set",
    "PUT /api/repositories/:name/maven": "repository.maven.set",
    "POST /api/repositories/:name/pypi/yank": "repository.pypi.yank",
    "POST /api/repositories/:name/export": "repository.export",
    "POST /api/repositories/:name/imports": "repository.import",
    "POST /api/held/:id/release": "hold.release",
    "DELETE /api/held/:id": "hold.remove",
    "POST /api/findings/:id/confirm": "finding.confirm",
    "POST /api/findings/:id/dismiss": "finding.dismiss",
    "POST /api/deny-list": "deny-list.add",
    "DELETE /api/deny-list/:id": "deny-list.remove",
    "POST /api/gate/allows": "gate.allow.add",
    "DELETE /api/gate/allows/:id": "gate.allow.remove",
    "POST /api/build-caches": "build-cache.create",
    "PATCH /api/build-caches/:name": "build-cache.change",
    "DELETE /api/build-caches/:name": "build-cache.remove",
  },
};
