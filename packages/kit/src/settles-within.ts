/**
 * Whether `work` settles within `ms` (true once it has, false when the time runs out first or it
 * rejects). The timer is cleared either way. For a bounded graceful step: let the work finish,
 * then cut what is left (internal-client.ts close(), messaging.ts close()).
 */
export async function settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([work.then(() => true, () => false), new Promise<false>((r) => (timer = setTimeout(() => r(false), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
