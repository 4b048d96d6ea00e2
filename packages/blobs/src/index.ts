export * from "./blob-store.js";
export * from "./filesystem.js";
