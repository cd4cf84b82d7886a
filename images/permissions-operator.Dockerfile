# permissions-operator: the image `npm run images` builds without a daemon, for Docker or Buildah.
# From the repository's root: docker build -f images/permissions-operator.Dockerfile .
# packages/images/test/dockerfile-parity.test.ts checks it against the recipe (packages/images/src).

# The pinned Node (devDependencies.node) and every workspace's production dependencies,
# installed from the manifests alone, as the recipe's dependencies layer.
FROM docker.io/library/node:24.21.0-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json /app/
COPY operators/exoledge/package.json /app/operators/exoledge/package.json
COPY operators/gitops-reverser/package.json /app/operators/gitops-reverser/package.json
COPY operators/permissions/package.json /app/operators/permissions/package.json
COPY operators/terdut/package.json /app/operators/terdut/package.json
COPY operators/weebo-link/package.json /app/operators/weebo-link/package.json
COPY packages/cel/package.json /app/packages/cel/package.json
COPY packages/controlplane/package.json /app/packages/controlplane/package.json
COPY packages/images/package.json /app/packages/images/package.json
COPY packages/kit/package.json /app/packages/kit/package.json
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

# Distroless cc: glibc, libgcc and libstdc++ (what node links against) and the nonroot
# user 65532, as the recipe's base; Debian 12 like the stage above.
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=deps /usr/local/bin/node /usr/local/bin/node
COPY --from=deps /app /app
# The workspaces' sources at their own paths: type stripping refuses files under node_modules.
COPY operators/permissions/src /app/operators/permissions/src
COPY packages/kit/src /app/packages/kit/src
USER 65532:65532
WORKDIR /app
ENV PATH=/usr/local/bin:/usr/bin:/bin \
    NODE_ENV=production
LABEL org.opencontainers.image.title="permissions-operator" \
      org.opencontainers.image.description="permissions operator: roles, bindings, an OPA bundle and webhooks" \
      org.opencontainers.image.licenses="Apache-2.0"
ENTRYPOINT ["/usr/local/bin/node", "/app/operators/permissions/src/main.ts"]
