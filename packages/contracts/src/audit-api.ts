/** What an audit entry says of the change itself, as written and as read (docs/operations/audit-trail.md). */
export interface AuditChange {
  /** The client address the gateway saw. */
  address: string | null;
  service: string;
  action: string;
  object: string | null;
  method: string;
  path: string;
  status: number;
  detail: unknown;
}

/** An entry of the audit trail as `GET /api/audit` answers it. */
export interface AuditEntryView extends AuditChange {
  id: string;
  at: string;
  tenant: string;
  actor: { kind: string; id: string; label?: string };
}
