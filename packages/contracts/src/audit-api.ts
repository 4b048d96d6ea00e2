/** An entry of the audit trail as `GET /api/audit` answers it (docs/operations/audit-trail.md). */
export interface AuditEntryView {
  id: string;
  at: string;
  tenant: string;
  actor: { kind: string; id: string; label?: string };
  address: string | null;
  service: string;
  action: string;
  object: string | null;
  method: string;
  path: string;
  status: number;
  detail: unknown;
}
