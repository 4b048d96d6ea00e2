import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeKey, parseKey } from "@svc/keys";

/**
 * The secrets `npm start` keeps in its data folder (mode 0600), so that a restart keeps the
 * keys issued before: the internal secret, the bootstrap key of the tenant and the passwords of
 * the local Postgres, Redis and NATS.
 */
function writeSecret(file: string, value: string): void {
  writeFileSync(file, `${value}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
}

function readSecret(file: string): string | undefined {
  try {
    const v = readFileSync(file, "utf8").trim();
    return v === "" ? undefined : v;
  } catch {
    return undefined;
  }
}

/** <dataDir>/<name>: a random secret, made on first use; `created` when this call made it. */
export function localSecret(dataDir: string, name: string): { value: string; created: boolean } {
  const file = join(dataDir, name);
  const stored = readSecret(file);
  if (stored) {
    chmodSync(file, 0o600);
    return { value: stored, created: false };
  }
  // base64url: safe inside a URL, a SQL string and a config file without quoting.
  const value = randomBytes(32).toString("base64url");
  writeSecret(file, value);
  return { value, created: true };
}

/** <dataDir>/internal-secret, made on first use. */
export function localInternalSecret(dataDir: string): string {
  return localSecret(dataDir, "internal-secret").value;
}

function keyTenant(key: string): string | undefined {
  const p = parseKey(key);
  return p.ok ? p.key.tenant : undefined;
}

export interface LocalBootstrapKey {
  key: string;
  file: string;
  /** Made by this call: it is shown once, when the suite is ready. */
  created: boolean;
  /** Said when a key of another tenant was parked under that tenant's name. */
  notes: string[];
}

/** The bootstrap key for `tenant` from <dataDir>/bootstrap-key, made when there is none. */
export function localBootstrapKey(dataDir: string, tenant: string): LocalBootstrapKey {
  const file = join(dataDir, "bootstrap-key");
  const notes: string[] = [];
  let key = readSecret(file);
  if (key !== undefined && keyTenant(key) !== tenant) {
    // The tenant changed: park that key under its tenant's name, take this tenant's if parked.
    const old = keyTenant(key);
    renameSync(file, `${file}.${old ?? "invalid"}`);
    const parked = `${file}.${tenant}`;
    key = readSecret(parked);
    if (key !== undefined && keyTenant(key) === tenant) {
      renameSync(parked, file);
    } else {
      key = undefined;
    }
    notes.push(`the bootstrap key in ${file} was for tenant "${old ?? "?"}"; moved it to ${file}.${old ?? "invalid"}`);
  }
  if (key !== undefined) {
    chmodSync(file, 0o600);
    return { key, file, created: false, notes };
  }
  key = makeKey(tenant);
  writeSecret(file, key);
  return { key, file, created: true, notes };
}

/**
 * Whether this run gets the stored bootstrap key. The spec's advice (unset it and restart once
 * real keys exist) needs a way to say "no more": `disable` (`npm start -- --no-bootstrap-key`)
 * deletes the stored key and leaves <dataDir>/bootstrap-key.disabled, so that later runs start
 * without one too until that file is deleted (then a new key is made: the way back in).
 */
export function localBootstrapChoice(dataDir: string, tenant: string, disable: boolean): { key: LocalBootstrapKey | undefined; notes: string[] } {
  const file = join(dataDir, "bootstrap-key");
  const marker = `${file}.disabled`;
  if (disable) {
    const old = readSecret(file);
    rmSync(file, { force: true });
    writeFileSync(marker, "npm start runs without a bootstrap key while this file exists; delete it to have a new key made on the next start.\n");
    const parsed = old === undefined ? undefined : parseKey(old);
    const entry = parsed?.ok ? ` Its entry (credential ${parsed.key.id}) stays until revoked: DELETE /api/credentials/${parsed.key.id} with a real key.` : "";
    return { key: undefined, notes: [`bootstrap key disabled: ${old === undefined ? "no key was stored" : `deleted ${file}`}; later runs start without one while ${marker} exists.${entry}`] };
  }
  if (existsSync(marker)) return { key: undefined, notes: [`no bootstrap key: ${marker} disables it (delete that file to have a new one made)`] };
  const key = localBootstrapKey(dataDir, tenant);
  return { key, notes: key.notes };
}

/** The lines that show a new bootstrap key, once. */
export function bootstrapKeyBanner(k: LocalBootstrapKey, tenant: string, gatewayUrl: string): string[] {
  return [
    "",
    `New bootstrap key for tenant "${tenant}" (shown only this once; it is stored in ${k.file}):`,
    "",
    `    ${k.key}`,
    "",
    "It holds every right. Use it to issue real keys, for example:",
    `    curl -H "Service-Repository-Key: ${k.key}" ${gatewayUrl}/api/capabilities`,
    "",
  ];
}
