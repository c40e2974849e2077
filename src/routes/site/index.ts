/**
 * The web site, served by the same process as the API: reading, searching, sharing and reporting
 * (`/`, `/search`, `/galaxy`, `/nonsense/<uuid>/report`), moderating (`/admin`) and the static files they use.
 * The share page (`/nonsense/<uuid>`) is registered on its own: it predates the site.
 */
import type { FastifyPluginAsync } from 'fastify';
import { setRouteClass } from '../../http/route-classes.ts';
import adminPageRoutes from './admin-page.ts';
import galaxyPageRoutes from './galaxy.ts';
import homeRoutes from './home.ts';
import reportPageRoutes from './report-page.ts';
import searchRoutes from './search.ts';
import staticRoutes from './static.ts';

const siteRoutes: FastifyPluginAsync = async (app) => {
  setRouteClass(app, 'site');
  await app.register(async (files) => {
    setRouteClass(files, 'static');
    await files.register(staticRoutes);
  });
  await app.register(homeRoutes);
  await app.register(searchRoutes);
  await app.register(galaxyPageRoutes);
  await app.register(reportPageRoutes);
  await app.register(adminPageRoutes);
};

export default siteRoutes;
