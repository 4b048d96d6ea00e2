// `npm run bench -- --scale`: what grows with the data. One suite is filled to a small size
// (keys, files, members of one group) and measured, then grown `--growth` times and measured
// again; the figures of both sizes are printed side by side. Nothing is asserted. See
// bench/README.md ("Scale").
import { mkdirSync, rmSync } from "node:fs";
import { createBus, createLogger } from "@svc/kit";
import { startBenchSuite } from "./bench-suite.js";
import { dataDir, log, SCALE_CONCURRENCY, SCALE_SIZES, suiteDir } from "./options.js";
import { apiClient, closeScaleAgent } from "./scale-client.js";
import { addMembers, mintKeys, uploadFiles, type ScaleData } from "./scale-fill.js";
import { announcements, fetchWithKey, measureGroupChange, measureKeyChecks, measureListings, measureWalk, type GroupChange, type KeyChecks, type Listings } from "./scale-measure.js";

interface SizeFigures {
  keys: number;
  files: number;
  members: number;
  mintPerSecond: number;
  uploadPerSecond: number;
  membersPerSecond: number;
  listings: Listings;
  keyChecks: KeyChecks;
  walk: { seconds: number; entries: number; outcome: string };
  group: GroupChange;
}

export async function runScale(): Promise<void> {
  const cleanups: Array<() => Promise<unknown>> = [];
  try {
    rmSync(suiteDir, { recursive: true, force: true });
    mkdirSync(dataDir, { recursive: true });
    const { infra, suite: s } = await startBenchSuite(cleanups);
    const api = apiClient(s.gatewayUrl, s.bootstrapKey);
    // The bench listens for credential.changed as every gateway does, to time the announcement.
    const bus = createBus({ url: infra.natsUrl, tenant: s.tenant, name: "bench-scale", log: createLogger("bench", "silent").log });
    cleanups.push(() => bus.close());
    const changes = announcements(bus);
    if (!(await bus.ready(15_000))) throw new Error("the bench could not connect to NATS");

    const data: ScaleData = { keyIds: [], paths: [], members: [] };
    // The first calls of each path are slow while the processes warm up (JIT, connection pools):
    // a few rows of each before anything is timed, counted in the sizes.
    const warm = Math.min(20, ...SCALE_SIZES.map((x) => Math.min(x.keys, x.files, x.members)));
    log(`scale: warm-up (${warm} keys, files and members, not timed)`);
    await mintKeys(api, data, warm);
    await uploadFiles(s.gatewayUrl, s.bootstrapKey, data, warm);
    await addMembers(api, data, warm);
    const figures: SizeFigures[] = [];
    for (const size of SCALE_SIZES) {
      log(`scale: growing to ${size.keys} keys, ${size.files} files, ${size.members} members (${SCALE_CONCURRENCY} requests in flight)`);
      const mintPerSecond = await mintKeys(api, data, size.keys);
      const uploadPerSecond = await uploadFiles(s.gatewayUrl, s.bootstrapKey, data, size.files);
      const membersPerSecond = await addMembers(api, data, size.members);
      log("scale: listings, key checks");
      const listings = await measureListings(api, s.urls.artifacts, s.internalSecret, s.tenant, data);
      const { hotKey, ...keyChecks } = await measureKeyChecks(api, s.gatewayUrl);
      log("scale: walk the store now");
      const walk = await measureWalk(api);
      log("scale: a grant to the group and its removal");
      const group = await measureGroupChange(api, changes, data.members[data.members.length - 1]!, fetchWithKey(s.gatewayUrl, hotKey));
      figures.push({ ...size, mintPerSecond, uploadPerSecond, membersPerSecond, listings, keyChecks, walk, group });
    }
    printScale(figures);
  } finally {
    for (const c of cleanups.reverse()) await c().catch((err) => log(`cleanup: ${(err as Error).message}`));
    await closeScaleAgent().catch(() => {});
    rmSync(suiteDir, { recursive: true, force: true });
  }
}

