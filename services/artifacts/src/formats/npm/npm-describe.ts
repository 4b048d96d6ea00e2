import type { PackageAbout } from "../format.js";
import type { NpmStore } from "./npm-store.js";

/** An npm package as the console's package view shows it: its dist-tags, its latest version's readme and description, each version's publish time. */
export function npmDescribe(store: Pick<NpmStore, "findPackage" | "documentVersions">) {
  return async (repository: string, name: string): Promise<PackageAbout | undefined> => {
    const pkg = await store.findPackage(repository, name);
    if (!pkg) return undefined;
    const latest = pkg.distTags.latest;
    const { versions, readme } = await store.documentVersions(repository, name, latest);
    const manifest = versions.find((v) => v.version === latest)?.manifest ?? versions[versions.length - 1]?.manifest;
    const description = typeof manifest?.description === "string" ? manifest.description : undefined;
    return {
      tags: pkg.distTags,
      ...(readme !== undefined ? { readme } : {}),
      ...(description !== undefined ? { description } : {}),
      published: Object.fromEntries(versions.map((v) => [v.version, v.published])),
    };
  };
}
