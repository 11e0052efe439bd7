// Lease revocations still on their way; signing out waits for them, so a
// tile's DELETE never races the end of its session.
const pending = new Set<Promise<unknown>>()

export function track<T>(p: Promise<T>): Promise<T> {
  pending.add(p)
  void p.finally(() => pending.delete(p))
  return p
}

export async function settleLeases(): Promise<void> {
  await Promise.allSettled([...pending])
}
