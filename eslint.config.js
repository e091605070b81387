import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'rest-facade/generated/', 'data/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-control-regex': 'off',
    },
  },
  {
    // An ES import of node:http loads Node's fetch client into the service (src/http/node-http.ts says why).
    files: ['src/**/*.ts', 'rest-facade/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        ...['node:http', 'http'].map((name) => ({
          name,
          allowTypeImports: true,
          message: "import { http } from 'src/http/node-http.ts' (types: `import type`): an ES import of it loads undici.",
        })),
      ],
    },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly' } },
  },
  {
    files: ['test/support/*.js'],
    languageOptions: { globals: { globalThis: 'readonly', process: 'readonly' } },
  },
);
