export { type BuiltImage, buildImage, IMAGE_ENV, imageVersion, readManifest } from './build.ts';
export { APP_DIR, IMAGE_REGISTRY, IMAGE_USER, IMAGES, type ImageSpec, imageNamed } from './catalog.ts';
export { isLocalRegistry, pushImage, pushReference } from './push.ts';
export { BUILD_PACKAGES, BUILD_TOOLS, MissingToolsError, missingTools, requireTools } from './tools.ts';
