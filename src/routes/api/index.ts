/**
 * The public JSON API, registered under `/api/v1`: entries, their change feed, share images, the
 * catalog of variables and emojis, exports, the galaxy and reports. Its routes are in the `api` class
 * (http/route-classes.ts), share images in their own.
 */
import type { FastifyPluginAsync } from 'fastify';
import { setRouteClass } from '../../http/route-classes.ts';
import catalogRoutes from './catalog.ts';
import eventsRoutes from './events.ts';
import exportRoutes from './export.ts';
import galaxyRoutes from './galaxy.ts';
import nonsenseRoutes from './nonsense.ts';
import reportRoutes from './report.ts';
import shareImageRoutes from './share-image.ts';

const apiRoutes: FastifyPluginAsync = async (api) => {
  setRouteClass(api, 'api');
  await api.register(nonsenseRoutes);
  await api.register(eventsRoutes);
  await api.register(async (images) => {
    setRouteClass(images, 'share-image');
    await images.register(shareImageRoutes);
  });
  await api.register(catalogRoutes);
  await api.register(exportRoutes);
  await api.register(galaxyRoutes);
  await api.register(reportRoutes);
};

export default apiRoutes;
