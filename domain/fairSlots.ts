/**
 * A fixed number of slots shared by tenants, fairly: one tenant holds at most `perTenant` of them,
 * and a freed slot goes to the waiting tenant that holds the fewest (the earliest caller among
 * equals). So a tenant with a long queue never holds every slot, and another tenant's call waits at
 * most until the first running call ends.
 */
export class FairSlots {
  private total = 0;
  private readonly held = new Map<string, number>();
  private readonly waiting: { tenant: string; grant: () => void }[] = [];

  constructor(
    private readonly slots: number,
    private readonly perTenant: number,
  ) {
    if (perTenant < 1 || perTenant > slots) throw new RangeError('perTenant must be between 1 and slots');
  }

  /** Waits for a slot for `tenant`; the answer gives it back (once). */
  async acquire(tenant: string): Promise<() => void> {
    await new Promise<void>((grant) => {
      this.waiting.push({ tenant, grant });
      this.grantFreeSlots();
    });
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total--;
      const left = (this.held.get(tenant) ?? 1) - 1;
      if (left === 0) this.held.delete(tenant);
      else this.held.set(tenant, left);
      this.grantFreeSlots();
    };
  }

  private grantFreeSlots(): void {
    while (this.total < this.slots) {
      let next = -1;
      for (const [index, waiter] of this.waiting.entries()) {
        const held = this.held.get(waiter.tenant) ?? 0;
        if (held >= this.perTenant) continue;
        if (next === -1 || held < (this.held.get(this.waiting[next]!.tenant) ?? 0)) next = index;
      }
      if (next === -1) return;
      const [waiter] = this.waiting.splice(next, 1);
      this.total++;
      this.held.set(waiter!.tenant, (this.held.get(waiter!.tenant) ?? 0) + 1);
      waiter!.grant();
    }
  }
}
