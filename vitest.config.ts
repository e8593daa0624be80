import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'test/**/*.test.tsx'],
    testTimeout: 120_000,
    hookTimeout: 180_000,
    // Model tests start onnxruntime sessions; two cores, so keep files few at once.
    maxWorkers: 2,
    globalSetup: ['test/global-setup.ts'],
  },
});
