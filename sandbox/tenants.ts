/**
 * A number for each tenant object (`EngineRunRequest.tenant`), which an engine compares to tell
 * whether a heap or isolate last served the same tenant: 0 for the anonymous tenant, 1, 2, ... for
 * the others in order of first sight. Tenants are held weakly.
 */
export class TenantNumbers {
  readonly #numbers = new WeakMap<object, number>()
  #last = 0

  of(tenant: object | undefined): number {
    if (tenant === undefined) return 0
    let number = this.#numbers.get(tenant)
    if (number === undefined) this.#numbers.set(tenant, (number = ++this.#last))
    return number
  }
}
