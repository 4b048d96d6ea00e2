// The bench's command line and the constants every part of a run shares. Read once, at import:
// `--help` prints the usage and exits before anything starts.
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..");

function option(name: string, fallback: number): number {
  const arg = process.argv.find((a) => a.startsWith(`--${name}=`));
  if (!arg) return fallback;
  const n = Number(arg.slice(name.length + 3));
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} needs a positive number`);
  return n;
}
const flag = (name: string) => process.argv.includes(`--${name}`);

if (flag("help")) {
  console.log(`usage: npm run bench -- [--profile[=gateway|artifacts|auth]] [--connections=50] [--duration=8] [--rounds=2] [--warmup=3] [--large-runs=5] [--rate-limit=999999999|0] [--no-nginx] [--no-large] [--no-small] [--tcp]
       npm run bench -- --scale [--s3] [--sizes=10000,100000,1000000] [--sample=200] [--rows-per-blob=100] [--concurrency=8]
       npm run bench -- --npm [--versions=500] [--big-versions=2000] [--packages=200] [--burst=20] [--installs=8] [--connections=50] [--duration=8] [--rounds=2] [--warmup=3] [--profile]
       npm run bench -- --proxy [--packages=200] [--profile[=artifacts|gateway|auth]]
       npm run bench -- --against=<another checkout> [--packages=200] [--profile[=gateway|artifacts|auth]]
       npm run bench -- --s3 [--publishes=1000] [--connections=50] [--duration=8] [--rounds=2] [--large-runs=5]
       npm run bench -- --oci [--s3] [--profile[=artifacts|gateway|auth]] [--connections=50] [--duration=8] [--rounds=2] [--warmup=3] [--large-runs=5] [--tcp]`);
  process.exit(0);
}

/** `--profile` profiles the gateway; `--profile=artifacts` (or another service) that service instead. */
export const PROFILE_SERVICE = (() => {
  const arg = process.argv.find((a) => a === "--profile" || a.startsWith("--profile="));
  if (!arg) return undefined;
  const name = arg === "--profile" ? "gateway" : arg.slice("--profile=".length);
  if (!["gateway", "auth", "artifacts"].includes(name)) throw new Error("--profile takes gateway, auth or artifacts (the services a small-file GET goes through)");
  return name as "gateway" | "auth" | "artifacts";
})();
export const PROFILE = PROFILE_SERVICE !== undefined;
export const CONNECTIONS = option("connections", 50);
// The direct and nginx runs carry a signature made just before the run; it is valid for 60 s.
export const DURATION = Math.min(option("duration", 8), 15);
export const WARMUP = Math.min(option("warmup", 3), 15);
// Targets take turns, round after round: this machine's speed drifts, and a drift should not
// land on one target only.
export const ROUNDS = Math.floor(option("rounds", 2));
export const LARGE_RUNS = Math.floor(option("large-runs", 5));
// Off unless asked: upstreams accept each signature once, and nginx can only carry fixed ones, so
// past its first request per path it measures refusals (bench/README.md).
export const NGINX = flag("nginx") && !flag("no-nginx");
// The gateway's per-tenant rate limit (svc.rate-limit, requests per minute): high enough never to
// refuse a bench request, but on, so every request pays for it as it does in production. 0 = off.
export const RATE_LIMIT = (() => {
  const arg = process.argv.find((a) => a.startsWith("--rate-limit="));
  const n = arg ? Number(arg.slice("--rate-limit=".length)) : 999_999_999;
  if (!Number.isInteger(n) || n < 0 || n > 999_999_999) throw new Error("--rate-limit needs a whole number from 0 to 999999999");
  return n;
})();
export const LARGE = !flag("no-large");
// The gateway reaches its upstreams over Unix sockets (svc.socket), with a second gateway over
// loopback TCP measured beside it; --tcp: TCP only, as before.
export const SOCKETS = !flag("tcp");
export const SMALL = !flag("no-small");

// --scale: the same suite grown through several sizes (keys, files and group members each), so
// what grows with the data shows (bench/scale.ts). The fill goes straight into Postgres and the
// blob store; `sample` calls of each kind go through the API at every size and are timed.
export const SCALE = flag("scale");
export const SCALE_SIZES = (() => {
  const arg = process.argv.find((a) => a.startsWith("--sizes="));
  const sizes = (arg ? arg.slice("--sizes=".length) : "10000,100000,1000000").split(",").map((x) => Number(x.trim()));
  if (sizes.length === 0 || sizes.some((n) => !Number.isInteger(n) || n < 1000 || n > 10_000_000)) throw new Error("--sizes needs whole numbers from 1000 to 10000000, comma-separated (e.g. --sizes=10000,100000,1000000)");
  for (let i = 1; i < sizes.length; i++) if (sizes[i]! <= sizes[i - 1]!) throw new Error("--sizes must grow: each size larger than the one before");
  return sizes;
})();
/** API calls of each kind timed at every size (mints, uploads, fresh keys' first requests, GETs). */
export const SCALE_SAMPLE = Math.floor(option("sample", 200));
/** Index rows per distinct blob in the bulk fill (rows share content to keep the disk use small). */
export const SCALE_ROWS_PER_BLOB = Math.floor(option("rows-per-blob", 100));
/** Requests in flight at once while minting and uploading the sample (an upload cap per key is 16 by default). */
export const SCALE_CONCURRENCY = Math.min(Math.floor(option("concurrency", 8)), 16);

// --against=<checkout>: this checkout's services beside another checkout's (bench/against.ts).
export const AGAINST = process.argv.find((a) => a.startsWith("--against="))?.slice("--against=".length) || undefined;

// --s3: the S3 blob store beside the filesystem one (bench/s3.ts).
export const S3 = flag("s3");
/** Small publishes per store in the --s3 run. */
export const S3_PUBLISHES = Math.floor(option("publishes", 1000));

// --npm: the npm repository side by side with Verdaccio (bench/npm-bench.ts).
export const NPM = flag("npm");
// --proxy: a proxy repository beside Verdaccio with an uplink, the same upstream (bench/npm-proxy-bench.ts).
export const PROXY = flag("proxy");
// --oci: the OCI registry beside Debian's docker-registry (bench/oci-bench.ts).
export const OCI = flag("oci");
export const NPM_SIZES = {
  /** Versions of the package whose metadata rate is measured. */
  versions: Math.floor(option("versions", 500)),
  /** Versions of the package whose (several MB) document is asked for `burst` times at once. */
  bigVersions: Math.floor(option("big-versions", 2000)),
  /** Packages published one after another, then installed together. */
  packages: Math.floor(option("packages", 200)),
  burst: Math.floor(option("burst", 20)),
  installs: Math.floor(option("installs", 8)),
};

export const SMALL_SIZE = 1024;
export const LARGE_SIZE = 256 * 1024 * 1024;
export const SMALL_PATH = "/repository/default/bench/small-1k.bin";
export const LARGE_PATH = "/repository/default/bench/large-256m.bin";
export const GOAL_SMALL = 0.5;
export const GOAL_LARGE = 0.8;

export const dataDir = join(repoRoot, ".data", "bench");
export const suiteDir = join(dataDir, "suite");
export const nginxDir = join(dataDir, "nginx");
export const profileDir = join(dataDir, "profile");
export const npmDir = join(dataDir, "npm");
/** Tools the bench installs from the npm registry (Verdaccio), kept between runs. */
export const toolsDir = join(dataDir, "tools");

export const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);
