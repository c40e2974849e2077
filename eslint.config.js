// Lint: typescript-eslint's recommended rules, plus the type-aware rules that catch what the type
// checker does not: promises nobody awaits or handles, promises passed where a callback's result is
// ignored, awaiting what is no promise, assertions that change nothing, and type-only imports written
// as value imports.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', '.dist-*/', 'node_modules/', 'coverage/', 'test/odata/consumer-browser.js', 'docs/', 'eslint.config.js'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      // The text rules, the search term and the CSV guard match control characters on purpose.
      'no-control-regex': 'off',
      // Unused names starting with _ are deliberate (a destructured value left out).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }],
    },
  },
  {
    files: ['**/*.js'],
    ignores: ['src/web/static/**'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly', performance: 'readonly' } },
  },
  // The site's browser scripts: ES modules in the page, with the browser's globals (their types are
  // checked by src/web/static/tsconfig.json); nothing of Node.
  {
    files: ['src/web/static/**/*.js'],
    languageOptions: {
      sourceType: 'module',
      parserOptions: { project: './src/web/static/tsconfig.json', tsconfigRootDir: import.meta.dirname },
      globals: Object.fromEntries(
        [
          'window', 'document', 'location', 'navigator', 'sessionStorage', 'fetch', 'Response', 'URL', 'URLSearchParams', 'FormData', 'Blob',
          'EventSource', 'ResizeObserver', 'requestAnimationFrame', 'getComputedStyle', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval',
          'Intl', 'CSS', 'Node', 'Text', 'Element', 'HTMLElement', 'HTMLAnchorElement', 'HTMLButtonElement', 'HTMLCanvasElement', 'HTMLDialogElement',
          'HTMLFormElement', 'HTMLImageElement', 'HTMLInputElement', 'HTMLSelectElement', 'HTMLTextAreaElement', 'HTMLTimeElement',
        ].map((name) => [name, 'readonly']),
      ),
    },
    rules: {
      // As for the TypeScript: a promise nobody awaits or hands on is marked with `void`.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      eqeqeq: 'error',
      'no-implicit-globals': 'error',
    },
  },
);
