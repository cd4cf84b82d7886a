export { type BuiltImage, buildImage, IMAGE_ENV, imageVersion, readManifest } from './build.ts';
export { APP_DIR, IMAGE_REGISTRY, IMAGE_USER, IMAGES, type ImageSpec, imageNamed } from './catalog.ts';
export {
  CONTAINERD_IMAGE_NAME,
  chooseManifest,
  containerdArchive,
  type ManifestChoice,
  OCI_REF_NAME,
  referenceTag,
} from './containerd-archive.ts';
export { type NodeImageArchives, type NodeImageOptions, nodeImageArchives } from './node-images.ts';
export { isLocalRegistry, pushImage, pushReference } from './push.ts';
export {
  ociArchitecture,
  type StaticBinaryImage,
  type StaticBinaryImageOptions,
  staticBinaryImage,
} from './static-binary-image.ts';
export { BUILD_PACKAGES, BUILD_TOOLS, MissingToolsError, missingTools, requireTools } from './tools.ts';
