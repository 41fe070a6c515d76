export * from './facts.ts';
export * from './files-binding.ts';
export * from './http/files-routes.ts';
export * from './http/skill-routes.ts';
export * from './jail.ts';
export * from './paths.ts';
export * from './skill-runner.ts';
export * from './workspace-store.ts';