const n0 = (x: number) => Math.round(x).toLocaleString("en-US");
const ms = (x: number | undefined) => (x === undefined ? "not seen" : x < 10 ? `${x.toFixed(1)} ms` : `${Math.round(x)} ms`);

function printScale(f: SizeFigures[]): void {
  const [a, b] = [f[0]!, f[1]!];
  type Row = [label: string, value: (x: SizeFigures) => string, ratio?: (x: SizeFigures) => number | undefined];
  const rows: Row[] = [
    ["keys / files / members", (x) => `${n0(x.keys)} / ${n0(x.files)} / ${n0(x.members)}`],
    ["mint (keys/s, API)", (x) => n0(x.mintPerSecond), (x) => x.mintPerSecond],
    ["upload 1 KiB (files/s, gateway)", (x) => n0(x.uploadPerSecond), (x) => x.uploadPerSecond],
    ["add member (members/s, set-up)", (x) => n0(x.membersPerSecond), (x) => x.membersPerSecond],
    ["credentials: first page", (x) => ms(x.listings.credentials.first), (x) => x.listings.credentials.first],
    ["credentials: last full page", (x) => ms(x.listings.credentials.deep), (x) => x.listings.credentials.deep],
    ["files (metadata): first page", (x) => ms(x.listings.files.first), (x) => x.listings.files.first],
    ["files (metadata): last full page", (x) => ms(x.listings.files.deep), (x) => x.listings.files.deep],
    ["group members: first page", (x) => ms(x.listings.members.first), (x) => x.listings.members.first],
    ["group members: last full page", (x) => ms(x.listings.members.deep), (x) => x.listings.members.deep],
    ["key check, cold (median / max)", (x) => `${ms(x.keyChecks.coldMedian)} / ${ms(x.keyChecks.coldMax)}`, (x) => x.keyChecks.coldMedian],
    ["key check, hot (median / p99)", (x) => `${ms(x.keyChecks.hotMedian)} / ${ms(x.keyChecks.hotP99)}`, (x) => x.keyChecks.hotMedian],
    ["walk the store now (s, entries)", (x) => `${x.walk.seconds.toFixed(1)} s, ${n0(x.walk.entries)} ${x.walk.outcome}`, (x) => x.walk.seconds],
    ["group grant: call", (x) => ms(x.group.grantMs), (x) => x.group.grantMs],
    ["group grant: announced after", (x) => ms(x.group.grantAnnouncedMs), (x) => x.group.grantAnnouncedMs],
    ["group grant: a member's rights show it (each time)", (x) => (x.group.visible ? "yes" : "NO")],
    ["hot key's next request after a grant", (x) => ms(x.group.hotAfterMs)],
    ["group grant removed: call", (x) => ms(x.group.revokeMs), (x) => x.group.revokeMs],
    ["group grant removed: announced after", (x) => ms(x.group.revokeAnnouncedMs), (x) => x.group.revokeAnnouncedMs],
  ];
  const width = Math.max(...rows.map((r) => r[0].length));
  const cells = rows.map(([label, value, ratio]) => {
    const ra = ratio?.(a);
    const rb = ratio?.(b);
    const growth = ra !== undefined && rb !== undefined && ra > 0 ? `x${(rb / ra).toFixed(2)}` : "";
    return [label.padEnd(width), value(a), value(b), growth];
  });
  const w1 = Math.max(5, ...cells.map((c) => c[1]!.length));
  const w2 = Math.max(5, ...cells.map((c) => c[2]!.length));
  const line = (c: string[]) => `  ${c[0]}  ${c[1]!.padStart(w1)}  ${c[2]!.padStart(w2)}  ${c[3]}`;
  console.log("\nScale: the same suite at two sizes (listing pages hold 500 items; times are medians of 5 (the group change: of 5 grants and removals) unless named)\n");
  console.log(line(["".padEnd(width), "small", "large", "large/small"]));
  for (const c of cells) console.log(line(c));
  console.log("");
}
