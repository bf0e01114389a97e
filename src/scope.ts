/**
 * The scope tree: the deployment root, named child scopes (presets) and agents. Registrations,
 * restrictions, guards, presentation modes and listeners all hang off one node; an agent sees the
 * chain from the root down to its own node.
 */

/** What a scope node stands for. */
export type ScopeKind = 'root' | 'scope' | 'agent'

/** One node of the scope tree. Identity is the object; `path` is for messages only. */
export class ScopeNode {
  readonly kind: ScopeKind
  readonly name: string
  readonly parent: ScopeNode | undefined
  readonly depth: number
  /** Root first, this node last. */
  readonly chain: readonly ScopeNode[]

  constructor(kind: ScopeKind, name: string, parent: ScopeNode | undefined) {
    this.kind = kind
    this.name = name
    this.parent = parent
    this.depth = parent === undefined ? 0 : parent.depth + 1
    this.chain = Object.freeze(parent === undefined ? [this] : [...parent.chain, this])
  }

  /** True when `this` is `other` or one of its ancestors. */
  covers(other: ScopeNode): boolean {
    return other.chain[this.depth] === this
  }

  /** `root/preset/agent` style label for error messages. */
  get path(): string {
    return this.chain.map((node) => node.name).join('/')
  }
}
