/**
 * The files this package loads by URL at run time: the QuickJS worker entry (which loads the
 * WebAssembly engine from its own dependency) and the TypeScript worker entry. A bundler that
 * inlines the package leaves them behind, and a worker whose file is missing only reports that it
 * failed to start: this names the cause and the fix first.
 */

import { existsSync } from 'node:fs'
import { ToolError, ToolErrorCode } from '../src/errors.ts'

/**
 * `url` if its file exists (or it is not a file URL); otherwise throws a `CODE_RUN_FAILED`
 * `ToolError` that says to keep the package out of the bundle. `what` names the file within the
 * package (`dist/sandbox/quickjs/worker.js`): never a host path, since the message can reach a model.
 */
export function packageFile(url: URL, what: string): URL {
  if (url.protocol === 'file:' && !existsSync(url)) {
    throw new ToolError(
      ToolErrorCode.CODE_RUN_FAILED,
      `toolbox-codemode's ${what} is not beside the code that loads it: was the package bundled? Its worker threads and ` +
        'WebAssembly are loaded from the installed package at run time, so mark it external in the bundler ' +
        "(esbuild: --external:toolbox-codemode or packages: 'external'; Rollup/Vite: external or ssr.external; webpack: externals) " +
        'and install it beside the bundle.',
    )
  }
  return url
}
