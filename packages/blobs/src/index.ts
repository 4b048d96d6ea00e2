export * from "./blob-store.js";
