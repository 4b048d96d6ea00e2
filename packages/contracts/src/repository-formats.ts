/**
 * The formats a repository may be created with. `raw` and `npm` have their own protocol;
 * `maven` and `pypi` are accepted and served as raw files until their protocols land.
 */
export const REPOSITORY_FORMATS = ["raw", "npm", "maven", "pypi"] as const;
export type RepositoryFormat = (typeof REPOSITORY_FORMATS)[number];

export const isRepositoryFormat = (v: string): v is RepositoryFormat => (REPOSITORY_FORMATS as readonly string[]).includes(v);
