/**
 * The import rules of src/ (src/README.md, "Layers"), checked by `npm run lint`: each layer imports
 * only the layers below it; `domain/` imports nothing of the service; route folders do not import
 * each other; no cycles between files, and none between folders.
 */

/** The layers, top first. A module may import its own layer (without a folder cycle) and the ones below. */
const LAYERS = [
  { name: 'entry', paths: ['^src/types/', '^src/server\\.ts$', '^src/cli\\.ts$', '^src/app\\.ts$'] },
  { name: 'commands', paths: ['^src/backup/', '^src/import/', '^src/demo/'] },
  { name: 'http-surface', paths: ['^src/plugins/', '^src/routes/'] },
  { name: 'services', paths: ['^src/services/', '^src/formats/', '^src/web/', '^src/http/', '^src/schemas/'] },
  { name: 'storage', paths: ['^src/storage/'] },
  { name: 'db', paths: ['^src/db/'] },
  { name: 'base', paths: ['^src/metrics/', '^src/config\\.ts$'] },
  { name: 'domain', paths: ['^src/domain/', '^src/lib/', '^src/runtime/'] },
];

const either = (paths) => paths.map((path) => `(${path})`).join('|');
const ALL = either(LAYERS.flatMap((layer) => layer.paths));

/** One rule per layer: nothing in it imports a layer above it. */
const downwardOnly = LAYERS.slice(1).map((layer, index) => ({
  name: `layer-${layer.name}`,
  comment: `${layer.name} (${layer.paths.join(', ')}) imports only its own layer and the ones below (src/README.md, "Layers")`,
  severity: 'error',
  from: { path: either(layer.paths) },
  to: { path: either(LAYERS.slice(0, index + 1).flatMap((above) => above.paths)) },
}));

export default {
  forbidden: [
    ...downwardOnly,
    {
      name: 'layer-unknown',
      comment: 'every module of src/ belongs to a layer: add a new folder to LAYERS in .dependency-cruiser.mjs and to src/README.md',
      severity: 'error',
      from: { path: '^src/', pathNot: ALL },
      to: {},
    },
    {
      name: 'layer-unknown-import',
      comment: 'every module of src/ belongs to a layer: add a new folder to LAYERS in .dependency-cruiser.mjs and to src/README.md',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^src/', pathNot: ALL },
    },
    {
      name: 'domain-is-pure',
      comment: 'domain/ holds pure rules: it imports nothing of the service outside domain/',
      severity: 'error',
      from: { path: '^src/domain/' },
      to: { path: '^src/', pathNot: '^src/domain/' },
    },
    {
      name: 'formats-are-serialisers',
      comment: 'formats/ shapes data it is given: it imports neither services, the site, HTTP helpers nor schemas',
      severity: 'error',
      from: { path: '^src/formats/' },
      to: { path: '^src/(services|web|http|schemas)/' },
    },
    {
      name: 'plugins-below-routes',
      comment: 'plugins serve every route: they import no route',
      severity: 'error',
      from: { path: '^src/plugins/' },
      to: { path: '^src/routes/' },
    },
    {
      name: 'routes-apart',
      comment: 'a route folder imports no other route folder; shared pieces live a floor down',
      severity: 'error',
      from: { path: '^src/routes/([^/]+)/' },
      to: { path: '^src/routes/', pathNot: '^src/routes/$1/' },
    },
    {
      name: 'routes-apart-top',
      comment: 'a route file at the top of routes/ imports no route folder',
      severity: 'error',
      from: { path: '^src/routes/[^/]+\\.ts$' },
      to: { path: '^src/routes/[^/]+/' },
    },
    {
      name: 'no-file-cycles',
      comment: 'no module reaches itself through its imports',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'no-folder-cycles',
      comment: 'no folder reaches itself through the imports of its modules',
      severity: 'error',
      scope: 'folder',
      from: { path: '^src/' },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^src/web/static/' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
  },
};
