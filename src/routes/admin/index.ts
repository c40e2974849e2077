/**
 * The admin API, registered under `/api/v1/admin`: every route needs a bearer token (plugins/admin-auth.ts),
 * and its routes are in the `admin` class (http/route-classes.ts: no per-address rate limit).
 */
import type { FastifyPluginAsync } from 'fastify';
import { setRouteClass } from '../../http/route-classes.ts';
import { adminAuth } from '../../plugins/admin-auth.ts';
import adminCatalogRoutes from './catalog.ts';
import adminEntryRoutes from './entries.ts';
import moderationRoutes from './moderation.ts';
import adminSearchRoutes from './search.ts';

const adminRoutes: FastifyPluginAsync = async (admin) => {
  setRouteClass(admin, 'admin');
  adminAuth(admin);
  await admin.register(adminEntryRoutes);
  await admin.register(adminCatalogRoutes);
  await admin.register(moderationRoutes);
  await admin.register(adminSearchRoutes);
};

export default adminRoutes;
