/**
 * The V8 options every service process runs with, wherever it is started (`npm start`, the
 * tests, the bench, the container command in deploy/).
 *
 * `--initial-old-space-size=256`: a service streaming artifacts receives each socket read in a
 * fresh 64 KiB buffer, outside the JavaScript heap. V8 counts those buffers towards its heap
 * limits, and with the default (small) starting limits it ran a full mark-compact for every
 * ~20 MB streamed: 37 of them for three 256 MiB downloads through the gateway, half of the
 * gateway's CPU. Starting the old generation at 256 MB lets the young-generation collections
 * free those buffers instead; the gateway's CPU per MB streamed halved (about 2.3 → 1.0 ms),
 * while its peak resident memory stayed where it was (about 190 MB). It is a starting size,
 * not a cap: the heap's ceiling is unchanged.
 */
export const SERVICE_NODE_OPTIONS: readonly string[] = ["--initial-old-space-size=256"];

/**
 * The V8 options of one service: SERVICE_NODE_OPTIONS, except for the walker, which streams no
 * artifact to anyone. Its walks make pages of index rows and blob listings, garbage that the
 * 256 MB starting size let build up until a full collection: its peak resident memory over a
 * walk grew with the index (174 / 191 / 356 MiB at 10,000 / 100,000 / 1,000,000 entries). With
 * V8's own starting size it stayed flat (168 / 138 / 136 MiB, `npm run bench -- --scale`), and the
 * walks were no slower (0.4 / 2.6 / 32.5 s against 0.8 / 4.6 / 35 s).
 */
export function serviceNodeOptions(service: string): readonly string[] {
  return service === "walker" ? [] : SERVICE_NODE_OPTIONS;
}
