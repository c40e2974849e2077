#!/usr/bin/env node
// Entry point of the `nonsense` command. The sources are TypeScript; tsx compiles them on load,
// so a checkout runs without a build step and can never run stale output.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli.ts');
