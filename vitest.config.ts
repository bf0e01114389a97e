import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    typecheck: { enabled: true, include: ['test/**/*.test-d.ts'], tsconfig: './tsconfig.json' },
    // isolated-vm needs --no-node-snapshot on Node 20; forks keep a crashed engine from taking the runner down.
    pool: 'forks',
    execArgv: ['--no-node-snapshot'],
    testTimeout: 30_000,
    // In CI a JSON report lets .ci/run print the plain "N passed, N failed" closing line.
    reporters: process.env.CI ? ['default', 'json'] : ['default'],
    outputFile: { json: '.tmp/vitest-results.json' },
  },
})
