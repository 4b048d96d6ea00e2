/**
 * The formats a repository may be created with. `raw`, `npm` and `maven` have their own
 * protocol; `pypi` is accepted and served as raw files until its protocol lands.
 */
export const REPOSITORY_FORMATS = ["raw", "npm", "maven", "pypi"] as const;
export type RepositoryFormat = (typeof REPOSITORY_FORMATS)[number];

export const isRepositoryFormat = (v: string): v is RepositoryFormat => (REPOSITORY_FORMATS as readonly string[]).includes(v);
