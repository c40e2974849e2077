/**
 * The version of the layout algorithm and of the stored model's format. A stored layout made by
 * another version is laid out anew. Its own module, so that the server can check a stored layout
 * without loading the layout code (umap-js) on its request thread.
 */
export const MODEL_VERSION = 2;
