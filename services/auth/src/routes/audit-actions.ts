import type { AuditSpec } from "@svc/kit";

/** How the audit trail names the changes made through this service's routes (docs/operations/audit-trail.md). */
export const AUTH_AUDIT: AuditSpec = {
  actions: {
    "POST /api/credentials": "key.issue",
    "DELETE /api/credentials/:id": "key.revoke",
    "POST /api/me/credentials": "key.personal.issue",
    "DELETE /api/me/credentials/:id": "key.personal.revoke",
    "POST /api/me/logins/:code": "key.personal.login.confirm",
    "POST /api/credentials/:id/rotate": "key.rotate",
    "PUT /api/credentials/:id/expiry": "key.expiry.change",
    "PUT /api/credentials/:id/allowed-ips": "key.allowlist.change",
    "POST /api/credentials/:id/grants": "key.grant.set",
    "DELETE /api/credentials/:id/grants/*": "key.grant.remove",
    "POST /api/principals/grants": "person.grant.set",
    "DELETE /api/principals/grants": "person.grant.remove",
    "DELETE /api/principals": "person.remove",
    "POST /api/groups/:name/grants": "group.grant.set",
    "DELETE /api/groups/:name/grants/*": "group.grant.remove",
    "POST /api/groups/:name/members": "group.member.add",
    "DELETE /api/groups/:name/members": "group.member.remove",
    "DELETE /api/groups/:name": "group.remove",
  },
};
