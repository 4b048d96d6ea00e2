export * from "./blob-store.js";
export * from "./filesystem.js";
export * from "./s3.js";
export * from "./open.js";
export * from "./small-blob-cache.js";
