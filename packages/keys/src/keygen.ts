// `pnpm keygen [tenant]`: prints one well-formed key and nothing else.
import { makeKey } from "./key-format.js";

const tenant = process.argv[2] ?? "default";
try {
  process.stdout.write(`${makeKey(tenant)}\n`);
} catch (err) {
  process.stderr.write(`${(err as Error).message}\n`);
  process.exit(2);
}
