import { notFound } from "@svc/contracts";
import type { GroupMember } from "../../domain/repository-list.js";
import type { GroupHandler } from "../format.js";
import { mergeFileLinks } from "./pypi-proxy.js";
import type { PypiRegistry } from "./pypi-registry.js";
import { pypiHandler } from "./pypi-routes.js";
import type { ListedFile } from "./pypi-index.js";

export interface PypiGroupDeps {
  registry: PypiRegistry;
  /**
   * A member's files of a project (normalised name) as that member's own page lists them (held
   * files and hidden versions left out, each with its path under `packages/` of the member), or
   * undefined when it has none: the one place a group reads its members' project pages
   * (formats/pypi/index.ts: a hosted member's index rows, a proxy member's proxied page).
   */
  projectFiles: (member: GroupMember, project: string) => Promise<readonly ListedFile[] | undefined>;
  /** The projects a member's own `simple/` lists (normalised names). */
  projects: (member: GroupMember) => Promise<readonly string[] | undefined>;
}

const byteOrder = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The reads of a PyPI group repository (docs/integration/pypi.md, "Group repositories"): its
 * simple index is its members' merged (a project page lists every member's files of it, the
 * first member that lists a file name wins it: mergeFileLinks; the project list is every
 * member's), served as a hosted repository's pages are, with the same relative links, which
 * therefore point at the group's own `packages/`: the group's file reads serve each file from the
 * first member that has it.
 */
export function pypiGroupHandler(deps: PypiGroupDeps): GroupHandler {
  return (req, reply, a, group) => {
    const [first] = a.segments;
    if (first === undefined) {
      return Promise.reject(
        notFound(`this is a PyPI group repository: pip's index is /repository/${a.repository}/simple/ (its members' indexes merged); twine uploads through it go to its first hosted member`),
      );
    }
    // Files under packages/ (and anything else) are the group's file reads.
    if (first !== "simple") return undefined;
    const merged = {
      async projects(): Promise<string[]> {
        const lists = await group.each((m) => deps.projects(m));
        return [...new Set(lists.flatMap((l) => l ?? []))].sort(byteOrder);
      },
      async files(_repository: string, project: string): Promise<ListedFile[]> {
        const pages = await group.each((m) => deps.projectFiles(m, project));
        return mergeFileLinks(pages.map((p) => p ?? [])).sort((x, y) => byteOrder(x.filename, y.filename));
      },
    };
    // The hosted repository's index pages (redirects to the normalised name, HTML or PEP 691 JSON), over the merged store.
    return pypiHandler({ registry: deps.registry, store: merged })(req, reply, a);
  };
}
