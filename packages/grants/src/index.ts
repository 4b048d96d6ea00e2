export * from "./rights.js";
export * from "./scope.js";
export * from "./anonymous-rights.js";
export * from "./decide.js";
export * from "./artifact-path.js";
export * from "./subjects.js";
export * from "./cache-path.js";
export * from "./grant-intersection.js";
