/**
 * Comment and whitespace removal for the engines' own guest scripts (the prelude), so each fresh
 * context compiles less text. QuickJS compiles about 11 KB of source per millisecond in WASM, and
 * a QuickJS worker compiles the prelude once per run (every run gets a fresh context); the
 * commented source takes a sixth longer to compile than the compact one.
 *
 * Every token is kept, in order, and so is every line break between tokens (line numbers do not
 * move, and automatic semicolon insertion sees the same lines); only comments, indentation and
 * spaces go, except where two tokens would run together. The result is scanned again and must
 * give the same tokens and line breaks, or the source is returned unchanged.
 *
 * The scanner here knows no context, so it cannot tell a regular expression literal from a
 * division, and the check cannot either (both scans would agree on the wrong tokens): a source with
 * a slash anywhere a regular expression could start is returned unchanged, and so is one whose
 * compact form would hold `<!--` or `-->`, which a script reads as a comment. Meant for the
 * engines' own scripts, not for programs.
 */

import ts from 'typescript'

interface Token {
  readonly kind: ts.SyntaxKind
  readonly text: string
  /** Line breaks between this token and the one before. */
  readonly linesBefore: number
}

export function compactScript(source: string): string {
  const tokens = scan(source)
  if (tokens === undefined || tokens.some((token, i) => isSlash(token) && !endsOperand(tokens[i - 1]))) return source
  let out = ''
  let previous: Token | undefined
  for (const token of tokens) {
    if (token.linesBefore > 0) out += '\n'.repeat(token.linesBefore)
    else if (previous !== undefined && runTogether(previous.text, token.text)) out += ' '
    out += token.text
    previous = token
  }
  if (out.includes('<!--') || out.includes('-->')) return source
  return sameTokens(tokens, scan(out)) ? out : source
}

function isSlash(token: Token): boolean {
  return token.kind === ts.SyntaxKind.SlashToken || token.kind === ts.SyntaxKind.SlashEqualsToken
}

/** Tokens after which a slash can only be a division (after `}`, `++` or a keyword it may start a regular expression). */
function endsOperand(token: Token | undefined): boolean {
  if (token === undefined) return false
  switch (token.kind) {
    case ts.SyntaxKind.Identifier:
    case ts.SyntaxKind.NumericLiteral:
    case ts.SyntaxKind.BigIntLiteral:
    case ts.SyntaxKind.StringLiteral:
    case ts.SyntaxKind.CloseParenToken:
    case ts.SyntaxKind.CloseBracketToken:
    case ts.SyntaxKind.ThisKeyword:
    case ts.SyntaxKind.SuperKeyword:
    case ts.SyntaxKind.NullKeyword:
    case ts.SyntaxKind.TrueKeyword:
    case ts.SyntaxKind.FalseKeyword:
      return true
    default:
      return false
  }
}

/** The tokens of `text`, or undefined if it holds something this scanner does not handle. */
function scan(text: string): Token[] | undefined {
  const scanner = ts.createScanner(ts.ScriptTarget.ES2020, false, ts.LanguageVariant.Standard, text)
  const tokens: Token[] = []
  let linesBefore = 0
  for (let kind = scanner.scan(); kind !== ts.SyntaxKind.EndOfFileToken; kind = scanner.scan()) {
    switch (kind) {
      case ts.SyntaxKind.NewLineTrivia:
        linesBefore += 1
        continue
      case ts.SyntaxKind.WhitespaceTrivia:
      case ts.SyntaxKind.ShebangTrivia:
      case ts.SyntaxKind.SingleLineCommentTrivia:
        continue
      case ts.SyntaxKind.MultiLineCommentTrivia:
        // A block comment's own line breaks are kept as line breaks.
        linesBefore += scanner.getTokenText().split(/\r\n|[\n\r\u2028\u2029]/).length - 1
        continue
      case ts.SyntaxKind.Unknown:
      case ts.SyntaxKind.NoSubstitutionTemplateLiteral:
      case ts.SyntaxKind.TemplateHead:
        return undefined
    }
    tokens.push({ kind, text: scanner.getTokenText(), linesBefore })
    linesBefore = 0
  }
  return tokens
}

const WORD_END = /[\w$\\]$/
const WORD_START = /^[\w$\\]/

/** Whether `a` directly followed by `b` could scan as something else. */
function runTogether(a: string, b: string): boolean {
  if (WORD_END.test(a) && WORD_START.test(b)) return true
  // `a - -b`, `a + +b`, `a / /…`, `x. 5`: punctuation that would merge (the re-scan checks the
  // rest). Not `>`: this scanner returns `>>` and `>=` as single `>` tokens, which must stay joined.
  const last = a.at(-1) as string
  const first = b[0] as string
  return (last === first && '+-/&|.'.includes(last)) || (last === '/' && first === '*') || (last === '.' && /\d/.test(first))
}

function sameTokens(a: readonly Token[], b: readonly Token[] | undefined): boolean {
  if (b === undefined || a.length !== b.length) return false
  return a.every((token, i) => token.kind === b[i]?.kind && token.text === b[i]?.text && token.linesBefore === b[i]?.linesBefore)
}
