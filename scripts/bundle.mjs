// The last step of `npm run build`: each entry point of the package (package.json `exports` and
// `bin`) becomes one bundled file with esbuild, in place of tsc's module of the same name, with the
// code they share split into chunks (dist/chunks/) so every subpath still has ONE copy of each
// class (`instanceof ToolError` holds across `toolbox-codemode` and `toolbox-codemode/sandbox`).
// Why: a fresh process spent about half of importing `toolbox-codemode/sandbox` finding, reading
// and linking some fifty modules; a handful of files load in about half the time. The QuickJS
// worker entry is bundled too: every worker thread loads it at start.
//
// tsc's output stays as it is beside the bundles: the declarations, and the modules that run in
// threads and processes of their own, loaded by URL (the TypeScript worker, the isolated-vm child
// process), which import tsc's modules. Dependencies stay external (`packages: 'external'`).
//
// Bundled code keeps the `import.meta.url` of its own module in tsc's layout: every
// `new URL('./x.js', import.meta.url)` (worker entries, the child process, createRequire) points
// where it did before. That needs every bundled file but the worker at the same depth below the
// output directory (dist/<dir>/<file>.js), which this script checks.
import { readFileSync } from 'node:fs'
import { join, posix, relative, resolve } from 'node:path'

const root = resolve(import.meta.dirname, '..')
const out = resolve(root, process.argv[2] ?? 'dist')
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))

/** `./dist/sandbox/index.js` -> `sandbox/index` (the source is `sandbox/index.ts`). */
const entryName = (target) => posix.normalize(target).replace(/^dist\//, '').replace(/\.js$/, '')
const entries = [...Object.values(manifest.exports).map((target) => target.default), ...Object.values(manifest.bin)].map(entryName)

/**
 * Replaces `import.meta.url` in each of the package's own modules with the URL its file has in
 * tsc's layout, computed from where the bundled file lands (`up`: the way from that file's
 * directory to the output directory).
 */
function ownModuleUrls(up) {
  return {
    name: 'own-module-urls',
    setup(esbuild) {
      esbuild.onLoad({ filter: /\.[jt]s$/ }, (args) => {
        if (/[\\/]node_modules[\\/]/.test(args.path)) return undefined
        const source = readFileSync(args.path, 'utf8')
        if (!source.includes('import.meta.url')) return undefined
        const emitted = relative(root, args.path).split('\\').join('/').replace(/\.ts$/, '.js')
        return {
          contents: source.replaceAll('import.meta.url', `new URL(${JSON.stringify(up + emitted)}, import.meta.url).href`),
          loader: args.path.endsWith('.ts') ? 'ts' : 'js',
        }
      })
    },
  }
}

// esbuild's binary is an optional dependency of esbuild: `npm ci --omit=optional` leaves it out.
// Then dist/ keeps tsc's modules, which work the same and load slower.
let build
try {
  ;({ build } = await import('esbuild'))
  await build({ stdin: { contents: '' }, write: false, logLevel: 'silent' })
} catch (error) {
  process.stdout.write(`bundle: skipped, esbuild cannot run here (${String(error?.message ?? error).split('\n')[0]}); dist/ keeps tsc's modules\n`)
  process.exit(0)
}

const common = {
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  sourcemap: true,
  // Not minified: stack traces and the code a user steps through read like the sources.
  minify: false,
  legalComments: 'none',
  logLevel: 'warning',
  metafile: true,
}

const main = await build({
  ...common,
  entryPoints: Object.fromEntries(entries.map((name) => [name, join(root, `${name}.ts`)])),
  outdir: out,
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  plugins: [ownModuleUrls('../')],
})
for (const file of Object.keys(main.metafile.outputs)) {
  const depth = relative(out, resolve(root, file)).split(/[\\/]/).length - 1
  if (depth !== 1) throw new Error(`bundle: ${file} is not one directory below ${out}; its modules' import.meta.url would be wrong`)
}

// The QuickJS worker entry, with the modules it shares with nothing else in its thread.
const worker = 'sandbox/quickjs/worker.js'
await build({
  ...common,
  entryPoints: [join(root, worker)],
  outfile: join(out, worker),
  allowOverwrite: true,
  plugins: [ownModuleUrls(posix.relative(posix.dirname(worker), '.') + '/')],
})

const count = Object.keys(main.metafile.inputs).length
process.stdout.write(`bundle: ${entries.length} entry points from ${count} modules into ${relative(root, out) || '.'} (chunks: ${relative(root, join(out, 'chunks'))}), and ${worker}\n`)
